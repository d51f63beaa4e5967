// One double-quoted, backslash-escaped form of a string, valid in JSON and as a TOML basic string.

extension String {
    /// The text in double quotes with `"`, `\` and control characters (DEL included) escaped as
    /// `\"`, `\\`, `\n`, `\r`, `\t` or `\uXXXX`: the same escapes JSON and TOML read.
    var doubleQuoted: String {
        var out = "\""
        for scalar in unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

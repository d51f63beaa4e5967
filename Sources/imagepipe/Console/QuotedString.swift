// One double-quoted, backslash-escaped form of a string, valid in JSON and as a TOML basic string.

extension String {
    /// The text in double quotes with `"`, `\` and control characters (DEL and the C1 controls included: a terminal obeys those too) escaped as
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
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value):
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

// TOML's numbers read strictly: what the specification allows, and nothing more that Swift's own number parsers would take (".5", "01", "1e").

extension ConfigurationParser {
    /// What a bare word is as a number.
    enum NumberReading: Equatable {
        case integer(Int)
        case float(Double)
        /// An integer TOML allows in form but past 64 bits, which TOML forbids.
        case tooLarge
        /// Not a number.
        case invalid
    }

    /// Reads `word` as a TOML integer (decimal, or `0x`, `0o`, `0b`) or float (with a fraction, an
    /// exponent or both); `inf` and `nan` are the caller's. Underscores may only stand between digits.
    static func number(_ word: String) -> NumberReading {
        let bytes = Array(word.utf8)
        if bytes.count > 2, bytes[0] == UInt8(ascii: "0") {
            let radixes: [UInt8: Int] = [UInt8(ascii: "x"): 16, UInt8(ascii: "o"): 8, UInt8(ascii: "b"): 2]
            if let radix = radixes[bytes[1]] {
                var index = 2
                guard let digits = digitRun(bytes, &index, radix: radix), index == bytes.count else { return .invalid }
                return Int(digits, radix: radix).map(NumberReading.integer) ?? .tooLarge
            }
        }
        var index = 0
        var text = ""
        if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            text.append(Character(Unicode.Scalar(bytes[index])))
            index += 1
        }
        // No leading zeros in the whole part: `01` is no TOML number.
        guard let whole = digitRun(bytes, &index, radix: 10), whole == "0" || !whole.hasPrefix("0") else { return .invalid }
        text += whole
        var isFloat = false
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard let fraction = digitRun(bytes, &index, radix: 10) else { return .invalid }
            text += "." + fraction
            isFloat = true
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            text += "e"
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                text.append(Character(Unicode.Scalar(bytes[index])))
                index += 1
            }
            guard let exponent = digitRun(bytes, &index, radix: 10) else { return .invalid }
            text += exponent
            isFloat = true
        }
        guard index == bytes.count else { return .invalid }
        if isFloat { return Double(text).map(NumberReading.float) ?? .invalid }
        return Int(text).map(NumberReading.integer) ?? .tooLarge
    }

    /// Digits of `radix` from `index`, each underscore between two of them dropped; nil when there is
    /// no digit, or an underscore does not stand between two.
    private static func digitRun(_ bytes: [UInt8], _ index: inout Int, radix: Int) -> String? {
        var digits = ""
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "_") {
                guard !digits.isEmpty, index + 1 < bytes.count, isDigit(bytes[index + 1], radix: radix) else { return nil }
                index += 1
                continue
            }
            guard isDigit(byte, radix: radix) else { break }
            digits.append(Character(Unicode.Scalar(byte)))
            index += 1
        }
        return digits.isEmpty ? nil : digits
    }

    private static func isDigit(_ byte: UInt8, radix: Int) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0")) < radix
        case UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): radix == 16
        default: false
        }
    }
}

// Text made safe inside XML and HTML, shared by the S3 request bodies and the HTML imagepipe writes.

extension String {
    /// The text with `& < > " '` as character references, safe between tags and in quoted attributes
    /// of both XML and HTML (`&#39;` rather than `&apos;`, which HTML 4 lacks).
    public var markupEscaped: String {
        var out = ""
        for character in self {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}

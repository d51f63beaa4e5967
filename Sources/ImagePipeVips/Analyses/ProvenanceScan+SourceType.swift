// The IPTC digital source type an original's XMP declares: a namespace-aware scan, bounded in its work.
package import Foundation
import ImagePipe

extension ProvenanceScan {

    /// The namespace of the IPTC Extension schema, whose `DigitalSourceType` says how a picture was made.
    private static let iptcExtensionNamespace = Array("http://iptc.org/std/Iptc4xmpExt/2008-02-29/".utf8)
    /// RDF's namespace, for a value given as `rdf:resource` (RDF's way of writing a URI value).
    private static let rdfNamespace = Array("http://www.w3.org/1999/02/22-rdf-syntax-ns#".utf8)
    /// The property's local name.
    private static let digitalSourceTypeName = Array("DigitalSourceType".utf8)
    /// The longest value returned: the IPTC codes are under 80 bytes; anything much longer is not one.
    private static let maxValueLength = 200
    /// How deeply elements may nest before the packet is given up on. XMP is shallow (about six
    /// levels in practice); the bound keeps the stack of namespace scopes small.
    private static let maxDepth = 64
    /// The most of a packet read: the label sits near the top of what writers make, and a PNG's,
    /// WebP's or HEIF's XMP has no size limit of its own.
    private static let maxScannedBytes = 1 << 20
    /// The most namespace declarations in scope at once, and attributes on one tag: each attribute
    /// named `DigitalSourceType` is resolved against the declarations in scope, so both bound the
    /// work a packet built of thousands of each could ask for (a lookup each, not one per pair).
    private static let maxBindingsInScope = 256
    private static let maxAttributes = 1024

    /// The IPTC digital source type (the value of Iptc4xmpExt:DigitalSourceType, e.g.
    /// "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia") in an XMP packet,
    /// nil if none.
    ///
    /// The packet is read as XML with its namespaces resolved, so any prefix bound to the IPTC
    /// Extension namespace counts, and a `DigitalSourceType` under another namespace does not. The
    /// property may be an attribute of an `rdf:Description`, an element with text, or an element
    /// with `rdf:resource`. The first occurrence decides: it is returned only when it is at most 200
    /// bytes and shaped like a URI (`scheme://…`, printable ASCII without spaces, quotes or angle
    /// brackets); otherwise, as for a packet that is not well-formed enough to read, nil.
    package static func digitalSourceType(xmp: Data) -> String? {
        var scanner = XMPScanner(bytes: [UInt8](xmp.prefix(maxScannedBytes)))
        guard let raw = scanner.digitalSourceType() else { return nil }
        return uriShaped(raw)
    }

    /// The value as a string when, without the XML whitespace around it, it looks like a URI a
    /// label can name: a scheme, "://", and a rest of printable ASCII without spaces, quotes or
    /// angle brackets, at most ``maxValueLength`` bytes in all.
    private static func uriShaped(_ raw: [UInt8]) -> String? {
        guard let first = raw.firstIndex(where: { !isXMLSpace($0) }), let last = raw.lastIndex(where: { !isXMLSpace($0) }) else {
            return nil
        }
        let value = raw[first...last]
        guard value.count <= maxValueLength, value.allSatisfy({ (0x21...0x7E).contains($0) && !refusedInValue.contains($0) }) else {
            return nil
        }
        // RFC 3986: a scheme is a letter, then letters, digits, "+", "-" or ".".
        guard let colon = value.firstIndex(of: UInt8(ascii: ":")), colon > value.startIndex else { return nil }
        let scheme = value[..<colon]
        guard let initial = scheme.first, isLetter(initial),
            scheme.allSatisfy({ isLetter($0) || (0x30...0x39).contains($0) || schemeMarks.contains($0) })
        else { return nil }
        let rest = value[colon...]
        guard rest.starts(with: "://".utf8), rest.count > 3 else { return nil }
        // And what the worker takes (``ImageFacts/isSourceType(_:)``): one rule on both sides, so a
        // label the worker would refuse is left out here, not sent to fail the image.
        let text = String(decoding: value, as: UTF8.self)
        return ImageFacts.isSourceType(text) ? text : nil
    }

    /// Printable characters a value may not hold: quotes and angle brackets, which would let it
    /// break out of wherever it is later written (an attribute, a header, a tag).
    private static let refusedInValue = Array("\"'<>".utf8)
    /// The punctuation a URI scheme may hold after its first letter.
    private static let schemeMarks = Array("+-.".utf8)

    /// Whether `byte` is an ASCII letter.
    private static func isLetter(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    /// Whether `byte` is XML whitespace (space, tab, line feed, carriage return).
    private static func isXMLSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// A forward-only reader of an XMP packet's XML, just enough of it to find one property:
    /// tags, attributes, namespace declarations in scope, text and CDATA. Comments, processing
    /// instructions (the `<?xpacket?>` wrapper) and declarations are skipped; entities other than
    /// XML's five and character references are refused, so no entity is ever expanded. It never
    /// recurses: the open elements are a stack, bounded by ``maxDepth``.
    private struct XMPScanner {
        /// One namespace declaration: `xmlns:prefix="uri"` (an empty prefix for `xmlns="uri"`).
        struct Binding {
            var prefix: ArraySlice<UInt8>
            var uri: [UInt8]
        }

        /// One attribute of a start tag: its qualified name and its decoded value.
        struct Attribute {
            var name: ArraySlice<UInt8>
            var value: [UInt8]
        }

        /// The bytes that end a name besides whitespace.
        static let nameEnds = Array("=/>".utf8)

        /// The packet.
        let bytes: [UInt8]
        /// Where reading has got to.
        var at = 0
        /// The namespace declarations of each open element, outermost first.
        var scopes: [[Binding]] = [] {
            didSet { bindingsInScope = scopes.reduce(0) { $0 + $1.count } }
        }
        /// How many declarations ``scopes`` holds.
        private(set) var bindingsInScope = 0

        /// Creates a scanner at the start of `bytes`.
        init(bytes: [UInt8]) { self.bytes = bytes }

        /// The raw value of the first `DigitalSourceType` property in the IPTC Extension namespace,
        /// with entities decoded; nil when there is none or the XML cannot be read as far as it.
        mutating func digitalSourceType() -> [UInt8]? {
            while let open = find(Array("<".utf8), from: at) {
                at = open
                if starts("<?") {
                    guard skip(past: "?>") else { return nil }
                } else if starts("<!--") {
                    guard skip(past: "-->") else { return nil }
                } else if starts("<![CDATA[") {
                    guard skip(past: "]]>") else { return nil }
                } else if starts("<!") {
                    // A DOCTYPE or other declaration: XMP has none; skipped, never interpreted.
                    guard skip(past: ">") else { return nil }
                } else if starts("</") {
                    guard skip(past: ">") else { return nil }
                    _ = scopes.popLast()
                } else {
                    guard let tag = startTag() else { return nil }
                    if let value = attributeValue(in: tag.attributes, named: digitalSourceTypeName, namespace: iptcExtensionNamespace) {
                        return value
                    }
                    if isProperty(tag.name) {
                        if let resource = attributeValue(in: tag.attributes, named: Array("resource".utf8), namespace: rdfNamespace) {
                            return resource
                        }
                        return tag.selfClosing ? nil : textUntilEndTag()
                    }
                    if tag.selfClosing { _ = scopes.popLast() }
                }
            }
            return nil
        }

        /// Reads the start tag at `at` (just after its "<"), pushes the namespace scope it opens,
        /// and returns its name and attributes; nil when it is malformed or nests too deeply.
        mutating func startTag() -> (name: ArraySlice<UInt8>, attributes: [Attribute], selfClosing: Bool)? {
            at += 1
            let name = nameToken()
            guard !name.isEmpty else { return nil }
            var attributes: [Attribute] = []
            var bindings: [Binding] = []
            while true {
                skipSpace()
                guard at < bytes.count else { return nil }
                if bytes[at] == UInt8(ascii: ">") {
                    at += 1
                    break
                }
                if starts("/>") {
                    at += 2
                    return finish(name, attributes, bindings, selfClosing: true)
                }
                let attributeName = nameToken()
                guard !attributeName.isEmpty else { return nil }
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "=") else { return nil }
                at += 1
                skipSpace()
                guard let value = quotedValue() else { return nil }
                guard attributes.count + bindings.count < maxAttributes else { return nil }
                if attributeName.elementsEqual("xmlns".utf8) {
                    bindings.append(Binding(prefix: [], uri: value))
                } else if attributeName.starts(with: "xmlns:".utf8) {
                    bindings.append(Binding(prefix: attributeName.dropFirst(6), uri: value))
                } else {
                    attributes.append(Attribute(name: attributeName, value: value))
                }
            }
            return finish(name, attributes, bindings, selfClosing: false)
        }

        /// Pushes a start tag's scope (a self-closing one is popped again by the caller, after its
        /// own attributes have been resolved in it) and returns the tag; nil when it nests too deeply.
        mutating func finish(
            _ name: ArraySlice<UInt8>, _ attributes: [Attribute], _ bindings: [Binding], selfClosing: Bool
        ) -> (name: ArraySlice<UInt8>, attributes: [Attribute], selfClosing: Bool)? {
            guard scopes.count < maxDepth, bindingsInScope + bindings.count <= maxBindingsInScope else { return nil }
            scopes.append(bindings)
            return (name, attributes, selfClosing)
        }

        /// Whether an element's qualified name is the IPTC Extension's `DigitalSourceType`.
        func isProperty(_ name: ArraySlice<UInt8>) -> Bool {
            let (prefix, local) = split(name)
            // An element without a prefix takes the default namespace, when one is declared.
            return local.elementsEqual(digitalSourceTypeName) && namespace(of: prefix ?? []).map { $0 == iptcExtensionNamespace } == true
        }

        /// The value of the attribute whose local name is `local` and whose prefix is bound to
        /// `namespace` (attributes without a prefix are in no namespace, as XML says).
        func attributeValue(in attributes: [Attribute], named local: [UInt8], namespace uri: [UInt8]) -> [UInt8]? {
            for attribute in attributes {
                let (prefix, name) = split(attribute.name)
                if let prefix, name.elementsEqual(local), namespace(of: prefix) == uri { return attribute.value }
            }
            return nil
        }

        /// The namespace `prefix` is bound to in the innermost scope that declares it.
        func namespace(of prefix: ArraySlice<UInt8>) -> [UInt8]? {
            for scope in scopes.reversed() {
                if let binding = scope.last(where: { $0.prefix.elementsEqual(prefix) }) { return binding.uri }
            }
            return nil
        }

        /// A qualified name's prefix (nil when it has none) and local part.
        func split(_ name: ArraySlice<UInt8>) -> (prefix: ArraySlice<UInt8>?, local: ArraySlice<UInt8>) {
            guard let colon = name.firstIndex(of: UInt8(ascii: ":")) else { return (nil, name) }
            return (name[..<colon], name[(colon + 1)...])
        }

        /// The text of the element just opened, up to its end tag, with entities decoded and CDATA
        /// taken as it is. Nil when it holds an element of its own (a structured value, not a URI),
        /// a comment aside, or the packet ends first.
        mutating func textUntilEndTag() -> [UInt8]? {
            var text: [UInt8] = []
            while at < bytes.count {
                guard let open = find(Array("<".utf8), from: at) else { return nil }
                guard let piece = decoded(bytes[at..<open]) else { return nil }
                text += piece
                at = open
                if starts("<![CDATA[") {
                    let start = at + 9
                    guard let close = find(Array("]]>".utf8), from: start) else { return nil }
                    text += bytes[start..<close]
                    at = close + 3
                } else if starts("<!--") {
                    guard skip(past: "-->") else { return nil }
                } else if starts("</") {
                    return text
                } else {
                    return nil
                }
            }
            return nil
        }

        /// A name: the bytes up to whitespace, "=", "/" or ">".
        mutating func nameToken() -> ArraySlice<UInt8> {
            let start = at
            while at < bytes.count, !isXMLSpace(bytes[at]), !Self.nameEnds.contains(bytes[at]) { at += 1 }
            return bytes[start..<at]
        }

        /// An attribute value in single or double quotes, entities decoded; nil when unterminated.
        mutating func quotedValue() -> [UInt8]? {
            guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") || bytes[at] == UInt8(ascii: "'") else { return nil }
            let quote = bytes[at]
            guard let close = bytes[(at + 1)...].firstIndex(of: quote) else { return nil }
            let raw = bytes[(at + 1)..<close]
            at = close + 1
            return decoded(raw)
        }

        /// `raw` with XML's five named entities and character references replaced. Only ASCII
        /// references are kept (anything else could not pass as a URI here anyway); an unknown or
        /// unterminated entity makes it nil, since it cannot be read as the writer meant.
        func decoded(_ raw: ArraySlice<UInt8>) -> [UInt8]? {
            var out: [UInt8] = []
            out.reserveCapacity(raw.count)
            var index = raw.startIndex
            while index < raw.endIndex {
                let byte = raw[index]
                guard byte == UInt8(ascii: "&") else {
                    out.append(byte)
                    index += 1
                    continue
                }
                // Entity names and references are short; a longer run is not one.
                guard let semicolon = raw[index..<min(raw.endIndex, index + 12)].firstIndex(of: UInt8(ascii: ";")) else {
                    return nil
                }
                let name = String(decoding: raw[(index + 1)..<semicolon], as: UTF8.self)
                switch name {
                case "lt": out.append(UInt8(ascii: "<"))
                case "gt": out.append(UInt8(ascii: ">"))
                case "amp": out.append(UInt8(ascii: "&"))
                case "quot": out.append(UInt8(ascii: "\""))
                case "apos": out.append(UInt8(ascii: "'"))
                default:
                    guard name.hasPrefix("#") else { return nil }
                    let hex = name.hasPrefix("#x")
                    let digits = name.dropFirst(hex ? 2 : 1)
                    // Digits alone: the integer parser would also take a sign, which XML does not.
                    guard (1...6).contains(digits.count), digits.allSatisfy({ hex ? $0.isHexDigit : $0.isWholeNumber && $0.isASCII }),
                        let code = UInt32(digits, radix: hex ? 16 : 10), code > 0, code < 0x80
                    else { return nil }
                    out.append(UInt8(code))
                }
                index = semicolon + 1
            }
            return out
        }

        /// Whether the bytes at `at` begin with `prefix`.
        func starts(_ prefix: StaticString) -> Bool {
            prefix.withUTF8Buffer { bytes[at...].starts(with: $0) }
        }

        /// Moves past the next `terminator`; false when there is none.
        mutating func skip(past terminator: StaticString) -> Bool {
            let needle = terminator.withUTF8Buffer { [UInt8]($0) }
            guard let found = find(needle, from: at + 1) else { return false }
            at = found + needle.count
            return true
        }

        /// Moves past XML whitespace.
        mutating func skipSpace() {
            while at < bytes.count, isXMLSpace(bytes[at]) { at += 1 }
        }

        /// Where `needle` next occurs at or after `start`. A plain search: needles here are at most
        /// nine bytes, so it stays linear in the packet.
        func find(_ needle: [UInt8], from start: Int) -> Int? {
            guard let first = needle.first, start >= 0 else { return nil }
            var index = start
            while index <= bytes.count - needle.count {
                if bytes[index] == first, bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
                index += 1
            }
            return nil
        }
    }
}

// What an original says about where it came from: Content Credentials (C2PA) found in its container, and the IPTC digital source type in its XMP.
package import Foundation
import ImagePipe

/// Provenance an original declares, read without decoding a pixel.
///
/// Two independent signals: a C2PA manifest store (Content Credentials) embedded in the container,
/// which the worker only detects (verifying its signatures is a job for a C2PA library), and the
/// IPTC `DigitalSourceType` in the XMP, the plain-text label generators and editors write for
/// AI-made pictures. Both are read from bytes an uploader chose, so every length is checked before
/// it is used, no arithmetic on a value from the file can overflow, and every walk stops after
/// ``maxBlocks`` steps.
package enum ProvenanceScan {
    /// The most segments, chunks or boxes one walk looks at. Real files have tens; the bound only
    /// keeps a file made of millions of empty blocks from costing millions of reads.
    static let maxBlocks = 10_000

    // MARK: - C2PA

    /// Whether the file carries Content Credentials: a C2PA manifest store. Detection only, no verification.
    ///
    /// Looks where each format's C2PA binding puts the store: a JPEG's APP11 JUMBF segments before
    /// its first scan, a PNG's `caBX` chunk, an ISO BMFF file's top-level `uuid` box with C2PA's
    /// user type, a WebP's `C2PA` chunk. Only block headers are read (and, for JPEG, the start of an
    /// APP11 payload), so a large file costs a few small reads. A block counts only when it lies
    /// whole within the file: a truncated store is no store.
    ///
    /// - Parameters:
    ///   - size: the file's length in bytes.
    ///   - read: returns up to `count` bytes at `offset` (nil past the end or on error).
    package static func carriesC2PA(size: Int, read: (Int, Int) -> Data?) -> Bool {
        guard let head = exactly(12, at: 0, size: size, read) else { return false }
        if head[0] == 0xFF, head[1] == 0xD8 { return jpegCarriesC2PA(size: size, read: read) }
        if head.starts(with: pngSignature) { return pngCarriesC2PA(size: size, read: read) }
        if head[4..<8].elementsEqual(fourCC("ftyp")) { return bmffCarriesC2PA(size: size, read: read) }
        if head[0..<4].elementsEqual(fourCC("RIFF")), head[8..<12].elementsEqual(fourCC("WEBP")) {
            return webPCarriesC2PA(size: size, read: read, riffSize: littleEndian32(head, 4))
        }
        return false
    }

    /// The eight bytes every PNG file starts with.
    private static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// The user type of the `uuid` box the C2PA ISO BMFF binding stores its manifest in:
    /// D8FEC3D6-1B0E-483C-9297-5828877EC481.
    private static let bmffUserType: [UInt8] = [
        0xD8, 0xFE, 0xC3, 0xD6, 0x1B, 0x0E, 0x48, 0x3C, 0x92, 0x97, 0x58, 0x28, 0x87, 0x7E, 0xC4, 0x81,
    ]

    /// "c2pa": how both the type UUID and the label of a manifest store's JUMBF description begin.
    private static let c2paTag = fourCC("c2pa")

    /// A JPEG: the marker segments from SOI to the first scan, looking for an APP11 segment whose
    /// JUMBF describes a C2PA store. Later APP11 segments of a large store only continue the first
    /// one's box and repeat no description, so the first is the one that says what it is.
    private static func jpegCarriesC2PA(size: Int, read: (Int, Int) -> Data?) -> Bool {
        var at = 2
        for _ in 0..<maxBlocks {
            guard let header = exactly(4, at: at, size: size, read), header[0] == 0xFF else { return false }
            let marker = header[1]
            // A fill byte before a marker, and the markers that have no length after them.
            if marker == 0xFF {
                at += 1
                continue
            }
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) {
                at += 2
                continue
            }
            // The first scan (or the end): metadata segments come before it.
            if marker == 0xDA || marker == 0xD9 { return false }
            let length = Int(header[2]) << 8 | Int(header[3])
            // `at + 4 <= size` here (four bytes were read), so the subtraction cannot go negative.
            guard length >= 2, length - 2 <= size - at - 4 else { return false }
            if marker == 0xEB, let payload = upTo(min(length - 2, jumbfPrefix), at: at + 4, size: size, read),
                describesC2PAStore(payload)
            {
                return true
            }
            at += 2 + length
        }
        return false
    }

    /// How much of an APP11 payload is read: its JPEG XT header (8 bytes), the `jumb` and `jumd`
    /// box headers (up to 16 bytes each, with 64-bit lengths), the 16-byte type UUID, the toggles
    /// byte and a five-byte label, with room to spare.
    private static let jumbfPrefix = 80

    /// Whether the start of an APP11 payload is a C2PA manifest store: JPEG XT's "JP" common
    /// identifier, a box instance number (2 bytes) and packet sequence number (4), then a JUMBF
    /// superbox (`jumb`) whose first box, its description (`jumd`), has a type UUID that begins
    /// with "c2pa" or carries the label "c2pa". Either is enough: writers set both.
    private static func describesC2PAStore(_ payload: [UInt8]) -> Bool {
        guard payload.count >= 8, payload[0] == 0x4A, payload[1] == 0x50 else { return false }
        guard let superbox = boxHeader(payload, at: 8), superbox.type.elementsEqual(fourCC("jumb")),
            let description = boxHeader(payload, at: superbox.bodyStart), description.type.elementsEqual(fourCC("jumd"))
        else { return false }
        let uuidStart = description.bodyStart
        guard payload.count - uuidStart >= 4 else { return false }
        if payload[uuidStart..<(uuidStart + 4)].elementsEqual(c2paTag) { return true }
        // The toggles byte after the 16-byte UUID; its bit 1 says a NUL-terminated label follows.
        let togglesAt = uuidStart + 16
        guard payload.count - togglesAt >= 1 + c2paTag.count + 1, payload[togglesAt] & 0x02 != 0 else { return false }
        let labelStart = togglesAt + 1
        return payload[labelStart..<(labelStart + 4)].elementsEqual(c2paTag) && payload[labelStart + 4] == 0
    }

    /// The type of the JUMBF box whose header starts at `at` in `bytes`, and where its body starts:
    /// a 4-byte length and 4-byte type, then an 8-byte length when the first is 1. Its length is
    /// not held against `bytes`: only the start of a store is read, and in a JPEG its superbox runs
    /// on across later segments.
    private static func boxHeader(_ bytes: [UInt8], at: Int) -> (type: ArraySlice<UInt8>, bodyStart: Int)? {
        guard at >= 0, bytes.count - at >= 8 else { return nil }
        let length = bigEndian(bytes, at, 4)
        let type = bytes[(at + 4)..<(at + 8)]
        if length == 1 {
            guard bytes.count - at >= 16 else { return nil }
            return (type, at + 16)
        }
        // 0 means "to the end"; anything else shorter than the header cannot be a box.
        guard length == 0 || length >= 8 else { return nil }
        return (type, at + 8)
    }

    /// A PNG: its chunks from the signature to `IEND`, looking for `caBX`, the chunk C2PA's PNG
    /// binding defines (writers put it right after `IHDR`, so the walk ends early on real files).
    private static func pngCarriesC2PA(size: Int, read: (Int, Int) -> Data?) -> Bool {
        var at = pngSignature.count
        for _ in 0..<maxBlocks {
            guard let header = exactly(8, at: at, size: size, read) else { return false }
            let length = bigEndian(header, 0, 4)
            let type = header[4..<8]
            // A chunk's data, then its 4-byte CRC, must fit in what is left; PNG caps lengths at 2^31 - 1.
            guard length <= 0x7FFF_FFFF, length <= size - at - 12 else { return false }
            if type.elementsEqual(fourCC("caBX")) { return true }
            if type.elementsEqual(fourCC("IEND")) { return false }
            at += 12 + length
        }
        return false
    }

    /// An ISO BMFF file (HEIF, HEIC, AVIF and their kin, whatever the brand after `ftyp`): its
    /// top-level boxes, looking for a `uuid` box of C2PA's user type. Only headers are read, so the
    /// picture data in `mdat` is jumped over, however large.
    private static func bmffCarriesC2PA(size: Int, read: (Int, Int) -> Data?) -> Bool {
        var at = 0
        for _ in 0..<maxBlocks {
            guard let header = exactly(8, at: at, size: size, read) else { return false }
            let compact = bigEndian(header, 0, 4)
            let remaining = size - at
            var boxSize: Int
            var headerSize = 8
            if compact == 1 {
                // A 64-bit size follows. It is compared as unsigned before it becomes an Int, so a
                // value with its top bit set cannot trap or turn negative.
                guard let large = exactly(8, at: at + 8, size: size, read) else { return false }
                let value = large.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                guard value >= 16, value <= UInt64(remaining) else { return false }
                boxSize = Int(value)
                headerSize = 16
            } else if compact == 0 {
                // The last box, running to the end of the file.
                boxSize = remaining
            } else {
                boxSize = compact
            }
            guard boxSize >= headerSize, boxSize <= remaining else { return false }
            if header[4..<8].elementsEqual(fourCC("uuid")), boxSize - headerSize >= 16,
                let userType = exactly(16, at: at + headerSize, size: size, read), userType == bmffUserType
            {
                return true
            }
            at += boxSize
        }
        return false
    }

    /// A WebP: the RIFF chunks after the `WEBP` form type, looking for a `C2PA` chunk. The RIFF
    /// size bounds the walk as it bounds a decoder's, so bytes trailing the RIFF form are not read.
    private static func webPCarriesC2PA(size: Int, read: (Int, Int) -> Data?, riffSize: Int) -> Bool {
        // `riffSize` is at most 2^32 - 1: adding 8 cannot overflow.
        let end = min(size, riffSize + 8)
        var at = 12
        for _ in 0..<maxBlocks {
            guard end - at >= 8, let header = exactly(8, at: at, size: size, read) else { return false }
            let length = littleEndian32(header, 4)
            guard length <= end - at - 8 else { return false }
            if header[0..<4].elementsEqual(fourCC("C2PA")) { return true }
            // Chunks are padded to an even length; a missing pad byte at the very end ends the loop.
            at += 8 + length + (length & 1)
        }
        return false
    }

    /// Exactly `count` bytes at `offset`, nil when they are not all within the file or the reader
    /// gives fewer (a reader that gives more is cut short).
    private static func exactly(_ count: Int, at offset: Int, size: Int, _ read: (Int, Int) -> Data?) -> [UInt8]? {
        guard offset >= 0, count >= 0, offset <= size, count <= size - offset, let data = read(offset, count),
            data.count >= count
        else { return nil }
        return [UInt8](data.prefix(count))
    }

    /// Up to `count` bytes at `offset` (fewer near the end of the file), nil when none can be read.
    private static func upTo(_ count: Int, at offset: Int, size: Int, _ read: (Int, Int) -> Data?) -> [UInt8]? {
        guard offset >= 0, count > 0, offset < size, let data = read(offset, min(count, size - offset)) else {
            return nil
        }
        return [UInt8](data.prefix(count))
    }

    /// The unsigned big-endian integer of `width` bytes (at most 4, so it always fits) at `at`;
    /// the caller has checked they are there.
    private static func bigEndian(_ bytes: [UInt8], _ at: Int, _ width: Int) -> Int {
        bytes[at..<(at + width)].reduce(0) { $0 << 8 | Int($1) }
    }

    /// The unsigned little-endian 32-bit integer at `at`; the caller has checked its four bytes are there.
    private static func littleEndian32(_ bytes: [UInt8], _ at: Int) -> Int {
        bytes[at..<(at + 4)].reversed().reduce(0) { $0 << 8 | Int($1) }
    }

    /// The bytes of a four-character code.
    private static func fourCC(_ code: StaticString) -> [UInt8] {
        code.withUTF8Buffer { [UInt8]($0) }
    }

    // MARK: - IPTC digital source type

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

    // MARK: - Writing

    /// A minimal, valid XMP packet (with the <?xpacket?> wrapper, x:xmpmeta, rdf:RDF, one
    /// rdf:Description) holding only Iptc4xmpExt:DigitalSourceType = value, for outputs whose
    /// metadata policy keeps the AI label but not the rest of the XMP. The value is XML-escaped.
    ///
    /// Characters XML 1.0 cannot hold at all (control characters other than tab, line feed and
    /// carriage return, and U+FFFE/U+FFFF) are left out, so the packet parses whatever the string.
    package static func xmpPacket(digitalSourceType: String) -> Data {
        let packet = """
            <?xpacket begin="\u{FEFF}" id="W5M0MpCehiHzreSzNTczkc9d"?>
            <x:xmpmeta xmlns:x="adobe:ns:meta/">
             <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
              <rdf:Description rdf:about=""
                xmlns:Iptc4xmpExt="http://iptc.org/std/Iptc4xmpExt/2008-02-29/">
               <Iptc4xmpExt:DigitalSourceType>\(escaped(digitalSourceType))</Iptc4xmpExt:DigitalSourceType>
              </rdf:Description>
             </rdf:RDF>
            </x:xmpmeta>
            <?xpacket end="w"?>
            """
        return Data(packet.utf8)
    }

    /// `text` safe as XML character data: markup characters as references (the project's one
    /// escaping, shared with its HTML), whitespace controls as character references so they
    /// survive as written, and the characters XML 1.0 cannot hold at all left out.
    private static func escaped(_ text: String) -> String {
        var kept = String.UnicodeScalarView()
        for scalar in text.unicodeScalars where scalar.value >= 0x20 || "\t\n\r".unicodeScalars.contains(scalar) {
            if scalar.value != 0xFFFE && scalar.value != 0xFFFF { kept.append(scalar) }
        }
        return String(kept).markupEscaped.replacingOccurrences(of: "\t", with: "&#9;")
            .replacingOccurrences(of: "\n", with: "&#10;").replacingOccurrences(of: "\r", with: "&#13;")
    }
}

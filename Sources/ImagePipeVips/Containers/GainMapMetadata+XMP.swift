// Ultra HDR's `hdrgm` XMP: the gain map's numbers as a gain-map image's XMP says them, and the primary's directory.
public import Foundation

extension GainMapMetadata {
    /// The namespace of Adobe's gain map properties.
    public static let hdrgmNamespace = "http://ns.adobe.com/hdr-gain-map/1.0/"
    /// An XMP APP1 segment's signature.
    public static let xmpSignature = Array("http://ns.adobe.com/xap/1.0/\0".utf8)

    /// Reads the `hdrgm` properties of a gain-map image's XMP packet: each an attribute
    /// (`hdrgm:GainMapMax="2.3"`) or an element holding one value or an `rdf:Seq` of three. The
    /// specification's defaults fill what is left out (GainMapMin 0, Gamma 1, offsets 1/64,
    /// HDRCapacityMin 0); GainMapMax and HDRCapacityMax must be there. Nil when the packet names no
    /// `hdrgm:Version`. Reads at most 64 KiB: an XMP segment holds no more.
    public init?(xmp bytes: some Collection<UInt8>) throws(Refusal) {
        let text = String(decoding: bytes.prefix(65_536), as: UTF8.self)
        guard text.contains(Self.hdrgmNamespace), Self.values(of: "Version", in: text) != nil else { return nil }
        if let base = Self.values(of: "BaseRenditionIsHDR", in: text)?.first, base.lowercased() == "true" {
            throw Refusal("the gain map's base picture is the HDR one")
        }
        func numbers(_ name: String, default fallback: Double?) throws(Refusal) -> [Double] {
            guard let values = Self.values(of: name, in: text) else {
                guard let fallback else { throw Refusal("the gain map's XMP has no hdrgm:\(name)") }
                return [fallback]
            }
            let parsed = values.compactMap { Double(Self.trimmingSpaces($0)) }
            guard parsed.count == values.count, parsed.count == 1 || parsed.count == 3 else {
                throw Refusal("the gain map's hdrgm:\(name) is not one number or three")
            }
            return parsed
        }
        let low = try numbers("GainMapMin", default: 0)
        let high = try numbers("GainMapMax", default: nil)
        let gamma = try numbers("Gamma", default: 1)
        let offsetSDR = try numbers("OffsetSDR", default: 1.0 / 64)
        let offsetHDR = try numbers("OffsetHDR", default: 1.0 / 64)
        let capacityMin = try numbers("HDRCapacityMin", default: 0)
        let capacityMax = try numbers("HDRCapacityMax", default: nil)
        let count = [low, high, gamma, offsetSDR, offsetHDR].map(\.count).max() ?? 1
        func pick(_ values: [Double], _ index: Int) -> Double { values.count == 1 ? values[0] : values[index] }
        let channels = (0..<count).map { index in
            Channel(
                gainMapMin: pick(low, index), gainMapMax: pick(high, index), gamma: pick(gamma, index),
                offsetSDR: pick(offsetSDR, index), offsetHDR: pick(offsetHDR, index))
        }
        self.init(channels: channels, hdrCapacityMin: capacityMin[0], hdrCapacityMax: capacityMax[0])
    }

    /// The value or values of property `name`: an attribute `hdrgm:NAME="…"`, or an element
    /// `<hdrgm:NAME>…</hdrgm:NAME>` whose text or `rdf:li` items are the values. Nil when absent.
    static func values(of name: String, in text: String) -> [String]? {
        for quote in ["\"", "'"] {
            if let range = text.range(of: "hdrgm:\(name)=\(quote)") {
                let rest = text[range.upperBound...]
                guard let end = rest.firstIndex(of: Character(quote)) else { return nil }
                return [String(rest[..<end])]
            }
        }
        guard let open = text.range(of: "<hdrgm:\(name)>"), let close = text.range(of: "</hdrgm:\(name)>", range: open.upperBound..<text.endIndex)
        else { return nil }
        let body = text[open.upperBound..<close.lowerBound]
        guard body.contains("<rdf:li") else { return [Self.trimmingSpaces(body)] }
        var items: [String] = []
        var rest = body[...]
        while items.count < 4, let start = rest.range(of: "<rdf:li"), let bracket = rest[start.upperBound...].firstIndex(of: ">"),
            let end = rest.range(of: "</rdf:li>", range: rest.index(after: bracket)..<rest.endIndex)
        {
            items.append(String(rest[rest.index(after: bracket)..<end.lowerBound]))
            rest = rest[end.upperBound...]
        }
        return items
    }

    /// `text` without the spaces at its ends (spaces alone, not tabs or newlines).
    private static func trimmingSpaces(_ text: some StringProtocol) -> String {
        var slice = Substring(text)
        while slice.first == " " { slice.removeFirst() }
        while slice.last == " " { slice.removeLast() }
        return String(slice)
    }

    /// The gain-map image's XMP description of this metadata (boosts and capacities in log2, as
    /// the specification writes them).
    public var gainMapXMPDescription: String {
        func list(_ values: [Double]) -> String {
            values.count == 1 || Set(values).count == 1 ? Self.number(values[0]) : ""
        }
        let properties: [(String, [Double])] = [
            ("GainMapMin", channels.map(\.gainMapMin)), ("GainMapMax", channels.map(\.gainMapMax)), ("Gamma", channels.map(\.gamma)),
            ("OffsetSDR", channels.map(\.offsetSDR)), ("OffsetHDR", channels.map(\.offsetHDR)),
        ]
        var attributes = "hdrgm:Version=\"1.0\""
        var elements = ""
        for (name, values) in properties {
            let single = list(values)
            if single.isEmpty {
                let items = values.map { "<rdf:li>\(Self.number($0))</rdf:li>" }.joined()
                elements += "<hdrgm:\(name)><rdf:Seq>\(items)</rdf:Seq></hdrgm:\(name)>"
            } else {
                attributes += " hdrgm:\(name)=\"\(single)\""
            }
        }
        attributes += " hdrgm:HDRCapacityMin=\"\(Self.number(hdrCapacityMin))\" hdrgm:HDRCapacityMax=\"\(Self.number(hdrCapacityMax))\""
        attributes += " hdrgm:BaseRenditionIsHDR=\"False\""
        return "<rdf:Description rdf:about=\"\" xmlns:hdrgm=\"\(Self.hdrgmNamespace)\" \(attributes)>\(elements)</rdf:Description>"
    }

    /// The primary image's XMP description: the `hdrgm` version and the container directory naming
    /// the gain-map image and its length.
    public static func primaryXMPDescription(gainMapLength: Int) -> String {
        "<rdf:Description rdf:about=\"\" xmlns:hdrgm=\"\(hdrgmNamespace)\""
            + " xmlns:Container=\"http://ns.google.com/photos/1.0/container/\""
            + " xmlns:Item=\"http://ns.google.com/photos/1.0/container/item/\" hdrgm:Version=\"1.0\">"
            + "<Container:Directory><rdf:Seq>"
            + "<rdf:li rdf:parseType=\"Resource\"><Container:Item Item:Semantic=\"Primary\" Item:Mime=\"image/jpeg\"/></rdf:li>"
            + "<rdf:li rdf:parseType=\"Resource\"><Container:Item Item:Semantic=\"GainMap\" Item:Mime=\"image/jpeg\" Item:Length=\"\(gainMapLength)\"/></rdf:li>"
            + "</rdf:Seq></Container:Directory></rdf:Description>"
    }

    /// An XMP packet holding `description`; or `existing` (a packet the variant keeps) with it added
    /// beside its own descriptions. Nil when `existing` has no `rdf:RDF` to add it to.
    public static func xmpPacket(_ description: String, adding existing: Data? = nil) -> Data? {
        guard let existing, !existing.isEmpty else {
            return Data(
                ("<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">"
                    + description + "</rdf:RDF></x:xmpmeta>").utf8)
        }
        let text = String(decoding: existing, as: UTF8.self)
        guard let close = text.range(of: "</rdf:RDF>", options: .backwards) else { return nil }
        return Data((text[..<close.lowerBound] + description + text[close.lowerBound...]).utf8)
    }

    /// A number as XMP writes it: plain decimals, enough digits for a millionth of a stop.
    static func number(_ value: Double) -> String {
        let rounded = (value * 1_000_000).rounded() / 1_000_000
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}

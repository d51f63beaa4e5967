// The facts as one short ASCII header value, for stores whose object metadata travels in HTTP headers.
import Foundation

extension ImageFacts {
    /// `pdq=HEX:QUALITY;palette=rrggbb:SHARE,…;c2pa=0|1;dst=PERCENT-ENCODED` with the parts there
    /// are: about 250 bytes of the 2 KB of user metadata S3 takes in all, where JSON would take
    /// twice that. What a skipped re-run's record gives of an original stored remotely.
    public var headerValue: String {
        var parts: [String] = []
        if let pdq { parts.append("pdq=\(pdq.hash):\(pdq.quality)") }
        // An empty palette (a picture with no opaque pixel) is left out: `palette=` would read as
        // no part at all.
        if let palette, !palette.isEmpty {
            parts.append("palette=" + palette.map { "\($0.color.dropFirst()):\(String(format: "%.3f", $0.share))" }.joined(separator: ","))
        }
        if let provenance {
            parts.append("c2pa=\(provenance.c2pa ? 1 : 0)")
            if let type = provenance.digitalSourceType { parts.append("dst=" + PercentEncoding.encodePath(type)) }
        }
        return parts.joined(separator: ";")
    }

    /// Reads ``headerValue`` back; nil for a value that is not one, or whose facts have a shape
    /// records cannot hold (``fault``): object metadata can be edited by anyone who can write the object.
    public init?(headerValue: String) {
        self.init()
        for part in headerValue.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { return nil }
            switch pair[0] {
            case "pdq":
                let fields = pair[1].split(separator: ":")
                guard fields.count == 2, let quality = Int(fields[1]) else { return nil }
                pdq = PDQ(hash: String(fields[0]), quality: quality)
            case "palette":
                var colours: [Colour] = []
                for entry in pair[1].split(separator: ",") {
                    let fields = entry.split(separator: ":")
                    guard fields.count == 2, let share = Double(fields[1]), share.isFinite else { return nil }
                    colours.append(Colour(color: "#" + fields[0], share: share))
                }
                palette = colours
            case "c2pa":
                provenance = Provenance(c2pa: pair[1] == "1", digitalSourceType: provenance?.digitalSourceType)
            case "dst":
                guard let type = pair[1].removingPercentEncoding else { return nil }
                provenance = Provenance(c2pa: provenance?.c2pa ?? false, digitalSourceType: type)
            default:
                // A part a later imagepipe writes: left for it.
                continue
            }
        }
        if fault != nil || isEmpty { return nil }
    }
}

// The one wire codec of a helper's facts about an original, checked as every helper answer is.
import ImagePipe

extension ImageFacts {
    /// The facts as a helper writes them: each analysis's part optional, in ``ImageFacts``' order.
    func write(_ writer: inout WireWriter) {
        writer.optional(pdq) { writer, pdq in
            writer.string(pdq.hash)
            writer.int(pdq.quality)
        }
        writer.optional(palette) { writer, palette in
            writer.int(palette.count)
            for colour in palette {
                writer.string(colour.color)
                writer.double(colour.share)
            }
        }
        writer.optional(provenance) { writer, provenance in
            writer.bool(provenance.c2pa)
            writer.optional(provenance.digitalSourceType) { $0.string($1) }
        }
    }

    /// Reads what ``write(_:)`` wrote, refusing facts of any shape a record could not hold
    /// (``ImageFacts/fault``): a helper that was taken over writes whatever it likes here, and the
    /// worker puts it into HTML, JSON and object metadata.
    init(_ reader: inout WireReader) throws(WireReader.Malformed) {
        self.init()
        pdq = try reader.optional { (reader) throws(WireReader.Malformed) -> PDQ in
            PDQ(hash: try reader.string(), quality: try reader.int(in: 0...100, "a PDQ quality of"))
        }
        palette = try reader.optional { (reader) throws(WireReader.Malformed) -> [Colour] in
            let count = try reader.int(in: 0...ImageFacts.maxColours, "a palette of")
            var colours: [Colour] = []
            for _ in 0..<count {
                let color = try reader.string()
                let share = try reader.double()
                // Checked before rounding: a NaN would round to NaN, an infinity to itself.
                guard share.isFinite else { throw WireReader.Malformed(description: "a colour share of \(share)") }
                colours.append(Colour(color: color, share: share))
            }
            return colours
        }
        provenance = try reader.optional { (reader) throws(WireReader.Malformed) -> Provenance in
            Provenance(
                c2pa: try reader.bool(), digitalSourceType: try reader.optional { (reader) throws(WireReader.Malformed) in try reader.string() })
        }
        if let fault { throw WireReader.Malformed(description: fault) }
    }
}

// What a helper says of a compressed image: everything but the specs the worker has, its small outputs inside.
import Foundation
package import ImagePipe

/// One source's outcome in a batch, naming the source's nonce.
package enum HelperBatchItem: Equatable {
    case compressed(nonce: UInt64, HelperResult)
    case failed(nonce: UInt64, ImagePipeError)

    /// The nonce of the source it answers for.
    var nonce: UInt64 {
        switch self {
        case .compressed(let nonce, _), .failed(let nonce, _): nonce
        }
    }
}

/// A compressed image as a helper describes it, without the variants' bytes (they travel as
/// memory files) and without their specs (the worker has them, in the order it asked).
package struct HelperResult: Equatable {
    package struct Variant: Equatable {
        /// What encoding made of it, as its record will say.
        var encoding: VariantEncoding
        var byteCount: Int
        /// Its bytes, inside the message, when the job's outputs are small; else they come as a
        /// memory file beside it.
        var inline: [UInt8]? = nil
    }

    package var sourceFormat: SourceFormat
    package var sourceSize: PixelSize
    package var decodeTime: Duration
    package var encodeTime: Duration
    package var placeholder: Placeholder?
    package var gainMap: GainMap?
    /// What the helper's analyses found (``ImageFacts``), held to its shapes as it is read.
    package var facts: ImageFacts?
    package var variants: [Variant]
    /// When each step ran, as the helper says: only placed in the job's trace, each held within
    /// the time the worker waited for this answer (`FileHandler`'s compression span).
    package var steps: [ImageStep] = []

    /// The most variants a result may describe: as many descriptors as one message carries.
    package static let maxVariants = 64
    /// The largest side a helper may report: far past any limit a source passes.
    static let maxSide = 1 << 20

    /// The most bytes a message carries inside it (a small source, or all of a job's outputs):
    /// below this, two memory files a job (each a file made, written, sent, read and closed) cost
    /// more than copying the bytes through the socket.
    static let inlineLimit = 64 << 10

    /// The result for `compressed`, its outputs inside the message if they fit in ``inlineLimit``
    /// and `inline` allows.
    init(_ compressed: CompressedImage, inline allowed: Bool = true) {
        sourceFormat = compressed.sourceFormat
        sourceSize = compressed.sourceSize
        decodeTime = compressed.decodeTime
        encodeTime = compressed.encodeTime
        placeholder = compressed.placeholder
        gainMap = compressed.gainMap
        facts = compressed.facts
        steps = compressed.steps
        let inline = allowed && Self.fitsInline(compressed)
        variants = compressed.variants.map {
            Variant(encoding: $0.encoding, byteCount: $0.data.count, inline: inline ? [UInt8]($0.data) : nil)
        }
    }

    /// Whether a job's outputs go inside the message.
    static func fitsInline(_ compressed: CompressedImage) -> Bool {
        compressed.variants.reduce(0) { $0 + $1.data.count } <= inlineLimit
    }

    /// The memory files that come beside the message for this result.
    var files: Int { variants.filter { $0.inline == nil }.count }

    func write(_ writer: inout WireWriter) {
        writer.string(sourceFormat.rawValue)
        writer.int(sourceSize.width)
        writer.int(sourceSize.height)
        writer.int(Int(decodeTime.nanoseconds))
        writer.int(Int(encodeTime.nanoseconds))
        writer.optional(placeholder) { writer, placeholder in
            writer.string(placeholder.thumbHash)
            writer.string(placeholder.color)
        }
        // Its kind, whether it was carried, the code of why not and its headroom; the reason is the
        // worker's own words for the code, not the helper's.
        writer.optional(gainMap) { writer, gainMap in
            writer.string(gainMap.kind.rawValue)
            writer.bool(gainMap.carried)
            writer.optional(gainMap.reasonCode) { $0.string($1.rawValue) }
            writer.optional(gainMap.headroom) { $0.double($1) }
        }
        writer.optional(facts) { writer, facts in facts.write(&writer) }
        writer.int(variants.count)
        for variant in variants {
            let encoding = variant.encoding
            writer.int(encoding.size.width)
            writer.int(encoding.size.height)
            writer.int(variant.byteCount)
            writer.optional(variant.inline) { $0.blob($1) }
            writer.optional(encoding.quality) { $0.int($1) }
            writer.optional(encoding.score) { $0.double($1) }
            // 0: no quality search chose it (a search makes one encode at least).
            writer.int(encoding.encodes ?? 0)
            writer.bool(encoding.keptOriginal)
            writer.int(encoding.frames)
            writer.optional(encoding.hdrHeadroom) { $0.double($1) }
        }
        writer.int(steps.count)
        for step in steps {
            let (kind, variant) = Self.code(of: step.name)
            writer.int(kind)
            writer.int(variant)
            writer.int(Int(clamping: step.start))
            writer.int(Int(clamping: step.end))
        }
    }

    /// A step's name on the wire: its kind and, for a variant's steps, the variant's place.
    private static func code(of name: ImageStep.Name) -> (Int, Int) {
        switch name {
        case .header: (0, 0)
        case .decode: (1, 0)
        case .analyses: (2, 0)
        case .encode(let variant): (3, variant)
        case .gainMap(let variant): (4, variant)
        }
    }

    init(_ reader: inout WireReader) throws(WireReader.Malformed) {
        sourceFormat = try HelperReply.format(try reader.string())
        sourceSize = try Self.size(&reader)
        decodeTime = .nanoseconds(try reader.int(in: 0...Int.max, "a decode time of"))
        encodeTime = .nanoseconds(try reader.int(in: 0...Int.max, "an encode time of"))
        placeholder = try reader.optional { (reader) throws(WireReader.Malformed) -> Placeholder in
            let placeholder = Placeholder(thumbHash: try reader.string(), color: try reader.string())
            // Written into HTML markup and object metadata headers: only what a placeholder can be.
            guard Self.isThumbHash(placeholder.thumbHash), Self.isColour(placeholder.color) else {
                throw WireReader.Malformed(description: "a placeholder that is no ThumbHash and colour")
            }
            return placeholder
        }
        gainMap = try reader.optional { (reader) throws(WireReader.Malformed) -> GainMap in
            let name = try reader.string()
            guard let kind = GainMap.Kind(rawValue: name) else { throw WireReader.Malformed(description: "a gain map of no known kind") }
            let carried = try reader.bool()
            let code = try reader.optional { (reader) throws(WireReader.Malformed) -> GainMap.Reason in
                let name = try reader.string()
                guard let reason = GainMap.Reason(rawValue: name) else {
                    throw WireReader.Malformed(description: "a gain map not carried for no known reason")
                }
                return reason
            }
            let headroom = try reader.optional { (reader) throws(WireReader.Malformed) in try Self.headroom(&reader) }
            // Carried, or not for a reason: never both, never neither.
            guard carried == (code == nil) else { throw WireReader.Malformed(description: "a gain map both carried and not, or neither") }
            if let code { return GainMap(kind: kind, notCarried: code, headroom: headroom) }
            guard let headroom else { throw WireReader.Malformed(description: "a gain map carried without its headroom") }
            return GainMap(kind: kind, carried: true, headroom: headroom)
        }
        facts = try reader.optional { (reader) throws(WireReader.Malformed) in try ImageFacts(&reader) }
        let count = try reader.int(in: 0...Self.maxVariants, "a variant count of")
        variants = []
        for _ in 0..<count {
            let size = try Self.size(&reader)
            let byteCount = try reader.int(in: 0...Int.max, "an output of")
            let inline = try reader.optional { (reader) throws(WireReader.Malformed) in try reader.blob() }
            guard inline == nil || inline!.count == byteCount else {
                throw WireReader.Malformed(description: "an output of \(inline!.count) bytes said to be \(byteCount)")
            }
            let quality = try reader.optional { (reader) throws(WireReader.Malformed) in try reader.int(in: 0...100, "a quality of") }
            let score = try reader.optional { (reader) throws(WireReader.Malformed) -> Double in
                // SSIMULACRA 2 is at most 100, and JSON has no NaN or infinity for a record to hold.
                let score = try reader.double()
                guard score.isFinite, score <= 100, score >= -1000 else { throw WireReader.Malformed(description: "a score of \(score)") }
                return score
            }
            let encodes = try reader.int(in: 0...1000, "an encode count of")
            let encoding = VariantEncoding(
                size: size, quality: quality, score: score, encodes: encodes == 0 ? nil : encodes, keptOriginal: try reader.bool(),
                frames: try reader.int(in: 1...1_000_000, "a frame count of"),
                hdrHeadroom: try reader.optional { (reader) throws(WireReader.Malformed) in try Self.headroom(&reader) })
            variants.append(Variant(encoding: encoding, byteCount: byteCount, inline: inline))
        }
        let stepCount = try reader.int(in: 0...ImageStep.limit(variants: count), "a step count of")
        steps = []
        for _ in 0..<stepCount {
            let kind = try reader.int(in: 0...4, "a step kind of")
            let variant = try reader.int(in: 0...max(0, count - 1), "a step's variant of")
            let start = try reader.int(in: 0...Int.max, "a step start of")
            let end = try reader.int(in: start...Int.max, "a step end of")
            let name: ImageStep.Name =
                switch kind {
                case 0: .header
                case 1: .decode
                case 2: .analyses
                case 3: .encode(variant: variant)
                default: .gainMap(variant: variant)
                }
            steps.append(ImageStep(name, start: UInt64(start), end: UInt64(end)))
        }
        // A variant carries a gain map only of an original said to have one carried.
        if variants.contains(where: { $0.encoding.hdrHeadroom != nil }), gainMap?.carried != true {
            throw WireReader.Malformed(description: "an HDR variant of an original whose gain map was not carried")
        }
    }

    /// A headroom: a finite ratio above 1 and within what gain map metadata is accepted with
    /// (``GainMap/maxStops``), since it ends up in the manifest and the HTML report.
    static func headroom(_ reader: inout WireReader) throws(WireReader.Malformed) -> Double {
        let headroom = try reader.double()
        guard headroom.isFinite, headroom > 1, headroom <= exp2(GainMap.maxStops) else {
            throw WireReader.Malformed(description: "a headroom of \(headroom)")
        }
        return headroom
    }

    /// A ThumbHash in base64: at most 25 bytes, so 36 characters or fewer of the base64 alphabet.
    static func isThumbHash(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 48
            && text.utf8.allSatisfy { byte in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
                    || byte == UInt8(ascii: "=")
            }
    }

    /// A colour as `#rrggbb`, lowercase hex.
    static func isColour(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 7 && bytes[0] == UInt8(ascii: "#")
            && bytes.dropFirst().allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }
    }

    static func size(_ reader: inout WireReader) throws(WireReader.Malformed) -> PixelSize {
        PixelSize(width: try reader.int(in: 0...maxSide, "a width of"), height: try reader.int(in: 0...maxSide, "a height of"))
    }
}

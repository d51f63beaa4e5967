// The messages a worker and its image helpers exchange: requests one way, replies the other.
import Foundation
package import ImagePipe

/// What a worker sends a helper. A source and its outputs travel as descriptors beside the
/// message, never as pixels or bytes inside it.
package enum HelperRequest: Equatable {
    /// The first message: what the helper needs after its sandbox is in place (the watermark logo,
    /// as a memory file beside the message when there is one).
    case start(hasLogo: Bool)
    /// The variants and limits of the jobs that follow, sent when they change.
    case setup(variants: [VariantSpec], limits: CompressionLimits)
    /// Compress the source whose descriptor comes with the message.
    case compress(HelperSource)
    /// Read the header of the source whose descriptor comes with the message (`--dry-run`).
    case readHeader(HelperSource)
    /// The working memory the helper asked for, granted from the worker's pipeline budget.
    case grant(Int)
    /// The worker is idle: give back the memory busy moments kept.
    case trim

    fileprivate enum Kind: UInt8 {
        case setup = 1, compress, readHeader, grant, trim, start
    }

    package func encoded() -> [UInt8] {
        switch self {
        case .setup(let variants, let limits):
            var writer = WireWriter(kind: Kind.setup.rawValue)
            // Once per helper and change of variants: JSON is cheap enough here and follows the specs' evolution.
            writer.blob(Array((try? JSONEncoder().encode(variants)) ?? Data()))
            writer.int(limits.maxPixels)
            writer.int(limits.maxFrames)
            return writer.bytes
        case .compress(let source):
            var writer = WireWriter(kind: Kind.compress.rawValue)
            source.write(&writer)
            return writer.bytes
        case .readHeader(let source):
            var writer = WireWriter(kind: Kind.readHeader.rawValue)
            source.write(&writer)
            return writer.bytes
        case .grant(let bytes):
            var writer = WireWriter(kind: Kind.grant.rawValue)
            writer.int(bytes)
            return writer.bytes
        case .trim:
            return WireWriter(kind: Kind.trim.rawValue).bytes
        case .start(let hasLogo):
            var writer = WireWriter(kind: Kind.start.rawValue)
            writer.bool(hasLogo)
            return writer.bytes
        }
    }

    package init(decoding bytes: [UInt8]) throws(WireReader.Malformed) {
        var reader = try WireReader(bytes)
        switch Kind(rawValue: reader.kind) {
        case .setup:
            let json = try reader.blob()
            guard let variants = try? JSONDecoder().decode([VariantSpec].self, from: Data(json)) else {
                throw WireReader.Malformed(description: "variants that cannot be read")
            }
            let maxPixels = try reader.int(in: 1...Int.max, "a pixel limit of")
            let maxFrames = try reader.int(in: 1...Int.max, "a frame limit of")
            self = .setup(variants: variants, limits: CompressionLimits(maxPixels: maxPixels, maxFrames: maxFrames))
        case .compress: self = .compress(try HelperSource(&reader))
        case .readHeader: self = .readHeader(try HelperSource(&reader))
        case .grant: self = .grant(try reader.int(in: 0...Int.max, "a grant of"))
        case .trim: self = .trim
        case .start: self = .start(hasLogo: try reader.bool())
        case nil: throw WireReader.Malformed(description: "a request of unknown kind \(reader.kind)")
        }
        try reader.end()
    }
}

/// The source of a job as a helper receives it: its name for messages, the job's focal point, and
/// whether its descriptor is the original file or a memory file holding downloaded bytes.
package struct HelperSource: Equatable {
    var name: String
    var focus: FocalPoint?
    var isFile: Bool
    /// A small source's bytes, inside the message instead of a memory file beside it (see
    /// ``HelperResult/inlineLimit``).
    var inline: [UInt8]?
    /// Working memory granted with the job, so that an image needing no more (most small ones) asks
    /// for none: one exchange fewer per job. `Int.max` where the pipeline has no budget.
    var advance: Int

    init(name: String, focus: FocalPoint?, isFile: Bool, inline: [UInt8]? = nil, advance: Int = 0) {
        self.name = name
        self.focus = focus
        self.isFile = isFile
        self.inline = inline
        self.advance = advance
    }

    func write(_ writer: inout WireWriter) {
        writer.string(name)
        writer.optional(focus) { writer, focus in
            writer.double(focus.x)
            writer.double(focus.y)
        }
        writer.bool(isFile)
        writer.optional(inline) { $0.blob($1) }
        writer.int(advance)
    }

    init(_ reader: inout WireReader) throws(WireReader.Malformed) {
        name = try reader.string()
        focus =
            try reader.optional { (reader) throws(WireReader.Malformed) -> FocalPoint? in
                FocalPoint(x: try reader.double(), y: try reader.double())
            } ?? nil
        isFile = try reader.bool()
        inline = try reader.optional { (reader) throws(WireReader.Malformed) in try reader.blob() }
        guard inline == nil || !isFile else { throw WireReader.Malformed(description: "a file's bytes inside the message") }
        advance = try reader.int(in: 0...Int.max, "an advance of")
    }
}

/// What a helper sends its worker.
package enum HelperReply: Equatable {
    /// Started, its sandbox applied (or turned off), and waiting for jobs. `landlock` is the
    /// Landlock ABI it restricted itself with, 0 where the kernel has none.
    case ready(sandboxed: Bool, landlock: Int)
    /// It could not start as asked (the sandbox could not be applied): the reason, for the worker to refuse to start.
    case startFailed(String)
    /// The job needs this much working memory before it decodes.
    case need(Int)
    /// The job's result; each variant's bytes come as a memory file beside the message, in order.
    case compressed(HelperResult)
    /// The source's header, or nil when the compressor cannot tell without decoding.
    case header(SourceHeader?)
    /// The job failed with this error.
    case failed(ImagePipeError)

    fileprivate enum Kind: UInt8 {
        case ready = 10, startFailed, need, compressed, header, failed
    }

    package func encoded() -> [UInt8] {
        switch self {
        case .ready(let sandboxed, let landlock):
            var writer = WireWriter(kind: Kind.ready.rawValue)
            writer.bool(sandboxed)
            writer.int(landlock)
            return writer.bytes
        case .startFailed(let reason):
            var writer = WireWriter(kind: Kind.startFailed.rawValue)
            writer.string(reason)
            return writer.bytes
        case .need(let bytes):
            var writer = WireWriter(kind: Kind.need.rawValue)
            writer.int(bytes)
            return writer.bytes
        case .compressed(let result):
            var writer = WireWriter(kind: Kind.compressed.rawValue)
            result.write(&writer)
            return writer.bytes
        case .header(let header):
            var writer = WireWriter(kind: Kind.header.rawValue)
            writer.optional(header) { writer, header in
                writer.string(header.format.rawValue)
                writer.int(header.size.width)
                writer.int(header.size.height)
            }
            return writer.bytes
        case .failed(let error):
            var writer = WireWriter(kind: Kind.failed.rawValue)
            writer.string(error.code.description)
            writer.string(error.reason)
            return writer.bytes
        }
    }

    package init(decoding bytes: [UInt8]) throws(WireReader.Malformed) {
        var reader = try WireReader(bytes)
        switch Kind(rawValue: reader.kind) {
        case .ready: self = .ready(sandboxed: try reader.bool(), landlock: try reader.int(in: 0...1000, "a Landlock ABI of"))
        case .startFailed: self = .startFailed(try reader.string())
        case .need: self = .need(try reader.int(in: 0...Int.max, "a need of"))
        case .compressed: self = .compressed(try HelperResult(&reader))
        case .header:
            self = .header(
                try reader.optional { (reader) throws(WireReader.Malformed) -> SourceHeader in
                    let format = try Self.format(try reader.string())
                    return SourceHeader(format: format, size: try HelperResult.size(&reader))
                })
        case .failed:
            let name = try reader.string()
            guard let code = ImagePipeError.Code(rawValue: name) else { throw WireReader.Malformed(description: "an unknown error code '\(name)'") }
            self = .failed(ImagePipeError(code, try reader.string()))
        case nil: throw WireReader.Malformed(description: "a reply of unknown kind \(reader.kind)")
        }
        try reader.end()
    }

    static func format(_ name: String) throws(WireReader.Malformed) -> SourceFormat {
        guard let format = SourceFormat(rawValue: name) else { throw WireReader.Malformed(description: "an unknown source format '\(name)'") }
        return format
    }
}

/// A compressed image as a helper describes it, without the variants' bytes (they travel as
/// memory files) and without their specs (the worker has them, in the order it asked).
package struct HelperResult: Equatable {
    package struct Variant: Equatable {
        var size: PixelSize
        var byteCount: Int
        /// Its bytes, inside the message, when the job's outputs are small; else they come as a
        /// memory file beside it.
        var inline: [UInt8]? = nil
        var quality: Int?
        var score: Double?
        var encodes: Int
        var keptOriginal: Bool
        var frames: Int
    }

    package var sourceFormat: SourceFormat
    package var sourceSize: PixelSize
    package var decodeTime: Duration
    package var encodeTime: Duration
    package var placeholder: Placeholder?
    package var gainMap: GainMap?
    package var variants: [Variant]

    /// The most variants a result may describe: as many descriptors as one message carries.
    package static let maxVariants = 64
    /// The largest side a helper may report: far past any limit a source passes.
    static let maxSide = 1 << 20

    /// The most bytes a message carries inside it (a small source, or all of a job's outputs):
    /// below this, two memory files a job (each a file made, written, sent, read and closed) cost
    /// more than copying the bytes through the socket.
    static let inlineLimit = 64 << 10

    init(_ compressed: CompressedImage) {
        sourceFormat = compressed.sourceFormat
        sourceSize = compressed.sourceSize
        decodeTime = compressed.decodeTime
        encodeTime = compressed.encodeTime
        placeholder = compressed.placeholder
        gainMap = compressed.gainMap
        let inline = compressed.variants.reduce(0) { $0 + $1.data.count } <= Self.inlineLimit
        variants = compressed.variants.map {
            Variant(
                size: $0.size, byteCount: $0.data.count, inline: inline ? [UInt8]($0.data) : nil, quality: $0.quality, score: $0.score,
                encodes: $0.encodes, keptOriginal: $0.keptOriginal, frames: $0.frames)
        }
    }

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
        // Its kind and whether it was carried; the reason is the worker's own words, not the helper's.
        writer.optional(gainMap) { writer, gainMap in
            writer.string(gainMap.kind.rawValue)
            writer.bool(gainMap.carried)
        }
        writer.int(variants.count)
        for variant in variants {
            writer.int(variant.size.width)
            writer.int(variant.size.height)
            writer.int(variant.byteCount)
            writer.optional(variant.inline) { $0.blob($1) }
            writer.optional(variant.quality) { $0.int($1) }
            writer.optional(variant.score) { $0.double($1) }
            writer.int(variant.encodes)
            writer.bool(variant.keptOriginal)
            writer.int(variant.frames)
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
            // No helper carries a gain map into its variants yet: one that says so is not to be believed.
            guard try reader.bool() == false else { throw WireReader.Malformed(description: "a gain map said to be carried") }
            return GainMap(kind: kind, carried: false, reason: GainMap.notCarriedReason)
        }
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
            variants.append(
                Variant(
                    size: size, byteCount: byteCount, inline: inline, quality: quality, score: score,
                    encodes: try reader.int(in: 0...1000, "an encode count of"), keptOriginal: try reader.bool(),
                    frames: try reader.int(in: 1...1_000_000, "a frame count of")))
        }
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

extension Duration {
    /// The whole duration in nanoseconds, saturating.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled &+ attoseconds / 1_000_000_000
    }
}

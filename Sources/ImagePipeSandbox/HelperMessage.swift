// The messages a worker and its image helpers exchange: requests one way, replies the other.
import Foundation
package import ImagePipe

/// What a worker sends a helper. A source and its outputs travel as descriptors beside the
/// message, never as pixels or bytes inside it.
///
/// Every job carries a nonce, a random number the worker draws for it, and every reply and request
/// for memory about that job names it: a reply that names another (a stray one, sent again or
/// unasked) is misbehaviour, never an answer.
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
    /// Compress these small sources, each inside the message, one after the other (see
    /// ``HelperReply/batch(_:)``).
    case compressBatch([HelperSource])
    /// The working memory the helper asked for for the job `nonce` names, granted from the worker's
    /// pipeline budget.
    case grant(nonce: UInt64, bytes: Int)

    fileprivate enum Kind: UInt8 {
        // 5 was a request to give memory back, which a helper that serves one job never needs.
        case setup = 1, compress, readHeader, grant, start = 6, compressBatch
    }

    /// The most sources one batch holds.
    package static let maxBatch = 32

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
        case .compressBatch(let sources):
            var writer = WireWriter(kind: Kind.compressBatch.rawValue)
            writer.int(sources.count)
            for source in sources { source.write(&writer) }
            return writer.bytes
        case .grant(let nonce, let bytes):
            var writer = WireWriter(kind: Kind.grant.rawValue)
            writer.nonce(nonce)
            writer.int(bytes)
            return writer.bytes
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
        case .compressBatch:
            let count = try reader.int(in: 1...Self.maxBatch, "a batch of")
            var sources: [HelperSource] = []
            for _ in 0..<count {
                let source = try HelperSource(&reader)
                guard source.inline != nil else { throw WireReader.Malformed(description: "a batch's source outside the message") }
                sources.append(source)
            }
            self = .compressBatch(sources)
        case .grant: self = .grant(nonce: try reader.nonce(), bytes: try reader.int(in: 0...Int.max, "a grant of"))
        case .start: self = .start(hasLogo: try reader.bool())
        case nil: throw WireReader.Malformed(description: "a request of unknown kind \(reader.kind)")
        }
        try reader.end()
    }
}

/// The source of a job as a helper receives it: its name for messages, the job's focal point, and
/// whether its descriptor is the original file or a memory file holding downloaded bytes.
package struct HelperSource: Equatable {
    /// The job's nonce, which every reply about it names.
    var nonce: UInt64
    var name: String
    var focus: FocalPoint?
    var isFile: Bool
    /// A small source's bytes, inside the message instead of a memory file beside it (see
    /// ``HelperResult/inlineLimit``).
    var inline: [UInt8]?
    /// Working memory granted with the job, so that an image needing no more (most small ones) asks
    /// for none: one exchange fewer per job. `Int.max` where the pipeline has no budget.
    var advance: Int

    init(nonce: UInt64 = 0, name: String, focus: FocalPoint?, isFile: Bool, inline: [UInt8]? = nil, advance: Int = 0) {
        self.nonce = nonce
        self.name = name
        self.focus = focus
        self.isFile = isFile
        self.inline = inline
        self.advance = advance
    }

    func write(_ writer: inout WireWriter) {
        writer.nonce(nonce)
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
        nonce = try reader.nonce()
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
    /// The job `nonce` names needs this much working memory before it decodes.
    case need(nonce: UInt64, bytes: Int)
    /// The job's result; each variant's bytes the result does not hold inside come as a memory file
    /// beside the message, in order.
    case compressed(nonce: UInt64, HelperResult)
    /// The source's header, or nil when the compressor cannot tell without decoding.
    case header(nonce: UInt64, SourceHeader?)
    /// The job failed with this error.
    case failed(nonce: UInt64, ImagePipeError)
    /// The next results of a batch, in its order; the variants' bytes that are not inside come as
    /// memory files beside the message, in order. A batch ends at its first failure: the helper
    /// serves no further source after one.
    case batch([HelperBatchItem])

    fileprivate enum Kind: UInt8 {
        case ready = 10, startFailed, need, compressed, header, failed, batch
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
        case .need(let nonce, let bytes):
            var writer = WireWriter(kind: Kind.need.rawValue)
            writer.nonce(nonce)
            writer.int(bytes)
            return writer.bytes
        case .compressed(let nonce, let result):
            var writer = WireWriter(kind: Kind.compressed.rawValue)
            writer.nonce(nonce)
            result.write(&writer)
            return writer.bytes
        case .header(let nonce, let header):
            var writer = WireWriter(kind: Kind.header.rawValue)
            writer.nonce(nonce)
            writer.optional(header) { writer, header in
                writer.string(header.format.rawValue)
                writer.int(header.size.width)
                writer.int(header.size.height)
            }
            return writer.bytes
        case .failed(let nonce, let error):
            var writer = WireWriter(kind: Kind.failed.rawValue)
            writer.nonce(nonce)
            Self.write(error, &writer)
            return writer.bytes
        case .batch(let items):
            var writer = WireWriter(kind: Kind.batch.rawValue)
            writer.int(items.count)
            for item in items {
                switch item {
                case .compressed(let nonce, let result):
                    writer.bool(true)
                    writer.nonce(nonce)
                    result.write(&writer)
                case .failed(let nonce, let error):
                    writer.bool(false)
                    writer.nonce(nonce)
                    Self.write(error, &writer)
                }
            }
            return writer.bytes
        }
    }

    private static func write(_ error: ImagePipeError, _ writer: inout WireWriter) {
        writer.string(error.code.description)
        writer.string(error.reason)
    }

    private static func error(_ reader: inout WireReader) throws(WireReader.Malformed) -> ImagePipeError {
        let name = try reader.string()
        guard let code = ImagePipeError.Code(rawValue: name) else { throw WireReader.Malformed(description: "an unknown error code '\(name)'") }
        return ImagePipeError(code, try reader.string())
    }

    package init(decoding bytes: [UInt8]) throws(WireReader.Malformed) {
        var reader = try WireReader(bytes)
        switch Kind(rawValue: reader.kind) {
        case .ready: self = .ready(sandboxed: try reader.bool(), landlock: try reader.int(in: 0...1000, "a Landlock ABI of"))
        case .startFailed: self = .startFailed(try reader.string())
        case .need: self = .need(nonce: try reader.nonce(), bytes: try reader.int(in: 0...Int.max, "a need of"))
        case .compressed: self = .compressed(nonce: try reader.nonce(), try HelperResult(&reader))
        case .header:
            self = .header(
                nonce: try reader.nonce(),
                try reader.optional { (reader) throws(WireReader.Malformed) -> SourceHeader in
                    let format = try Self.format(try reader.string())
                    return SourceHeader(format: format, size: try HelperResult.size(&reader))
                })
        case .failed: self = .failed(nonce: try reader.nonce(), try Self.error(&reader))
        case .batch:
            let count = try reader.int(in: 1...HelperRequest.maxBatch, "a batch of")
            var items: [HelperBatchItem] = []
            for _ in 0..<count {
                items.append(
                    try reader.bool()
                        ? .compressed(nonce: try reader.nonce(), try HelperResult(&reader))
                        : .failed(nonce: try reader.nonce(), try Self.error(&reader)))
            }
            self = .batch(items)
        case nil: throw WireReader.Malformed(description: "a reply of unknown kind \(reader.kind)")
        }
        try reader.end()
    }

    static func format(_ name: String) throws(WireReader.Malformed) -> SourceFormat {
        guard let format = SourceFormat(rawValue: name) else { throw WireReader.Malformed(description: "an unknown source format '\(name)'") }
        return format
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

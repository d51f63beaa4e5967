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
    /// Compress these small sources, each inside the message, one after the other (see
    /// ``HelperReply/batch(_:)``).
    case compressBatch([HelperSource])
    /// The working memory the helper asked for, granted from the worker's pipeline budget.
    case grant(Int)
    /// The worker is idle: give back the memory busy moments kept.
    case trim

    fileprivate enum Kind: UInt8 {
        case setup = 1, compress, readHeader, grant, trim, start, compressBatch
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
        case .compressBatch:
            let count = try reader.int(in: 1...Self.maxBatch, "a batch of")
            var sources: [HelperSource] = []
            for _ in 0..<count {
                let source = try HelperSource(&reader)
                guard source.inline != nil else { throw WireReader.Malformed(description: "a batch's source outside the message") }
                sources.append(source)
            }
            self = .compressBatch(sources)
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
            Self.write(error, &writer)
            return writer.bytes
        case .batch(let items):
            var writer = WireWriter(kind: Kind.batch.rawValue)
            writer.int(items.count)
            for item in items {
                switch item {
                case .compressed(let result):
                    writer.bool(true)
                    result.write(&writer)
                case .failed(let error):
                    writer.bool(false)
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
        case .need: self = .need(try reader.int(in: 0...Int.max, "a need of"))
        case .compressed: self = .compressed(try HelperResult(&reader))
        case .header:
            self = .header(
                try reader.optional { (reader) throws(WireReader.Malformed) -> SourceHeader in
                    let format = try Self.format(try reader.string())
                    return SourceHeader(format: format, size: try HelperResult.size(&reader))
                })
        case .failed: self = .failed(try Self.error(&reader))
        case .batch:
            let count = try reader.int(in: 1...HelperRequest.maxBatch, "a batch of")
            var items: [HelperBatchItem] = []
            for _ in 0..<count {
                items.append(try reader.bool() ? .compressed(try HelperResult(&reader)) : .failed(try Self.error(&reader)))
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

// The result record of one job: one manifest line, one `done/NAME.json`.
import Foundation

/// What happened to one source: its outputs and timings, or why it failed.
public struct JobResult: Sendable, Codable, Equatable {
    /// Whether the job finished.
    public enum Status: String, Sendable, Codable {
        /// Every variant was stored.
        case done
        /// Nothing is reported stored; ``JobResult/error`` says why.
        case failed
        /// Nothing was done on purpose; ``JobResult/skipCode`` and ``JobResult/reason`` say why.
        case skipped
    }

    /// Why a source was left alone.
    public enum SkipCode: String, Sendable, Codable {
        /// Every output already exists from this very original (a re-run).
        case upToDate = "up_to_date"
        /// The file's first bytes are no image's, and its name does not say it is one (``ImageSignature``).
        case notAnImage = "not_an_image"
        /// A symbolic link to a directory inside a source folder: not followed, so a cycle cannot trap the scan.
        case symlinkedDirectory = "symlinked_directory"
        /// A symbolic link whose target does not exist (or cannot be reached).
        case danglingLink = "dangling_link"
        /// A FIFO, socket or device: reading it could block or never end.
        case notARegularFile = "not_a_regular_file"
    }

    /// The source's name: its path relative to its batch folder or the inbox, a file's path as given,
    /// or an object's full URL.
    public var source: String
    /// Done or failed.
    public var status: Status
    /// Why it failed, for people.
    public var error: String?
    /// Why it failed, for machines.
    public var errorCode: ImagePipeError.Code?
    /// Whether retrying may help (only present on failures).
    public var transient: Bool?
    /// Why it was skipped, for machines (only present when skipped).
    public var skipCode: SkipCode?
    /// Why it was skipped, for people (only present when skipped).
    public var reason: String?
    /// Hex SHA-256 of the source bytes.
    public var sha256: String?
    /// The source format as decoded.
    public var format: SourceFormat?
    /// The source width as displayed (after orientation); also on a skip as up to date, from what
    /// its outputs recorded.
    public var width: Int?
    /// The source height as displayed (after orientation).
    public var height: Int?
    /// The source size in bytes.
    public var bytes: Int?
    /// The ETag of a source read from object storage, as the store sent it with the bytes (without quotes).
    public var sourceETag: String?
    /// The stored variants; empty when the job failed (when skipped: the outputs found in place).
    public var variants: [VariantRecord]
    /// The stored copy of the original, when originals are stored too.
    public var original: StoredObject?
    /// What a page shows while the image loads (when done, and when skipped as up to date with
    /// outputs that recorded it).
    public var placeholder: Placeholder?
    /// The HDR gain map the original carries (when done), and whether its variants carry it.
    public var gainMap: GainMap?
    /// What the analyses found in the original: its PDQ hash, palette and provenance (when done, and
    /// when skipped as up to date with outputs that recorded them).
    public var facts: ImageFacts?
    /// Where the time went.
    public var timings: Timings
    /// How many attempts it took (watch mode retries transient failures).
    public var attempts: Int

    /// Creates a result.
    public init(
        source: String, status: Status, error: ImagePipeError? = nil, sha256: String? = nil, format: SourceFormat? = nil,
        width: Int? = nil, height: Int? = nil, bytes: Int? = nil, variants: [VariantRecord] = [],
        timings: Timings = Timings(), attempts: Int = 1
    ) {
        self.source = source
        self.status = status
        self.error = error?.reason
        self.errorCode = error?.code
        self.transient = error.map(\.isTransient)
        self.sha256 = sha256
        self.format = format
        self.width = width
        self.height = height
        self.bytes = bytes
        self.variants = variants
        self.timings = timings
        self.attempts = attempts
    }

    /// Total bytes of all stored variants (not counting a stored original).
    public var outputBytes: Int { variants.reduce(0) { $0 + $1.bytes } }

    /// The job's trace, when it is traced: its identity and its stages' spans, for whoever settles
    /// the job to end the job span. Not part of the record.
    public var trace: JobTrace?

    enum CodingKeys: String, CodingKey {
        case source, status, error, errorCode = "error_code", transient, skipCode = "skip_code", reason
        case sha256, sourceETag = "source_etag", format, width, height, bytes, variants, original, placeholder
        case gainMap = "gain_map", facts, timings, attempts
    }
}

/// One stored variant in a result: where it went, and what encoding made of it.
public struct VariantRecord: Sendable, Equatable {
    /// The variant name.
    public var name: String
    /// The key relative to the destination root.
    public var key: String
    /// The URL recorded by the storage.
    public var url: String
    /// The output format.
    public var format: OutputFormat
    /// Stored size in bytes.
    public var bytes: Int
    /// What the compressor made: size, quality (with `auto`, the one chosen for this image), score
    /// (with `auto` or `--score`), encodes (only with `auto`), whether it is the original's own
    /// bytes, frames. A skip as up to date knows the size alone, from what its output recorded.
    public var encoding: VariantEncoding
    /// What storing it replaced of another original's, when it did: a record that says so tells
    /// an application that a URL it holds now shows another picture (an edited photo's, mostly).
    public var replaced: Replacement?

    /// What an output replaced under its key.
    public enum Replacement: String, Sendable, Codable {
        /// The output of an earlier version of the same original: the same name, other bytes.
        case earlierVersion = "earlier_version"
        /// The output of another original, or an object with no recorded original (`--overwrite`).
        case anotherOriginal = "another_original"
    }

    /// Creates a record.
    public init(name: String, key: String, url: String, format: OutputFormat, bytes: Int, encoding: VariantEncoding) {
        self.name = name
        self.key = key
        self.url = url
        self.format = format
        self.bytes = bytes
        self.encoding = encoding
    }

    /// Output width in pixels.
    public var width: Int { encoding.size.width }
    /// Output height in pixels.
    public var height: Int { encoding.size.height }
}

extension VariantRecord: Codable {
    enum CodingKeys: String, CodingKey {
        case name, key, url, format, bytes, replaced
    }

    /// One object: the record's own fields and the encoding's side by side.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        key = try container.decode(String.self, forKey: .key)
        url = try container.decode(String.self, forKey: .url)
        format = try container.decode(OutputFormat.self, forKey: .format)
        bytes = try container.decode(Int.self, forKey: .bytes)
        replaced = try container.decodeIfPresent(Replacement.self, forKey: .replaced)
        encoding = try VariantEncoding(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(key, forKey: .key)
        try container.encode(url, forKey: .url)
        try container.encode(format, forKey: .format)
        try container.encode(bytes, forKey: .bytes)
        try container.encodeIfPresent(replaced, forKey: .replaced)
        try encoding.encode(to: encoder)
    }
}

/// Milliseconds spent in each stage of a job.
public struct Timings: Sendable, Codable, Equatable {
    /// Waiting for a compression slot after being accepted.
    public var queueMs: Double = 0
    /// Reading and hashing the source.
    public var readMs: Double = 0
    /// Looking up every output in the destination.
    public var checkMs: Double = 0
    /// Header check, shrink-on-load decode and colour conversion.
    public var decodeMs: Double = 0
    /// Resizing and encoding every variant.
    public var encodeMs: Double = 0
    /// From the first put starting to the last one ending.
    public var storeMs: Double = 0
    /// From acceptance to the result.
    public var totalMs: Double = 0

    /// Creates zero timings.
    public init() {}

    enum CodingKeys: String, CodingKey {
        case queueMs = "queue_ms", readMs = "read_ms", checkMs = "check_ms", decodeMs = "decode_ms", encodeMs = "encode_ms"
        case storeMs = "store_ms", totalMs = "total_ms"
    }

    /// Written to hundredths of a millisecond: a sum of clock readings is no more precise than that,
    /// and `12.000000001` in a record reads as a bug.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        for (key, value) in [
            (CodingKeys.queueMs, queueMs), (.readMs, readMs), (.checkMs, checkMs), (.decodeMs, decodeMs), (.encodeMs, encodeMs),
            (.storeMs, storeMs), (.totalMs, totalMs),
        ] {
            try container.encode((value * 100).rounded() / 100, forKey: key)
        }
    }
}

extension JobResult {
    /// A source left alone on purpose.
    public static func skipped(_ source: String, _ code: SkipCode, reason: String) -> JobResult {
        var result = JobResult(source: source, status: .skipped)
        result.skipCode = code
        result.reason = reason
        return result
    }

    /// Whether the record describes outputs a page can show: done, or skipped as up to date with
    /// every output in place and the original's size recorded with them (outputs written by an
    /// earlier imagepipe lack it).
    public var showsOutputs: Bool {
        guard !variants.isEmpty, (width ?? 0) > 0, (height ?? 0) > 0 else { return false }
        return status == .done || (status == .skipped && skipCode == .upToDate)
    }

    /// The failure as the error it was, when this result is a failure.
    public var failure: ImagePipeError? {
        guard status == .failed, let errorCode else { return nil }
        return ImagePipeError(errorCode, error ?? "")
    }

    /// The record as one line of JSON (no trailing newline), keys sorted.
    public func jsonLine() -> String {
        JSONLine.encode(self)
    }
}

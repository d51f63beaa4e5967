// The core: one source in, every variant compressed and stored, one result record out.
import Foundation

/// Turns one job into a ``JobResult``: reads and hashes the source, asks the ``ImageCompressor`` for
/// every variant, hands each to the ``StorageRepository``.
///
/// The work is split in two stages so a pipeline can run them on different queues: ``prepare(_:)``
/// (read, decode, encode: CPU-bound) and ``store(_:)`` (one call per object: I/O-bound).
/// ``process(_:)`` runs both in turn.
public struct FileHandler: Sendable {
    /// What every job produces.
    public struct Configuration: Sendable {
        /// The variants to make.
        public var variants: [VariantSpec]
        /// How keys are built.
        public var keyTemplate: KeyTemplate
        /// Limits checked before decoding.
        public var limits: CompressionLimits
        /// Cache-Control stored with every object (used by HTTP object stores).
        public var cacheControl: String?
        /// Sources up to this many bytes are read whole; larger ones are decoded from the file.
        public var inMemoryLimit: Int
        /// Whether the untouched original is stored too, under its own relative path.
        public var storeOriginal: Bool

        /// Creates a configuration; the defaults are the `web` preset and the default key template.
        public init(variants: [VariantSpec] = Preset.web, keyTemplate: KeyTemplate = .default,
                    limits: CompressionLimits = .default, cacheControl: String? = nil, inMemoryLimit: Int = 256 << 20,
                    storeOriginal: Bool = false) {
            self.variants = variants
            self.keyTemplate = keyTemplate
            self.limits = limits
            self.cacheControl = cacheControl
            self.inMemoryLimit = inMemoryLimit
            self.storeOriginal = storeOriginal
        }
    }

    /// The compressor.
    public let compressor: any ImageCompressor
    /// The storage.
    public let storage: any StorageRepository
    /// The job configuration.
    public let configuration: Configuration

    /// Creates a handler.
    public init(compressor: any ImageCompressor, storage: any StorageRepository, configuration: Configuration = .init()) {
        self.compressor = compressor
        self.storage = storage
        self.configuration = configuration
    }

    /// Reads, decodes and encodes one job; never throws, a failure is carried in the result.
    public func prepare(_ job: Job, acceptedAt: ContinuousClock.Instant = .now) -> PreparedJob {
        let clock = ContinuousClock()
        let start = clock.now
        var prepared = PreparedJob(job: job, acceptedAt: acceptedAt)
        prepared.timings.queueMs = (start - acceptedAt).milliseconds

        let source: SourceFile
        do {
            source = try SourceReader.read(job.sourcePath, inMemoryLimit: configuration.inMemoryLimit, followingLinks: job.followsLinks)
        } catch {
            prepared.failure = error
            return prepared
        }
        prepared.sha256 = source.sha256
        prepared.bytes = source.byteCount
        prepared.timings.readMs = (clock.now - start).milliseconds

        let values = KeyTemplate.Values(relativePath: job.relativePath, sha256: source.sha256)
        var keys: [String] = []
        do {
            for variant in configuration.variants {
                keys.append(try configuration.keyTemplate.key(for: values, variant: variant.name, ext: variant.format.fileExtension))
            }
            if configuration.storeOriginal { try KeyTemplate.validate(key: job.relativePath) }
        } catch {
            prepared.failure = error
            return prepared
        }

        let compressed: CompressedImage
        do {
            compressed = try compressor.compress(SourceImage(name: job.relativePath, content: source.content),
                                                 variants: configuration.variants, limits: configuration.limits)
        } catch {
            prepared.failure = error
            return prepared
        }
        prepared.format = compressed.sourceFormat
        prepared.size = compressed.sourceSize
        prepared.timings.decodeMs = compressed.decodeTime.milliseconds
        prepared.timings.encodeMs = compressed.encodeTime.milliseconds
        prepared.outputs = zip(compressed.variants, keys).map { encoded, key in
            PreparedJob.Output(
                spec: encoded.spec, size: encoded.size,
                object: StorageObject(key: key, body: encoded.data, contentType: encoded.spec.format.contentType,
                                      cacheControl: configuration.cacheControl))
        }
        if configuration.storeOriginal {
            do {
                prepared.outputs.append(try originalOutput(job, source, format: compressed.sourceFormat, size: compressed.sourceSize))
            } catch {
                prepared.failure = error
            }
        }
        return prepared
    }

    /// The untouched original as an object under its relative path.
    private func originalOutput(_ job: Job, _ source: SourceFile, format: String, size: PixelSize) throws(ImagePipeError) -> PreparedJob.Output {
        let body: Data
        switch source.content {
        case .bytes(let data):
            body = data
        case .file(let path):
            // Too large to have been read whole; map it rather than copy it onto the heap.
            do {
                body = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
            } catch {
                throw ImagePipeError(.unreadableSource, "cannot read the original again: \(FilePath.reason(of: error))")
            }
        }
        return PreparedJob.Output(spec: nil, size: size,
                                  object: StorageObject(key: job.relativePath, body: body,
                                                        contentType: Self.mediaType(ofSourceFormat: format),
                                                        cacheControl: configuration.cacheControl))
    }

    /// The media type of a source format as the compressor names it.
    public static func mediaType(ofSourceFormat format: String) -> String {
        switch format {
        case "jpeg": "image/jpeg"
        case "png": "image/png"
        case "webp": "image/webp"
        case "tiff": "image/tiff"
        case "gif": "image/gif"
        case "heic": "image/heic"
        case "avif": "image/avif"
        case "heif": "image/heif"
        default: "application/octet-stream"
        }
    }

    /// Stores one object, converting every failure to a result.
    public func store(_ object: StorageObject) -> Result<StoredObject, ImagePipeError> {
        do {
            return .success(try storage.put(object))
        } catch {
            return .failure(error.prefixed("storing \(object.key)"))
        }
    }

    /// Runs a job start to finish on the calling thread.
    public func process(_ job: Job) -> JobResult {
        let accepted = ContinuousClock.now
        let prepared = prepare(job, acceptedAt: accepted)
        let storeStart = ContinuousClock.now
        let stored = prepared.outputs.map { store($0.object) }
        return prepared.finish(stored: stored, storeTime: ContinuousClock.now - storeStart)
    }
}

/// A job after the compression stage: its encoded outputs waiting to be stored, or its failure.
public struct PreparedJob: Sendable {
    /// One output and where it goes: an encoded variant, or the original itself.
    public struct Output: Sendable {
        /// The variant; nil for the original.
        public var spec: VariantSpec?
        /// Its pixel size.
        public var size: PixelSize
        /// The object to put.
        public var object: StorageObject
    }

    /// The job.
    public var job: Job
    /// When the pipeline accepted it.
    public var acceptedAt: ContinuousClock.Instant
    /// Why it failed, if it did.
    public var failure: ImagePipeError?
    /// Source SHA-256, once read.
    public var sha256: String?
    /// Source size in bytes, once read.
    public var bytes: Int?
    /// Source format, once decoded.
    public var format: String?
    /// Source size as displayed, once decoded.
    public var size: PixelSize?
    /// The encoded outputs to store.
    public var outputs: [Output] = []
    /// Timings so far.
    public var timings = Timings()

    init(job: Job, acceptedAt: ContinuousClock.Instant) {
        self.job = job
        self.acceptedAt = acceptedAt
    }

    /// The final record once every output has been stored or has failed. The job is done only when
    /// every put succeeded; otherwise it fails with the first storage error and reports no variants.
    public func finish(stored: [Result<StoredObject, ImagePipeError>], storeTime: Duration) -> JobResult {
        var timings = self.timings
        timings.storeMs = storeTime.milliseconds
        timings.totalMs = (ContinuousClock.now - acceptedAt).milliseconds
        func result(_ status: JobResult.Status, _ error: ImagePipeError?, _ variants: [VariantRecord]) -> JobResult {
            JobResult(source: job.relativePath, status: status, error: error, sha256: sha256, format: format,
                      width: size?.width, height: size?.height, bytes: bytes, variants: variants,
                      timings: timings, attempts: job.attempt)
        }
        if let failure { return result(.failed, failure, []) }
        var records: [VariantRecord] = []
        var original: StoredObject?
        for (output, outcome) in zip(outputs, stored) {
            switch outcome {
            case .failure(let error):
                return result(.failed, error, [])
            case .success(let object):
                guard let spec = output.spec else {
                    original = object
                    continue
                }
                records.append(VariantRecord(name: spec.name, key: object.key, url: object.url,
                                             format: spec.format, width: output.size.width,
                                             height: output.size.height, bytes: object.bytes))
            }
        }
        var done = result(.done, nil, records)
        done.original = original
        return done
    }
}

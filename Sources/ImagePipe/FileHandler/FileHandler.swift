// The core: one source in, every variant compressed and stored, one result record out.
import Foundation
public import Logging

/// Turns one job into a ``JobResult``: reads and hashes the source, checks the destination, asks
/// the ``ImageCompressor`` for every variant, hands each to the ``StorageRepository``.
///
/// The work runs in three stages over one ``JobContext``, so that the ``JobPipeline`` runs each
/// where its kind of work belongs:
/// 1. ``inspect(_:reserving:)`` (blocking I/O): read and hash the source (a local file, or an
///    object downloaded through its ``SourceRepository``), name its outputs, and look each up in
///    the destination. A source whose outputs all exist from the same original is skipped here,
///    and one whose keys hold another original's outputs fails here: neither is decoded.
/// 2. ``compress(_:memory:)`` (CPU): decode once, encode every output.
/// 3. ``store(_:schedule:handedOff:completion:)`` (blocking I/O): one put per output, then the
///    result; a job that fails after some of its outputs were stored removes them again.
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
        /// Sources up to this many bytes are read whole; larger ones are kept open and decoded from the
        /// file, so jobs waiting for a compression slot do not hold their bytes.
        public var inMemoryLimit: Int
        /// Sources in object storage larger than this are refused before they are downloaded
        /// (`--max-source-bytes`); smaller ones are read whole into memory.
        public var maxSourceBytes: Int
        /// Whether the untouched original is stored too, through the key template as variant `original`.
        public var storeOriginal: Bool
        /// Whether outputs made from another original may be replaced (`--overwrite`); each is logged.
        public var overwrite: Bool
        /// Whether outputs made from an earlier version of the same original (same name, other
        /// bytes) may be replaced (`--update`), as sync tools do with changed files; each is logged.
        public var update: Bool
        /// Whether sources whose outputs are all in place are done again (`--force`).
        public var force: Bool
        /// Whether outputs of an earlier version of the same original are replaced without
        /// ``update`` when they were not served as immutable (``ExistingObject/wasServedImmutable``):
        /// on for a batch, whose sources are a library where a name is one photo over time, edited
        /// now and then; off for a queue, whose names uploaders choose, where a second `photo.jpg`
        /// is as likely someone else's picture. Each replacement is logged either way.
        public var updatesEditedOriginals: Bool
        /// Who traces jobs, when traces are exported (`OTEL_EXPORTER_OTLP_ENDPOINT`); nil traces nothing.
        public var tracer: Tracer?

        /// Creates a configuration; the defaults are the `web` preset and the default key template.
        public init(
            variants: [VariantSpec] = Preset.web, keyTemplate: KeyTemplate = .default,
            limits: CompressionLimits = .default, cacheControl: String? = nil, inMemoryLimit: Int = SourceReader.defaultInMemoryLimit,
            maxSourceBytes: Int = 256 << 20, storeOriginal: Bool = false, overwrite: Bool = false, update: Bool = false,
            force: Bool = false, updatesEditedOriginals: Bool = false
        ) {
            self.variants = variants
            self.keyTemplate = keyTemplate
            self.limits = limits
            self.cacheControl = cacheControl
            self.inMemoryLimit = inMemoryLimit
            self.maxSourceBytes = maxSourceBytes
            self.storeOriginal = storeOriginal
            self.overwrite = overwrite
            self.update = update
            self.force = force
            self.updatesEditedOriginals = updatesEditedOriginals
        }

        /// Whether an output `existing` holds, made from an earlier version of `origin`'s original
        /// (same name, other bytes), may be replaced: with ``update`` or ``overwrite`` always; with
        /// ``updatesEditedOriginals`` when it is the same file edited, read from the same place (two
        /// folders given one destination may each hold a `photo.jpg`: that is another photo), and
        /// its URL was not served as immutable.
        public func replaces(earlierVersion existing: ExistingObject, of origin: Origin) -> Bool {
            if overwrite || update { return true }
            return updatesEditedOriginals && !existing.wasServedImmutable && origin.location != nil
                && existing.origin?.location == origin.location
        }
    }

    /// The compressor.
    public let compressor: any ImageCompressor
    /// The storage.
    public let storage: any StorageRepository
    /// Where sources in object storage are read, by URL scheme.
    public let sources: [String: any SourceRepository]
    /// The job configuration.
    public let configuration: Configuration
    let logger: Logger
    /// Keys that jobs in flight in this process are writing, so two of them never write one key
    /// with different originals' pixels.
    let reservations = KeyReservations()

    /// Creates a handler; `sources` read the jobs whose sources are URLs (one repository per scheme).
    public init(
        compressor: any ImageCompressor, storage: any StorageRepository, sources: [any SourceRepository] = [],
        configuration: Configuration = .init(), logger: Logger = Logger(label: "imagepipe")
    ) {
        self.compressor = compressor
        self.storage = storage
        self.sources = Dictionary(sources.map { ($0.scheme, $0) }, uniquingKeysWith: { first, _ in first })
        self.configuration = configuration
        self.logger = logger
    }

    /// The variant name of the stored original in keys.
    public static let originalVariantName = "original"
}

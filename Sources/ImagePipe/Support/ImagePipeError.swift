// The one error type of imagepipe: a code that says whether retrying can help, and a reason for people.

/// An error raised while turning a source into variants or storing them.
///
/// The ``Code`` tells callers what to do with it: input problems are permanent (the same bytes
/// will fail the same way), storage problems may be transient and worth retrying.
public struct ImagePipeError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What went wrong, as a value that can grow new cases without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible, Codable {
        private enum Value: String, Sendable, CaseIterable {
            case unreadableSource = "unreadable_source"
            case sourceNotFound = "source_not_found"
            case sourceForbidden = "source_forbidden"
            case sourceChanged = "source_changed"
            case emptyFile = "empty_file"
            case unsupportedFormat = "unsupported_format"
            case corruptImage = "corrupt_image"
            case imageTooLarge = "image_too_large"
            case invalidKey = "invalid_key"
            case keyCollision = "key_collision"
            case notARegularFile = "not_a_regular_file"
            case encodeFailed = "encode_failed"
            case storageUnavailable = "storage_unavailable"
            case storageRejected = "storage_rejected"
            case storageFull = "storage_full"
            case leaseExpired = "lease_expired"
            case cancelled = "cancelled"
            case configuration = "configuration"
            case invalidJobOptions = "invalid_job_options"
            case decoderCrashed = "decoder_crashed"
            case jobTimeout = "job_timeout"
            case workerCrashed = "worker_crashed"
            case helperUnavailable = "helper_unavailable"
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The code with this stable name, or nil for a name imagepipe does not use.
        public init?(rawValue: String) {
            guard let value = Value(rawValue: rawValue) else { return nil }
            self.value = value
        }

        /// Every code, for documentation and tests.
        public static var all: [Code] { Value.allCases.map(Code.init) }

        public init(from decoder: any Decoder) throws {
            let name = try decoder.singleValueContainer().decode(String.self)
            guard let code = Code(rawValue: name) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "unknown error code '\(name)'"))
            }
            self = code
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(description)
        }

        /// The source file could not be read (missing, permissions, I/O error).
        public static let unreadableSource = Code(.unreadableSource)
        /// A source in object storage does not exist (HTTP 404): listed by mistake, or removed since
        /// the listing.
        public static let sourceNotFound = Code(.sourceNotFound)
        /// The object store refuses to hand a source out (HTTP 401 or 403): permissions or credentials.
        public static let sourceForbidden = Code(.sourceForbidden)
        /// A local source was written to between its hashing and its decoding; what was made from
        /// it is not kept. Trying again reads it as it is then.
        public static let sourceChanged = Code(.sourceChanged)
        /// The source file has no bytes.
        public static let emptyFile = Code(.emptyFile)
        /// The bytes are not an image format imagepipe accepts, or its loader is blocked.
        public static let unsupportedFormat = Code(.unsupportedFormat)
        /// The image is truncated or its data is damaged.
        public static let corruptImage = Code(.corruptImage)
        /// The image declares more pixels than the configured limit, or a source in object storage is
        /// larger than `--max-source-bytes`.
        public static let imageTooLarge = Code(.imageTooLarge)
        /// An output key would escape the destination or is otherwise unusable.
        public static let invalidKey = Code(.invalidKey)
        /// An output key is already taken by another original's object (or one imagepipe did not write).
        public static let keyCollision = Code(.keyCollision)
        /// The source is a symbolic link, a FIFO, a device or a directory, not a regular file.
        public static let notARegularFile = Code(.notARegularFile)
        /// The encoder refused the decoded image.
        public static let encodeFailed = Code(.encodeFailed)
        /// The storage could not be reached or failed in a way that may pass (timeouts, 5xx, disk full).
        public static let storageUnavailable = Code(.storageUnavailable)
        /// The storage refused the object for good (permissions, bad credentials, 4xx).
        public static let storageRejected = Code(.storageRejected)
        /// The destination has no space left (disk full, quota); retrying after space is freed helps.
        public static let storageFull = Code(.storageFull)
        /// A worker's claim on a queued job lapsed before it finished: the worker died, stalled or
        /// lost its database. Another worker runs the job again.
        public static let leaseExpired = Code(.leaseExpired)
        /// The job was cancelled, or its claim lost, while it ran: it stopped at its next safe point.
        public static let cancelled = Code(.cancelled)
        /// The command line or environment is wrong; nothing was processed.
        public static let configuration = Code(.configuration)
        /// A queued job's options cannot be used (a focal point that is not two fractions from 0 to 1).
        public static let invalidJobOptions = Code(.invalidJobOptions)

        /// The helper process decoding the image died (a signal, or an exit it did not choose) while it
        /// worked on this job. A crash is usually the image's doing: the first one may be retried, a
        /// second of the same job is final (see ``isDecoderFailure``).
        public static let decoderCrashed = Code(.decoderCrashed)
        /// The image work ran past `--job-timeout`: its helper process was killed. Counted as a crash.
        public static let jobTimeout = Code(.jobTimeout)
        /// Workers died while holding this queue-directory job more often than `--max-attempts`
        /// allows: it is set aside instead of killing the next worker too.
        public static let workerCrashed = Code(.workerCrashed)

        /// No image helper could be started for the job (the system refused a process, or a new helper
        /// died before it was ready): the machine's trouble, not the image's, so it may pass and is not
        /// counted as a crash.
        public static let helperUnavailable = Code(.helperUnavailable)

        /// Whether the helper doing the image work died or was stopped on this job: a crash or a
        /// time-out, counted together towards the one retry such a job gets.
        public var isDecoderFailure: Bool { self == .decoderCrashed || self == .jobTimeout }

        /// The stable machine-readable name, as written to manifests.
        public var description: String { value.rawValue }

        /// Whether the same job may succeed if tried again later.
        public var isTransient: Bool {
            switch value {
            // A decoder failure may be the machine's (the OOM killer, a stall): one retry, and a
            // queue that sees a second on the same job ends it (WorkerStateMachine.decide).
            case .storageUnavailable, .storageFull, .leaseExpired, .sourceChanged, .decoderCrashed, .jobTimeout, .helperUnavailable: true
            default: false
            }
        }
    }

    /// What went wrong.
    public let code: Code
    /// A sentence for people: what failed and why.
    public let reason: String

    /// Creates an error with a code and a reason.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// Whether retrying the job later may succeed.
    public var isTransient: Bool { code.isTransient }

    public var description: String { reason }

    /// The same error with context (a file or key name) put in front of the reason.
    public func prefixed(_ context: String) -> ImagePipeError {
        ImagePipeError(code, "\(context): \(reason)")
    }
}

extension ImagePipeError {
    /// A configuration problem: exits with status 2 from the command line.
    public static func configuration(_ reason: String) -> ImagePipeError {
        ImagePipeError(.configuration, reason)
    }
}

// The records a worker leaves beside finished originals: NAME.json in done/, NAME.error.json in failed/.
import Foundation
public import ImagePipe

/// One attempt at a job that did not succeed.
public struct AttemptRecord: Sendable, Codable, Equatable {
    /// Which attempt, from 1.
    public var attempt: Int
    /// Why it failed.
    public var error: String
    /// The error code.
    public var errorCode: ImagePipeError.Code?
    /// Whether a retry could help.
    public var transient: Bool
    /// When it ended: RFC 3339 in UTC with milliseconds.
    public var at: String

    enum CodingKeys: String, CodingKey {
        case attempt, error, errorCode = "error_code", transient, at
    }
}

/// `failed/NAME.error.json`: why a job failed for good, with every attempt's error.
///
/// The record is the last attempt's result and the history before it; the source, the final
/// reason, its code and the attempts are the result's own, written at the top as well so that a
/// reader (`queue status`, `jq .error`) finds them without looking inside.
public struct FailureRecord: Sendable, Equatable {
    /// Every failed attempt, oldest first.
    public var history: [AttemptRecord]
    /// The last attempt's result record.
    public var result: JobResult

    /// A record of `result` after `history`.
    public init(history: [AttemptRecord], result: JobResult) {
        self.history = history
        self.result = result
    }

    /// The original's path relative to the inbox.
    public var source: String { result.source }
    /// The final reason; for a delivery that is no image put here by an earlier version, the skip's reason.
    public var error: String { result.error ?? result.reason ?? "unknown error" }
    /// The final error code.
    public var errorCode: ImagePipeError.Code? { result.errorCode }
    /// For a delivery that is no image (`not_an_image`), which earlier versions put in `failed/`
    /// with its result recorded as skipped (one now ends in `done/`): no attempt failed, and
    /// ``error`` holds the skip's reason. Still read, so such records keep their meaning.
    public var skipCode: JobResult.SkipCode? { result.skipCode }
    /// Attempts made.
    public var attempts: Int { result.attempts }

    /// One line of JSON with a final newline, in the style of the `done/` records.
    func encoded() -> Data {
        Data((JSONLine.encode(self) + "\n").utf8)
    }
}

extension FailureRecord: Codable {
    enum CodingKeys: String, CodingKey {
        case source, error, errorCode = "error_code", skipCode = "skip_code", attempts, history, result
    }

    /// Read from its result and history: the fields at the top are the result's, written for readers.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        history = try container.decode([AttemptRecord].self, forKey: .history)
        result = try container.decode(JobResult.self, forKey: .result)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(source, forKey: .source)
        try container.encode(error, forKey: .error)
        try container.encodeIfPresent(errorCode, forKey: .errorCode)
        try container.encodeIfPresent(skipCode, forKey: .skipCode)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(history, forKey: .history)
        try container.encode(result, forKey: .result)
    }
}

extension AttemptRecord {
    /// The record of a failed result.
    public init(_ result: JobResult) {
        self.init(
            attempt: result.attempts, error: result.error ?? "unknown error", errorCode: result.errorCode,
            transient: result.transient ?? false, at: JSONLine.timestamp())
    }
}

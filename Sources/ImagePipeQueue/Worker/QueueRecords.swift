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
public struct FailureRecord: Sendable, Codable, Equatable {
    /// The original's path relative to the inbox.
    public var source: String
    /// The final reason.
    public var error: String
    /// The final error code.
    public var errorCode: ImagePipeError.Code?
    /// For a delivery that is no image (`not_an_image`), which the result records as skipped: no
    /// attempt failed, and ``error`` holds the skip's reason.
    public var skipCode: JobResult.SkipCode? = nil
    /// Attempts made.
    public var attempts: Int
    /// Every failed attempt, oldest first.
    public var history: [AttemptRecord]
    /// The last attempt's result record.
    public var result: JobResult

    enum CodingKeys: String, CodingKey {
        case source, error, errorCode = "error_code", skipCode = "skip_code", attempts, history, result
    }

    /// One line of JSON with a final newline, in the style of the `done/` records.
    func encoded() -> Data {
        Data((JSONLine.encode(self) + "\n").utf8)
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

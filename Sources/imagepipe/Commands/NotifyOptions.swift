// Options of batch and watch that tell an application over HTTP when each job is done: --notify-url and its limits.
import ArgumentParser
import Foundation
import ImagePipe

/// Where and how long finished jobs are notified.
struct NotifyOptions: ParsableArguments {
    @Option(
        name: .customLong("notify-url"),
        help: ArgumentHelp(
            "POST each finished job's result record (done, skipped, failed, cancelled) to this http(s) URL, signed with "
                + "HMAC-SHA256 under IMAGEPIPE_NOTIFY_SECRET in X-Imagepipe-Signature (docs/notifications.md).",
            valueName: "url"))
    var notifyURL: String?

    @Option(
        name: .customLong("notify-deadline"),
        help: ArgumentHelp(
            "How long after a job finished its notification is retried (5xx, 408, 429, timeouts, connection errors): "
                + "90s, 10m, 1h.", valueName: "duration"))
    var notifyDeadline: String = "5m"

    @Option(
        name: .customLong("notify-timeout"),
        help: ArgumentHelp(
            "How long one notification attempt may take, connecting and answering included: 10s, 1m.", valueName: "duration"))
    var notifyTimeout: String = "10s"

    func validate() throws {
        do {
            _ = try Duration.parse(notifyDeadline, what: "--notify-deadline")
            let timeout = try Duration.parse(notifyTimeout, what: "--notify-timeout")
            guard timeout >= .seconds(1) else { throw ValidationError("--notify-timeout must be at least 1s") }
        } catch let error as ImagePipeError {
            throw ValidationError(error.reason)
        }
    }

    /// The parsed deadline (checked in ``validate()``).
    var deadline: Duration { (try? Duration.parse(notifyDeadline, what: "--notify-deadline")) ?? .seconds(300) }

    /// The parsed attempt timeout (checked in ``validate()``).
    var timeout: Duration { (try? Duration.parse(notifyTimeout, what: "--notify-timeout")) ?? .seconds(10) }
}

// Counts and totals of a finished batch, and the summary lines printed at its end.
import Foundation

/// What a batch did.
public struct BatchSummary: Sendable, Equatable {
    /// Sources found: every file and object listed, images or not (their bytes tell).
    public var total = 0
    /// Images whose every variant was stored.
    public var done = 0
    /// Images that failed.
    public var failed = 0
    /// Sources left alone: outputs already up to date, no images by their bytes, links not followed.
    public var skipped = 0
    /// The skipped sources by why.
    public var skippedBy: [JobResult.SkipCode: Int] = [:]
    /// Hidden names the folders held, left out unread (``SourceScanner/isHidden(_:)``): not
    /// sources, so not in `total`, but said, so a name like `..%2Fx.jpg` is not lost unseen.
    public var hidden = 0
    /// Bytes of the sources read, done or failed.
    public var bytesIn = 0
    /// Bytes of the sources that were done: the base of the compression ratio.
    public var bytesInDone = 0
    /// Bytes of all stored variants.
    public var bytesOut = 0
    /// Wall time from the scan to the last result.
    public var wallTime: Duration = .zero
    /// Whether the batch was stopped (Ctrl-C) before every image was started.
    public var interrupted = false
    /// Why the batch halted before starting every image: a store stayed unreachable.
    public var halted: ImagePipeError?
    /// Images a halted batch did not start: no result and no manifest line; the next run does them.
    public var notStarted = 0

    /// Creates an empty summary.
    public init() {}

    /// Adds one finished job.
    public mutating func add(_ result: JobResult) {
        switch result.status {
        case .done:
            done += 1
            bytesIn += result.bytes ?? 0
            bytesInDone += result.bytes ?? 0
            bytesOut += result.outputBytes
        case .failed:
            failed += 1
            bytesIn += result.bytes ?? 0
        case .skipped:
            skipped += 1
            if let code = result.skipCode { skippedBy[code, default: 0] += 1 }
        }
    }

    /// Whether not one source was an image: none done, failed or up to date.
    public var foundNoImage: Bool { done + failed + skippedBy[.upToDate, default: 0] == 0 }

    /// Images done per second of wall time: failures and skips are no work done, and counting them
    /// made a batch of failures look fast.
    public var imagesPerSecond: Double {
        let seconds = wallTime.milliseconds / 1000
        return seconds > 0 ? Double(done) / seconds : 0
    }

    /// Output bytes over input bytes of the done images.
    public var ratio: Double { bytesInDone > 0 ? Double(bytesOut) / Double(bytesInDone) : 0 }

    /// The summary as printed at the end of a batch, e.g. `3 done, 1 failed, 2 skipped (1 dangling_link,
    /// 1 not_an_image), 1 hidden left out in 1.20 s (3.33 images/s)` and `4.1 MB in (1.0 MB of it failed) → 900.0 kB out (ratio 0.290)`.
    public var lines: [String] {
        let seconds = wallTime.milliseconds / 1000
        var first = (interrupted ? "interrupted after " : "") + "\(done) done, \(failed) failed"
        if skipped > 0 {
            let reasons = skippedBy.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.value) \($0.key.rawValue)" }
            first += ", \(skipped) skipped (\(reasons.joined(separator: ", ")))"
        }
        if hidden > 0 { first += ", \(hidden) hidden left out" }
        first += String(format: " in %.2f s", seconds)
        if done > 0 { first += String(format: " (%.2f images/s)", imagesPerSecond) }
        let halt = halted.map { halted in
            "halted: \(halted.code) (\(halted.reason)); \(notStarted) image(s) not started: images start largest first, not in "
                + "path order, so those not started are the smallest (the manifest lists what was done); run the batch again once "
                + "the store answers"
        }
        // A run that read no image's bytes (everything up to date, or failures found before reading,
        // as a key collision is) has nothing to say about bytes: one line says all there is.
        guard bytesIn > 0 else { return [first] + (halt.map { [$0] } ?? []) }
        var second = "\(Self.formatBytes(bytesIn)) in"
        if bytesIn > bytesInDone { second += " (\(Self.formatBytes(bytesIn - bytesInDone)) of it failed)" }
        second += " → \(Self.formatBytes(bytesOut)) out"
        if done > 0 { second += String(format: " (ratio %.3f)", ratio) }
        return [first, second] + (halt.map { [$0] } ?? [])
    }

    /// Bytes in B, kB, MB or GB (powers of 1000).
    public static func formatBytes(_ bytes: Int) -> String {
        let value = Double(bytes)
        switch value {
        case ..<1000: return "\(bytes) B"
        case ..<1e6: return String(format: "%.1f kB", value / 1e3)
        case ..<1e9: return String(format: "%.1f MB", value / 1e6)
        default: return String(format: "%.2f GB", value / 1e9)
        }
    }
}

// Times and ages typed after `queue` and `enqueue`: `--run-at` (RFC 3339 or `+2h`), `--older-than` and `--keep-done` (`12h`, `7d`).
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeQueue

/// Parses the time options of the queue commands; a value that does not parse is refused with why.
enum TimeArgument {
    /// `--run-at`: `+DURATION` (a unit required: `+90s`, `+30m`, `+2h`, `+1d`), or a time with its
    /// zone (`2025-06-01T09:00:00Z`, `2025-06-01T11:00:00+02:00`, fractions of a second allowed).
    static func runAt(_ text: String) throws -> JobRunAt {
        if text.hasPrefix("+") {
            return .after(try duration(String(text.dropFirst()), option: "--run-at"))
        }
        for style in [Date.ISO8601FormatStyle(includingFractionalSeconds: true), Date.ISO8601FormatStyle()] {
            if let date = try? style.parse(text) { return .at(date) }
        }
        throw ValidationError("--run-at '\(text)' is neither +DURATION (+90s, +2h, +1d) nor a time with its zone (2025-06-01T09:00:00Z)")
    }

    /// An age: a number with `s`, `m`, `h`, `d` or `w`; a bare number is days, as `--retention`
    /// and `queue prune --older-than` always took.
    static func age(_ text: String, option: String) throws -> Duration {
        try duration(text, option: option, bareUnitSeconds: 86_400)
    }

    private static func duration(_ text: String, option: String, bareUnitSeconds: Double? = nil) throws -> Duration {
        do {
            return try Duration.parse(text, what: option, bareUnitSeconds: bareUnitSeconds)
        } catch {
            throw ValidationError(error.reason)
        }
    }
}

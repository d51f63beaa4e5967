// Durations as people type them on the command line: `90s`, `30m`, `12h`, `7d`.
import Foundation

extension Duration {
    /// The units a typed duration may end in, and their length in seconds.
    static let typedUnits: [(suffix: String, seconds: Double)] = [("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("w", 7 * 86_400)]

    /// Parses a number followed by `s`, `m`, `h`, `d` or `w` (`90s`, `1.5h`, `7d`); a bare number is
    /// taken in `bareUnitSeconds` when given (days, for options that took days before they took
    /// units), and refused otherwise.
    ///
    /// - Parameter what: the option, for the reason of an error (`--older-than`).
    /// - Throws: a configuration error naming `what`, the text and why.
    public static func parse(_ text: String, what: String, bareUnitSeconds: Double? = nil) throws(ImagePipeError) -> Duration {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var number = Substring(trimmed)
        var unit = bareUnitSeconds
        if let typed = typedUnits.first(where: { trimmed.hasSuffix($0.suffix) }) {
            number = number.dropLast(typed.suffix.count)
            unit = typed.seconds
        }
        guard let unit else {
            throw .configuration("\(what) '\(text)' needs a unit: s, m, h, d or w (e.g. 90s, 30m, 12h, 7d)")
        }
        guard let value = Double(number), value.isFinite else {
            throw .configuration("\(what) '\(text)' is not a duration: a number with s, m, h, d or w (e.g. 90s, 30m, 12h, 7d)")
        }
        guard value >= 0 else { throw .configuration("\(what) '\(text)' cannot be negative") }
        // Beyond a century is a typing mistake, and would overflow timestamps.
        guard value * unit <= 100 * 365 * 86_400 else { throw .configuration("\(what) '\(text)' is longer than a century") }
        return .milliseconds((value * unit * 1000).rounded())
    }
}

// Durations as the numbers logs, records and C APIs want: milliseconds, seconds, `1.25 s`.
public import Foundation

extension Duration {
    /// Milliseconds, rounded to microseconds.
    public var milliseconds: Double {
        let (seconds, attoseconds) = components
        return ((Double(seconds) * 1000 + Double(attoseconds) / 1e15) * 1000).rounded() / 1000
    }

    /// Seconds as a TimeInterval.
    public var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// Seconds with two decimals, e.g. `1.25 s`.
    public var formattedSeconds: String { String(format: "%.2f s", timeInterval) }
}

// Waiting in tests for something another thread or process does: polling against a deadline.
import Foundation

/// Polls `condition` every 10 ms until it holds or `seconds` pass, and returns its last value.
///
/// The deadline only keeps a broken test from hanging; it is not a measurement.
@discardableResult
public func eventually(seconds: Double = 60, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return condition()
}

/// Suspends (without holding a thread of the cooperative pool) every 10 ms until `condition` holds
/// or `seconds` pass, and returns its last value.
@discardableResult
public func eventually(seconds: Double = 60, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

// The keys that jobs in flight in this process are writing, so two of them never write one key with different pixels.
import Synchronization

/// Output keys held by the jobs of one process between their inspection and their result.
///
/// The destination check alone cannot see a job that has not stored its outputs yet: `a.jpg` and
/// `a.png` delivered together would both find `a-large.jpg` free. Jobs of the same original (a
/// re-delivery of the same bytes) share keys; jobs of different originals cannot. A key that has been
/// shared is never removed by a failing job's clean-up: the other job may have reported it done.
final class KeyReservations: Sendable {
    private struct Holder {
        var origin: Origin
        var count: Int
        var shared: Bool
    }

    private let held = Mutex<[String: Holder]>([:])

    /// Reserves every key for `origin`, or none: returns the first key another original holds.
    func reserve(_ keys: [String], for origin: Origin) -> (key: String, holder: Origin)? {
        held.withLock { held in
            for key in keys {
                if let holder = held[key], !origin.isSameOriginal(as: holder.origin) { return (key, holder.origin) }
            }
            for key in keys {
                var holder = held[key] ?? Holder(origin: origin, count: 0, shared: false)
                holder.count += 1
                holder.shared = holder.shared || holder.count > 1
                held[key] = holder
            }
            return nil
        }
    }

    /// Whether another job of the same original has held `key` while it was reserved.
    func isShared(_ key: String) -> Bool {
        held.withLock { $0[key]?.shared ?? false }
    }

    /// Gives keys back.
    func release(_ keys: [String]) {
        guard !keys.isEmpty else { return }
        held.withLock { held in
            for key in keys {
                guard var holder = held[key] else { continue }
                holder.count -= 1
                held[key] = holder.count > 0 ? holder : nil
            }
        }
    }
}

// Reads the recorded origin of every listed object of a destination, several look-ups at once.
import Foundation
import Synchronization

/// The origins of a destination's objects, read with ``StorageRepository/existing(_:)`` (a `stat`
/// and an extended attribute, or a HEAD), `concurrency` at once on Dispatch threads: one at a time,
/// a bucket of ten thousand outputs costs ten thousand round trips end to end.
public enum OriginLookup {
    /// Each key with its origin (nil: no origin recorded), in the keys' order; keys whose object
    /// vanished since the listing are left out.
    ///
    /// - Throws: the first look-up that failed (naming the object), after the others stopped.
    public static func origins(
        of keys: [String], in storage: any StorageRepository, concurrency: Int
    ) throws(ImagePipeError) -> [(key: String, origin: Origin?)] {
        let state = Shared()
        let group = DispatchGroup()
        let workers = max(1, min(concurrency, keys.count))
        for _ in 0..<workers {
            DispatchQueue.global(qos: .userInitiated).async(group: group) {
                while state.failure.withLock({ $0 == nil }) {
                    let index = state.next.add(1, ordering: .relaxed).oldValue
                    guard index < keys.count else { return }
                    do throws(ImagePipeError) {
                        if let object = try storage.existing(keys[index]) { state.found.withLock { $0[index] = .some(object.origin) } }
                    } catch {
                        state.failure.withLock { $0 = $0 ?? error }
                    }
                }
            }
        }
        group.wait()
        if let error = state.failure.withLock({ $0 }) { throw error }
        let origins = state.found.withLock { $0 }
        return keys.indices.compactMap { index in origins[index].map { (keys[index], $0) } }
    }

    /// What the look-ups share: the next key to take, what was found, the first failure.
    private final class Shared: Sendable {
        let next = Atomic<Int>(0)
        let found = Mutex<[Int: Origin?]>([:])
        let failure = Mutex<ImagePipeError?>(nil)
    }
}

// What `imagepipe prune` needs of a destination beyond puts and look-ups: every key it holds, and removing many at once.

/// A destination that can list what it holds and remove objects in batches, so outputs whose
/// original is gone can be found and removed (see ``PrunePlan``).
///
/// Both methods block until done; they are called from a Dispatch queue, never from Swift's
/// cooperative pool.
public protocol PrunableStorage: StorageRepository {
    /// Every object's key under the destination, relative to it (the destination's prefix taken
    /// off), asking the store for at most `pageSize` keys a request where it pages its listings.
    /// Files imagepipe writes only while a put runs (`.imagepipe-*.tmp`) are left out.
    ///
    /// - Throws: when any part of the destination cannot be listed: a partial listing would make
    ///   the objects left out look kept, never deleted, but it is reported rather than passed over.
    func allKeys(pageSize: Int) throws(ImagePipeError) -> [String]

    /// Removes `keys`, at most `batchSize` a request where the store removes several at once.
    ///
    /// - Returns: the keys that were not removed, each with the store's reason; the others are gone.
    /// - Throws: when a request as a whole failed (after its retries): the keys of the batches not
    ///   yet sent are then untouched, and the error names those the batches before did not remove.
    func delete(_ keys: [String], batchSize: Int) throws(ImagePipeError) -> [KeyFailure]

    /// Whether one request removes several objects: a prune then checks and removes a request's
    /// worth at a time, else one object at a time (see ``PruneSurvey``).
    var removesSeveralAtOnce: Bool { get }
}

/// A key a batch removal did not remove, and why.
public struct KeyFailure: Sendable, Hashable {
    /// The key relative to the destination.
    public var key: String
    /// Why, as the store said it.
    public var reason: String

    /// Creates a failure record.
    public init(key: String, reason: String) {
        self.key = key
        self.reason = reason
    }
}

extension KeyFailure {
    /// Hands `keys` to `removeBatch` at most `size` at a time, in order, and gathers what each call
    /// did not remove: the loop of the stores that remove several objects a request.
    ///
    /// - Throws: the error of a call that failed as a whole, after which no batch is sent; it also
    ///   names the keys the calls before it did not remove, which would otherwise go unreported.
    public static func removingInBatches(
        _ keys: [String], of size: Int, _ removeBatch: ([String]) throws(ImagePipeError) -> [KeyFailure]
    ) throws(ImagePipeError) -> [KeyFailure] {
        let size = max(1, size)
        var failures: [KeyFailure] = []
        for start in stride(from: 0, to: keys.count, by: size) {
            do {
                failures += try removeBatch(Array(keys[start..<min(start + size, keys.count)]))
            } catch {
                guard !failures.isEmpty else { throw error }
                throw ImagePipeError(
                    error.code,
                    "\(error.reason); the batches before it did not remove: "
                        + failures.map { "\($0.key) (\($0.reason))" }.joined(separator: "; "))
            }
        }
        return failures
    }
}

extension PrunableStorage {
    public var removesSeveralAtOnce: Bool { true }

    /// Removes the keys one request each, for stores without a batch removal: a key whose removal
    /// fails is reported and the others still go.
    public func deleteOneByOne(_ keys: [String]) -> [KeyFailure] {
        var failures: [KeyFailure] = []
        for key in keys {
            do {
                try delete(key)
            } catch {
                failures.append(KeyFailure(key: key, reason: error.reason))
            }
        }
        return failures
    }
}

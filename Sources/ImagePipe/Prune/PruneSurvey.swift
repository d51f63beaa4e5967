// The order of a prune's looks, and the check before each deletion, that keep a batch writing into the destination meanwhile from losing outputs.

/// How a prune looks at a destination while a batch (or a worker) may be writing into it: the
/// destination first, the sources after, and each output looked up again just before it goes.
///
/// - An output a batch writes after the listing is not among the objects judged. One written before
///   it was made from a source the batch had already read, which the later look at the sources
///   finds: it is kept. (Looking at the sources first, a source added after that look, with an
///   output written before the listing, would make its output look orphaned.)
/// - An output judged stale (`changed`, or an orphan) that a batch writes again before the deletion
///   records another origin by then: it is left, and reported, since it is not what was judged.
///
/// What remains is the time between an output's last look-up and its removal: a batch writing that
/// same key within it loses that output (the next batch makes it again). Outputs are looked up and
/// removed a slice at a time (one key for a directory, one removal request's worth for a store), so
/// that time is one `unlink`, or one slice's look-ups and its request, however many outputs go. And
/// an original deleted and then put back with the same bytes while the prune runs gives its outputs
/// the origin they were judged by, so they still go. A prune run while no batch writes into the
/// destination has no race at all.
public enum PruneSurvey {
    /// The plan for `storage`'s objects: every key listed and its origin read, then `scan` run for
    /// the sources as they are now, then each object judged against them and their `places`.
    ///
    /// - Returns: the plan and what `scan` returned beside the sources' digests.
    public static func plan<Scan>(
        of storage: any PrunableStorage, pageSize: Int, lookups: Int, places: SourcePlaces, variants: Set<String>,
        scan: () throws(ImagePipeError) -> (Scan, SourceDigests)
    ) throws(ImagePipeError) -> (plan: PrunePlan, scan: Scan) {
        let keys = try storage.allKeys(pageSize: pageSize)
        let objects = try OriginLookup.origins(of: keys, in: storage, concurrency: lookups)
        let (scanned, digests) = try scan()
        return (PrunePlan(objects: objects, places: places, sources: digests, variants: variants), scanned)
    }

    /// What a deletion did beyond removing objects.
    public struct Deletion: Sendable {
        /// Keys the store did not remove, with its reasons.
        public var failures: [KeyFailure] = []
        /// Outputs left because they record another origin than the one judged: written again
        /// since the plan was made.
        public var rewritten: [PrunePlan.Entry] = []
        /// Outputs that were gone already when looked up again (removed by someone else).
        public var vanished: [PrunePlan.Entry] = []
    }

    /// Removes the plan's deletions, each only if it still records the origin it was judged by,
    /// looking up and removing `batchSize` of them at a time (one at a time for a store that
    /// removes them one by one, ``PrunableStorage/removesSeveralAtOnce``).
    ///
    /// - Throws: when a look-up fails or a removal request fails as a whole (see
    ///   ``PrunableStorage/delete(_:batchSize:)``); nothing more is removed after it, and the error
    ///   names the keys the slices before it did not remove.
    public static func delete(
        _ plan: PrunePlan, from storage: any PrunableStorage, batchSize: Int, lookups: Int
    ) throws(ImagePipeError) -> Deletion {
        let slice = storage.removesSeveralAtOnce ? max(1, batchSize) : 1
        let judged = Dictionary(plan.deletions.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        var deletion = Deletion()
        deletion.failures = try KeyFailure.removingInBatches(plan.deletions.map(\.key), of: slice) {
            (keys: [String]) throws(ImagePipeError) -> [KeyFailure] in
            let current = try OriginLookup.origins(of: keys, in: storage, concurrency: lookups)
            let now = Dictionary(current.map { ($0.key, $0.origin) }, uniquingKeysWith: { first, _ in first })
            var unchanged: [String] = []
            for key in keys {
                guard let entry = judged[key] else { continue }
                guard let origin = now[key] else {
                    deletion.vanished.append(entry)
                    continue
                }
                if origin == entry.origin { unchanged.append(key) } else { deletion.rewritten.append(entry) }
            }
            return try storage.delete(unchanged, batchSize: slice)
        }
        return deletion
    }
}

extension PruneSurvey.Deletion {
    /// The summary of a prune with `--delete`: the plan's, saying `deleted` when every output to
    /// delete went; else the plan's `to delete` and then how many went, were left and failed.
    public func summary(of plan: PrunePlan) -> String {
        guard !rewritten.isEmpty || !failures.isEmpty else { return plan.summary(deleted: true) }
        let gone = plan.deletions.count - rewritten.count - failures.count
        var parts = ["\(gone) deleted"]
        if !rewritten.isEmpty { parts.append("\(rewritten.count) left, written again since they were judged") }
        if !failures.isEmpty { parts.append("\(failures.count) could not be deleted") }
        return plan.summary(deleted: false) + ": " + parts.joined(separator: ", ")
    }
}

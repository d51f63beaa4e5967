// What `imagepipe prune` would do with each object of a destination, and why: kept, deleted as an orphan, or left alone.

/// The verdict on every object of a destination: an output whose original is gone, changed, or
/// whose variant is no longer made is to be deleted; every other output is kept; an output made
/// from other sources than those given, and an object without a recorded origin (not written by
/// imagepipe), are left alone whatever they are.
///
/// Judged from each object's ``Origin`` alone (where its original lies, its name and SHA-256, its
/// variant) and the sources as they are now, so nothing about how the outputs were keyed needs to be known.
public struct PrunePlan: Sendable {
    /// What happens to one object.
    public enum Verdict: String, Sendable, CaseIterable {
        /// Its original is among the sources with the same bytes, and its variant is still made.
        case keep
        /// No source has its original's name, and none has its bytes under another name.
        case orphaned
        /// A source of its original's name has other bytes now: a re-run makes it anew.
        case changed
        /// Its variant is no longer among those asked for.
        case droppedVariant = "dropped-variant"
        /// No origin recorded: not imagepipe's (or older than origins), never touched.
        case foreign
        /// Its original lies outside the sources given (another folder writing under the same
        /// prefix), or it records no place to tell by: never touched, whatever its variant.
        case otherSources = "other-sources"

        /// Whether the object goes.
        public var deletes: Bool { self == .orphaned || self == .changed || self == .droppedVariant }
    }

    /// One object and its verdict.
    public struct Entry: Sendable, Hashable {
        /// Its key relative to the destination.
        public var key: String
        public var verdict: Verdict
        /// Why, for people: names the original (and what was found instead).
        public var reason: String
        /// The origin it was judged by (nil for a foreign object).
        public var origin: Origin?
    }

    /// Every object in key order.
    public var entries: [Entry]
    /// Why the verdicts may be wrong: sources that could not be read (their outputs are kept).
    /// A plan with any is not complete, and `--delete` refuses it.
    public var problems: [String]
    /// The variant names the objects record, to tell a variant dropped from one forgotten: when
    /// none of them is among those given, the variants given are likely not the batch's.
    public var recordedVariants: Set<String>

    /// Judges `objects` (each key with its origin, nil for none) against the sources (where they
    /// lie, and what they hold) and the variants asked for, by name (`original` counts as one when
    /// the originals are kept too).
    public init(objects: [(key: String, origin: Origin?)], places: SourcePlaces, sources: SourceDigests, variants: Set<String>) {
        entries = []
        var problems: [String] = []
        for (key, origin) in objects.sorted(by: { $0.key < $1.key }) {
            let (verdict, reason) = Self.judge(origin, places: places, sources: sources, variants: variants, problems: &problems)
            entries.append(Entry(key: key, verdict: verdict, reason: reason, origin: origin))
        }
        self.problems = problems
        recordedVariants = Set(objects.compactMap { $0.origin?.variantName })
    }

    /// The objects to delete, in key order.
    public var deletions: [Entry] { entries.filter { $0.verdict.deletes } }

    /// How many objects got each verdict.
    public func count(_ verdict: Verdict) -> Int { entries.count(where: { $0.verdict == verdict }) }

    /// `N outputs kept, M to delete (orphaned: a, changed: b, dropped variant: c), left alone (made
    /// from other sources: o, foreign: f)`, with `deleted` for `to delete` once they are gone.
    public func summary(deleted: Bool) -> String {
        let gone = count(.orphaned) + count(.changed) + count(.droppedVariant)
        return "\(count(.keep)) outputs kept, \(gone) \(deleted ? "deleted" : "to delete") (orphaned: \(count(.orphaned)), "
            + "changed: \(count(.changed)), dropped variant: \(count(.droppedVariant))), "
            + "left alone (made from other sources: \(count(.otherSources)), foreign: \(count(.foreign)))"
    }

    /// The outputs left alone because they record no place their original was read from.
    public var unplaced: [Entry] { entries.filter { $0.verdict == .otherSources && $0.reason.hasPrefix(Self.unplacedReason) } }

    private static let unplacedReason = "records no place its original was read from"

    private static func judge(
        _ origin: Origin?, places: SourcePlaces, sources: SourceDigests, variants: Set<String>, problems: inout [String]
    ) -> (Verdict, String) {
        guard let origin else { return (.foreign, "no recorded original: not written by imagepipe") }
        let original = "'\(origin.source)'"
        // First of all: an output of a folder that was not given (another batch writing under the
        // same prefix) is none of this prune's business, whatever its variants or names are.
        switch places.placement(of: origin) {
        case .among:
            break
        case .elsewhere(let location):
            return (.otherSources, "\(original) was read from \(location), which is not among the sources")
        case .unknown:
            return (.otherSources, "\(unplacedReason) (\(original)), so it cannot be told to be among the sources")
        }
        // An output written before variants were recorded cannot be judged by its variant.
        if let name = origin.variantName, !variants.contains(name) {
            return (.droppedVariant, "variant '\(name)' of \(original) is no longer made")
        }
        let candidates = sources.names(matching: origin.source)
        var differing: [String] = []
        for name in candidates {
            switch sources.sha256s(of: name) {
            case .success(let digests) where digests.contains(origin.sha256):
                return (.keep, "\(original) is among the sources")
            case .success:
                differing.append(name)
            case .failure(let error):
                problems.append(error.reason)
                return (.keep, "kept: \(original) could not be read (\(error.reason))")
            }
        }
        // Another source with the bytes the output was made from (a `{hash}` key serves every copy
        // of a photo) keeps it, whatever became of the one it records.
        if !differing.isEmpty, let other = sources.source(withSHA256: origin.sha256) {
            return (.keep, "\(original) has other bytes now, but '\(other)' has the bytes this output was made from")
        }
        if let name = differing.first {
            return (
                .changed,
                "\(original) has other bytes now (sha256 was \(origin.sha256.prefix(16))…); its outputs were made from an earlier version"
                    + (name == origin.source ? "" : " ('\(name)')")
            )
        }
        // The same bytes under another name (a renamed original, or two copies of one photo) may
        // still be served by this output: only bytes no source has make it an orphan.
        if let other = sources.source(withSHA256: origin.sha256) {
            return (.keep, "\(original) is gone, but '\(other)' has the same bytes")
        }
        problems += sources.unreadable.map(\.reason).filter { !problems.contains($0) }
        if !sources.unreadable.isEmpty {
            return (.keep, "kept: \(original) is not among the sources, but some sources could not be read")
        }
        return (.orphaned, "\(original) is not among the sources")
    }
}

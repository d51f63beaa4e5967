// Near-duplicate images by their PDQ hashes: groups of records whose 256-bit hashes differ in few bits.

/// A PDQ perceptual hash: 256 bits, parsed from the 64 hex digits records carry.
///
/// It is kept as four 64-bit words rather than as text or bytes so that the distance between two
/// hashes costs four XORs and four population counts: finding near duplicates computes millions.
public struct PDQDigest: Sendable, Hashable {
    /// The 256 bits; the first hex digit is the top four bits of `words.0`, the last the bottom
    /// four of `words.3`, so the words read in the same order as the text.
    public var words: (UInt64, UInt64, UInt64, UInt64)

    /// A digest from its four words, for callers that already hold the bits (tests, other formats).
    public init(words: (UInt64, UInt64, UInt64, UInt64)) {
        self.words = words
    }

    /// Parses exactly 64 hex digits, in either case. Anything else (a digit short or over, a space,
    /// a sign, a `0x`) is nil: a record carrying a damaged hash must not match real ones by accident.
    public init?(hex: String) {
        let digits = hex.utf8
        guard digits.count == 64 else { return nil }
        var parsed: [UInt64] = []
        parsed.reserveCapacity(4)
        var word: UInt64 = 0
        for (position, digit) in digits.enumerated() {
            guard let value = hexValue(digit) else { return nil }
            word = word << 4 | UInt64(value)
            if position % 16 == 15 {
                parsed.append(word)
                word = 0
            }
        }
        words = (parsed[0], parsed[1], parsed[2], parsed[3])
    }

    /// The 64 lowercase hex digits, so a digest written back out reads as PDQ's own tools write it
    /// and parses back to the same bits.
    public var hex: String {
        let alphabet = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for word in [words.0, words.1, words.2, words.3] {
            for shift in stride(from: 60, through: 0, by: -4) {
                text.append(alphabet[Int(word >> UInt64(shift) & 0xF)])
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The number of bits in which the two hashes differ (Hamming distance): PDQ's measure of how
    /// different two images look, 0 for the same picture and about 128 for unrelated ones.
    public func distance(to other: PDQDigest) -> Int {
        (words.0 ^ other.words.0).nonzeroBitCount + (words.1 ^ other.words.1).nonzeroBitCount
            + (words.2 ^ other.words.2).nonzeroBitCount + (words.3 ^ other.words.3).nonzeroBitCount
    }

    /// Equal when all 256 bits are: written out because a tuple of words has no `==` of its own.
    public static func == (left: PDQDigest, right: PDQDigest) -> Bool {
        left.words == right.words
    }

    /// Hashes the four words, which `==` compares, so equal digests land in one dictionary slot.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }
}

/// The value of one ASCII hex digit, or nil for any other byte; kept apart from `init?(hex:)` so
/// the parse reads as a loop over digits.
private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

/// Groups of records whose hashes are within `maxDistance` bits of one another, linked transitively
/// (single linkage): if A is near B and B near C, all three are one group even when A and C are far.
///
/// Comparing every hash with every other is n² work, too slow for a whole bucket of images, so the
/// search uses a multi-index over the hash's 16-bit chunks. By the pigeonhole principle, two hashes
/// within d bits of each other differ in at most ⌊d/16⌋ bits in at least one of the 16 chunks. Each
/// chunk's values are therefore indexed, and each hash is compared, in every chunk, only with the
/// hashes whose value there is within that radius of its own. At PDQ's own threshold (31) the
/// radius is 1: 17 values a chunk (its own and the 16 one bit away), so of the pairs a full scan
/// would measure, about one in 240 (16 × 17 / 65,536) is measured when the hashes are unrelated.
///
/// The radius grows with the distance, and the values compared with it (697 a chunk at radius 3). At radius 3
/// (48 to 63 bits) the index already saves little: 7 to 12 s for 100,000 hashes against 12.5 s for
/// comparing every pair, on one core of the machine it was measured on. From radius 4 it would cost
/// more than it saves, so distances above 63 compare every pair instead; both ways give the same
/// groups. Such distances are far past where PDQ calls two images alike anyway (unrelated images
/// differ in about 128 bits). At 31 the same 100,000 hashes take a quarter of a second.
///
/// Identical hashes, common where the same file was uploaded twice, are folded into one before the
/// search and linked at distance 0, so a thousand copies of a picture cost one hash's search, not
/// a million comparisons. Hashes that are near but not identical are all compared pairwise within
/// their cluster, since every such pair counts towards a group's `largestDistance`: 5,000 distinct
/// hashes all within a few bits of one another take about 2 s.
public struct NearDuplicates: Sendable {
    /// PDQ's own threshold for calling two images a match.
    public static let defaultMaxDistance = 31

    /// The largest distance the chunk index serves; above it, every pair is compared.
    static let largestIndexedDistance = 63

    /// The most bits two linked hashes may differ in.
    private let maxDistance: Int
    /// Each distinct digest's position in `distinctWords`, so an identical digest is recognised at once.
    private var distinctIndex: [PDQDigest: Int] = [:]
    /// The distinct digests' words, four to a digest and in order of first appearance: one flat
    /// array keeps the comparisons of the search on contiguous memory.
    private var distinctWords: [UInt64] = []
    /// For each record, in the order added, the distinct digest it carries.
    private var recordDistinct: [Int] = []

    /// A finder linking hashes within `maxDistance` bits (0 links identical hashes only, 256 links
    /// everything); a distance outside 0...256 is a programming error.
    public init(maxDistance: Int) {
        precondition((0...256).contains(maxDistance), "a PDQ distance is between 0 and 256 bits, not \(maxDistance)")
        self.maxDistance = maxDistance
    }

    /// Adds a record's hash and returns the record's index (0 for the first, then 1, 2, ...), which
    /// is how `groups()` names it, so the caller can map groups back to its own records.
    @discardableResult
    public mutating func add(_ digest: PDQDigest) -> Int {
        let distinct: Int
        if let known = distinctIndex[digest] {
            distinct = known
        } else {
            distinct = distinctIndex.count
            distinctIndex[digest] = distinct
            distinctWords += [digest.words.0, digest.words.1, digest.words.2, digest.words.3]
        }
        recordDistinct.append(distinct)
        return recordDistinct.count - 1
    }

    /// A group of records found to be near duplicates of one another.
    public struct Group: Sendable, Equatable {
        /// The records' indexes, as `add` returned them, ascending.
        public var members: [Int]
        /// The largest distance between two members that are within the finder's `maxDistance` of
        /// each other (the links that made the group): how loosely the group hangs together. 0 when
        /// every member carries the same hash.
        public var largestDistance: Int

        /// A group as the finder reports it; public so that callers' tests can state the groups they expect.
        public init(members: [Int], largestDistance: Int) {
            self.members = members
            self.largestDistance = largestDistance
        }
    }

    /// Every group of two or more records, members ascending and groups ordered by their first
    /// member, so the same records give the same report however the search went.
    ///
    /// The search runs on each call; call it once all records are added.
    public func groups() -> [Group] {
        groups(indexed: maxDistance <= Self.largestIndexedDistance)
    }

    /// The groups, found through the chunk index or by comparing every pair: both give the same
    /// answer, and the harnesses compare them by choosing here.
    func groups(indexed: Bool) -> [Group] {
        var links = Links(count: distinctIndex.count)
        if indexed {
            linkThroughIndex(&links)
        } else {
            linkPairwise(&links)
        }
        // Records are visited in order, so each group's members come out ascending and the groups
        // in the order of their first members.
        var groupOfRoot = [Int](repeating: -1, count: distinctIndex.count)
        var found: [Group] = []
        for (record, distinct) in recordDistinct.enumerated() {
            let root = links.root(of: distinct)
            if groupOfRoot[root] < 0 {
                groupOfRoot[root] = found.count
                found.append(Group(members: [], largestDistance: Int(links.largest[root])))
            }
            found[groupOfRoot[root]].members.append(record)
        }
        return found.filter { $0.members.count >= 2 }
    }

    /// How many chunks the index cuts a hash into, each of `chunkBits` bits.
    private static let chunkCount = 16
    /// The width of a chunk: 16 bits, so one chunk's index is a table of 65,536 buckets addressed
    /// directly by the chunk's value, with no hashing, and unrelated hashes rarely share a bucket.
    private static let chunkBits = 16

    /// Chunk `chunk` (0 to 15) of distinct digest `distinct`.
    private func chunkValue(_ distinct: Int, _ chunk: Int) -> Int {
        let word = distinctWords[distinct &* 4 &+ chunk >> 2]
        return Int(truncatingIfNeeded: UInt16(truncatingIfNeeded: word >> UInt64((chunk & 3) * Self.chunkBits)))
    }

    /// Links the distinct digests within `maxDistance` of each other, found through the chunk index.
    ///
    /// The index is built and searched one chunk at a time, and walked bucket by bucket rather than
    /// digest by digest: the digests are sorted by the chunk's value (a counting sort), their words
    /// copied in that order, and each bucket is compared with itself and with the buckets within the
    /// radius below it. A bucket's digests are then next to each other in memory, and the table of
    /// where buckets start (512 kB) stays in the processor's cache; probing digest by digest over all
    /// chunks at once missed the cache on nearly every probe and was eight times slower.
    ///
    /// Within a chunk each pair is considered once: inside a bucket, a digest with the ones sorted
    /// before it; across buckets, from the bucket of the larger value only. A pair close in several
    /// chunks is measured in each, but linked only from the first such chunk (see `linkedEarlier`).
    private func linkThroughIndex(_ links: inout Links) {
        let count = distinctIndex.count
        guard count >= 2 else { return }
        let buckets = 1 << Self.chunkBits
        let radius = maxDistance / Self.chunkCount
        // The non-zero 16-bit patterns of at most `radius` set bits: a bucket's value XOR one of them is a neighbour to compare with.
        let flips = (1..<buckets).filter { $0.nonzeroBitCount <= radius }

        var starts = [Int](repeating: 0, count: buckets + 1)
        var sortedDistinct = [Int](repeating: 0, count: count)
        var sortedWords = [UInt64](repeating: 0, count: count * 4)
        for chunk in 0..<Self.chunkCount {
            // Counting sort by the chunk's value: bucket v holds positions starts[v] ..< starts[v + 1].
            for value in 0...buckets { starts[value] = 0 }
            for distinct in 0..<count { starts[chunkValue(distinct, chunk) + 1] += 1 }
            for value in 0..<buckets { starts[value + 1] += starts[value] }
            var next = starts
            for distinct in 0..<count {
                let value = chunkValue(distinct, chunk)
                let position = next[value]
                next[value] += 1
                sortedDistinct[position] = distinct
                for word in 0..<4 { sortedWords[position * 4 + word] = distinctWords[distinct * 4 + word] }
            }

            /// Measures the digests at two sorted positions and links them if near enough. Most
            /// candidates are unrelated and already too far after half their bits, so the other
            /// half is counted only when needed: without a population-count instruction (generic
            /// x86-64 builds) counting bits is most of the search's time.
            func compare(_ first: Int, _ second: Int) {
                let one = first * 4, other = second * 4
                let front = (sortedWords[one] ^ sortedWords[other], sortedWords[one + 1] ^ sortedWords[other + 1])
                let frontDistance = front.0.nonzeroBitCount + front.1.nonzeroBitCount
                if frontDistance > maxDistance { return }
                let difference = (front.0, front.1, sortedWords[one + 2] ^ sortedWords[other + 2], sortedWords[one + 3] ^ sortedWords[other + 3])
                let threeQuarters = frontDistance + difference.2.nonzeroBitCount
                if threeQuarters > maxDistance { return }
                let distance = threeQuarters + difference.3.nonzeroBitCount
                if distance <= maxDistance && !Self.linkedEarlier(difference, before: chunk, radius: radius) {
                    links.join(sortedDistinct[first], sortedDistinct[second], distance: distance)
                }
            }

            for value in 0..<buckets {
                let start = starts[value], end = starts[value + 1]
                if start == end { continue }
                for later in start..<end {
                    for earlier in start..<later { compare(later, earlier) }
                }
                for flip in flips {
                    let neighbour = value ^ flip
                    if neighbour > value { continue }
                    let neighbourStart = starts[neighbour], neighbourEnd = starts[neighbour + 1]
                    if neighbourStart == neighbourEnd { continue }
                    for mine in start..<end {
                        for theirs in neighbourStart..<neighbourEnd { compare(mine, theirs) }
                    }
                }
            }
        }
    }

    /// Whether two digests differing in `difference` are within `radius` bits in a chunk before
    /// `chunk`: that chunk's pass has then considered them already, and linking again is wasted work.
    private static func linkedEarlier(_ difference: (UInt64, UInt64, UInt64, UInt64), before chunk: Int, radius: Int) -> Bool {
        for earlier in 0..<chunk {
            let word =
                switch earlier >> 2 {
                case 0: difference.0
                case 1: difference.1
                case 2: difference.2
                default: difference.3
                }
            let bits = UInt16(truncatingIfNeeded: word >> UInt64((earlier & 3) * chunkBits))
            if bits.nonzeroBitCount <= radius { return true }
        }
        return false
    }

    /// Links the distinct digests within `maxDistance` of each other by comparing every pair: for
    /// distances the chunk index cannot narrow down (see the type's notes).
    private func linkPairwise(_ links: inout Links) {
        let count = distinctIndex.count
        guard count >= 2 else { return }
        for later in 1..<count {
            let base = later * 4
            let words = (distinctWords[base], distinctWords[base + 1], distinctWords[base + 2], distinctWords[base + 3])
            for earlier in 0..<later {
                let distance = distanceBetween(words, earlier)
                if distance <= maxDistance {
                    links.join(earlier, later, distance: distance)
                }
            }
        }
    }

    /// The distance between a digest's words already loaded and distinct digest `other`: the inner
    /// loops keep one side in registers rather than rebuilding a `PDQDigest` per comparison.
    private func distanceBetween(_ words: (UInt64, UInt64, UInt64, UInt64), _ other: Int) -> Int {
        let base = other &* 4
        return (words.0 ^ distinctWords[base]).nonzeroBitCount + (words.1 ^ distinctWords[base + 1]).nonzeroBitCount
            + (words.2 ^ distinctWords[base + 2]).nonzeroBitCount + (words.3 ^ distinctWords[base + 3]).nonzeroBitCount
    }
}

/// Union-find over the distinct digests, with each set's largest link: the groups are the sets, and
/// single linkage is exactly what joining sets link by link builds.
///
/// Each set's largest link is kept at its root and merged when two sets join, so a group's
/// `largestDistance` needs no list of the links, which in a tight cluster can be many.
private struct Links {
    /// Each digest's parent; a root is its own.
    private var parent: [Int32]
    /// The number of digests under each root, so the smaller set goes under the larger and paths stay short.
    private var size: [Int32]
    /// At each root, the largest distance of any link within its set.
    private(set) var largest: [Int32]

    /// `count` digests, each alone.
    init(count: Int) {
        parent = (0..<Int32(count)).map { $0 }
        size = [Int32](repeating: 1, count: count)
        largest = [Int32](repeating: 0, count: count)
    }

    /// The root of `digest`'s set, halving the path on the way so later lookups are quicker.
    mutating func root(of digest: Int) -> Int {
        var current = digest
        while Int(parent[current]) != current {
            let grandparent = parent[Int(parent[current])]
            parent[current] = grandparent
            current = Int(grandparent)
        }
        return current
    }

    /// Records a link of `distance` bits between two digests, joining their sets if apart.
    mutating func join(_ first: Int, _ second: Int, distance: Int) {
        let distance = Int32(distance)
        var keep = root(of: first)
        var absorbed = root(of: second)
        if keep == absorbed {
            largest[keep] = max(largest[keep], distance)
            return
        }
        if size[keep] < size[absorbed] { swap(&keep, &absorbed) }
        parent[absorbed] = Int32(keep)
        size[keep] += size[absorbed]
        largest[keep] = max(largest[keep], largest[absorbed], distance)
    }
}

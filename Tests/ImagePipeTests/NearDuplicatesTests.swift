import ImagePipe
import Testing

/// The near-duplicate finder against the plain answer: every pair measured, groups found by walking
/// the links. The finder takes shortcuts (a chunk index, identical hashes folded together, a switch
/// to comparing every pair past 63 bits), so its groups are checked against this answer on both
/// sides of each shortcut's limits, on hashes from a seeded generator so a failure reproduces.
@Suite struct NearDuplicatesTests {
    /// Distances on both sides of each change in the search: identical only, the chunk index at
    /// radius 0, 1, 2 and 3 (the radius steps at 16, 32 and 48), and every pair compared above 63.
    @Test(arguments: [0, 10, 15, 16, 31, 40, 47, 48, 63, 64, 100])
    func groupsMatchEveryPairMeasured(maxDistance: Int) {
        let digests = Self.plantedDigests(seed: 0x5EED_2024)
        var finder = NearDuplicates(maxDistance: maxDistance)
        let indexes = digests.map { finder.add($0) }
        #expect(indexes == Array(digests.indices))
        let expected = Self.groupsByMeasuringEveryPair(digests, maxDistance: maxDistance)
        #expect(!expected.isEmpty, "the planted copies should make groups at every distance")
        #expect(finder.groups() == expected)
    }

    /// Differences packed into one stretch of the hash, at exactly the distance allowed and one bit
    /// more: random flips rarely leave a whole word or chunk alike, so the search's early exits and
    /// chunk edges are checked here, from every starting bit in steps of 5 and across the wrap.
    @Test(arguments: [1, 10, 16, 31, 47, 63, 64])
    func differencesInOneStretchLinkAtTheLimitOnly(maxDistance: Int) {
        var random = SplitMix64(seed: 0x5EED_0000 + UInt64(maxDistance))
        var digests: [PDQDigest] = []
        for start in stride(from: 0, to: 256, by: 5) {
            for width in [maxDistance, maxDistance + 1] {
                let original = random.digest()
                digests += [original, Self.flippingStretch(of: original, from: start, width: width)]
            }
        }
        var finder = NearDuplicates(maxDistance: maxDistance)
        for digest in digests { finder.add(digest) }
        let expected = Self.groupsByMeasuringEveryPair(digests, maxDistance: maxDistance)
        #expect(expected.count == 52 && expected.allSatisfy { $0.largestDistance == maxDistance })
        #expect(finder.groups() == expected)
    }

    /// Thousands of copies of one hash are one group at distance 0, and a near copy joins it at its
    /// own distance: the folding of identical hashes must neither lose records nor invent distances.
    @Test func identicalCopiesFormOneGroup() {
        var random = SplitMix64(seed: 11)
        let original = random.digest()
        var finder = NearDuplicates(maxDistance: NearDuplicates.defaultMaxDistance)
        for _ in 0..<5_000 { finder.add(original) }
        #expect(finder.groups() == [NearDuplicates.Group(members: Array(0..<5_000), largestDistance: 0)])

        let near = random.flipping(3, of: original)
        finder.add(random.digest())
        finder.add(near)
        #expect(finder.groups() == [NearDuplicates.Group(members: Array(0..<5_000) + [5_001], largestDistance: 3)])
    }

    /// Nothing added, or one record, or records far apart: no groups, since a group needs two.
    @Test func loneRecordsMakeNoGroups() {
        #expect(NearDuplicates(maxDistance: 31).groups().isEmpty)
        var random = SplitMix64(seed: 12)
        var finder = NearDuplicates(maxDistance: 0)
        for _ in 0..<100 { finder.add(random.digest()) }
        #expect(finder.groups().isEmpty)
    }

    /// Hex parses in either case, writes back lowercase and round-trips, keeps the text's order in
    /// the words, and refuses anything but exactly 64 hex digits.
    @Test func hexRoundTripsAndRejectsDamagedText() throws {
        var random = SplitMix64(seed: 13)
        for _ in 0..<200 {
            let digest = random.digest()
            #expect(digest.hex.utf8.count == 64)
            #expect(digest.hex == digest.hex.lowercased())
            #expect(PDQDigest(hex: digest.hex) == digest)
        }

        let text = String(repeating: "0123456789abcdef", count: 4)
        let parsed = try #require(PDQDigest(hex: text))
        #expect(parsed.words.0 == 0x0123_4567_89AB_CDEF && parsed.words.3 == 0x0123_4567_89AB_CDEF)
        #expect(parsed.hex == text)
        #expect(PDQDigest(hex: text.uppercased()) == parsed)

        let tail63 = String(text.dropFirst())
        let tail62 = String(text.dropFirst(2))
        let damaged: [String] = [
            String(text.dropLast()), text + "0", "", "g" + tail63, " " + tail63, tail63 + " ",
            "0x" + tail62, "+" + tail63, "é" + tail62,
        ]
        for bad in damaged {
            #expect(PDQDigest(hex: bad) == nil, "\(bad.debugDescription) should not parse")
        }
    }

    /// The distance counts differing bits: none for the same hash, all 256 for complements, and
    /// exactly the bits flipped.
    @Test func distanceCountsDifferingBits() throws {
        let zeros = try #require(PDQDigest(hex: String(repeating: "0", count: 64)))
        let ones = try #require(PDQDigest(hex: String(repeating: "F", count: 64)))
        #expect(zeros.distance(to: ones) == 256)
        #expect(ones.distance(to: ones) == 0)
        var random = SplitMix64(seed: 14)
        for flips in 0...40 {
            let digest = random.digest()
            let copy = random.flipping(flips, of: digest)
            #expect(digest.distance(to: copy) == flips && copy.distance(to: digest) == flips)
        }
    }

    /// About 1,500 records: unrelated hashes, clusters of copies with 0 to 40 bits flipped, and one
    /// hash repeated, in a shuffled order so groups' members are not neighbours in the input.
    static func plantedDigests(seed: UInt64) -> [PDQDigest] {
        var random = SplitMix64(seed: seed)
        var digests = (0..<1_150).map { _ in random.digest() }
        for _ in 0..<100 {
            let original = random.digest()
            digests.append(original)
            for _ in 0..<(1 + random.below(5)) {
                digests.append(random.flipping(random.below(41), of: original))
            }
        }
        for _ in 0..<10 { digests.append(digests[7]) }
        random.shuffle(&digests)
        return digests
    }

    /// `digest` with `width` consecutive bits flipped from bit `start`, wrapping past the last bit.
    static func flippingStretch(of digest: PDQDigest, from start: Int, width: Int) -> PDQDigest {
        var words = [digest.words.0, digest.words.1, digest.words.2, digest.words.3]
        for offset in 0..<width {
            let bit = (start + offset) % 256
            words[bit / 64] ^= 1 << UInt64(bit % 64)
        }
        return PDQDigest(words: (words[0], words[1], words[2], words[3]))
    }

    /// The groups by definition: measure every pair, link those within `maxDistance`, take each
    /// connected set of two or more records, and its largest link.
    static func groupsByMeasuringEveryPair(_ digests: [PDQDigest], maxDistance: Int) -> [NearDuplicates.Group] {
        var neighbours = [[Int]](repeating: [], count: digests.count)
        for first in digests.indices {
            for second in digests.indices where second > first && digests[first].distance(to: digests[second]) <= maxDistance {
                neighbours[first].append(second)
                neighbours[second].append(first)
            }
        }
        var visited = [Bool](repeating: false, count: digests.count)
        var groups: [NearDuplicates.Group] = []
        for start in digests.indices where !visited[start] {
            visited[start] = true
            var members = [start]
            var next = 0
            while next < members.count {
                for neighbour in neighbours[members[next]] where !visited[neighbour] {
                    visited[neighbour] = true
                    members.append(neighbour)
                }
                next += 1
            }
            guard members.count >= 2 else { continue }
            var largest = 0
            for member in members {
                for neighbour in neighbours[member] {
                    largest = max(largest, digests[member].distance(to: digests[neighbour]))
                }
            }
            groups.append(NearDuplicates.Group(members: members.sorted(), largestDistance: largest))
        }
        return groups
    }
}

/// SplitMix64, written out here rather than the system generator, so the hashes a failure ran on
/// come back on every run; its own draws too, so they stay the same across toolchains.
private struct SplitMix64 {
    private var state: UInt64

    /// A generator from `seed`.
    init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A number in 0..<bound; the slight bias of a remainder does not matter to these tests.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// A random hash: unrelated to every other, about 128 bits from each.
    mutating func digest() -> PDQDigest { PDQDigest(words: (next(), next(), next(), next())) }

    /// `digest` with `count` distinct bits flipped, so it is exactly `count` bits away.
    mutating func flipping(_ count: Int, of digest: PDQDigest) -> PDQDigest {
        var bits = Array(0..<256)
        shuffle(&bits)
        var words = [digest.words.0, digest.words.1, digest.words.2, digest.words.3]
        for bit in bits.prefix(count) { words[bit / 64] ^= 1 << UInt64(bit % 64) }
        return PDQDigest(words: (words[0], words[1], words[2], words[3]))
    }

    /// Fisher–Yates with this generator's draws.
    mutating func shuffle<Element>(_ elements: inout [Element]) {
        guard elements.count > 1 else { return }
        for index in stride(from: elements.count - 1, to: 0, by: -1) {
            elements.swapAt(index, below(index + 1))
        }
    }
}

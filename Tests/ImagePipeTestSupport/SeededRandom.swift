// A seeded random generator for tests: every random choice a test makes can be replayed from the seed its failures print.
import Foundation

/// SplitMix64: small, fast and good enough to pick interleavings and sizes.
///
/// ``fromEnvironment()`` takes `IMAGEPIPE_TEST_SEED` when set, so a failure's seed can be replayed
/// (`IMAGEPIPE_TEST_SEED=123 swift test --filter ...`), and otherwise a new seed, so repeated runs
/// cover more cases. Tests name ``seed`` in their failure messages.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    /// The seed this generator started from.
    public let seed: UInt64
    private var state: UInt64

    /// A generator from `seed`.
    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    /// A generator from `IMAGEPIPE_TEST_SEED`, or from a new random seed.
    public static func fromEnvironment() -> SeededRandom {
        let given = ProcessInfo.processInfo.environment["IMAGEPIPE_TEST_SEED"].flatMap { UInt64($0) }
        return SeededRandom(seed: given ?? UInt64.random(in: 0...UInt64.max))
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

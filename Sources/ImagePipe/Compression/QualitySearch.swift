// The search for an image's lowest quality whose score meets a target, with as few encodes as it can.

/// Finds the lowest encoder quality whose perceptual score reaches a target, for one image.
///
/// Each probe is an encode and a score, so the search keeps a bracket, the highest quality known to
/// fail and the lowest known to pass, and narrows it: by interpolating between the two ends' scores
/// when both are known (the score grows nearly linearly with quality over a few steps), by the
/// midpoint when interpolation twice fails to move an end (bisection's guarantee), and from a single
/// probe by a typical slope. It stops early when a passing probe lands within ``tolerance`` of the
/// target, and otherwise once the bracket is ``resolution`` steps wide. The answer is always a probe
/// already made, so its encode is reused rather than repeated.
public struct QualitySearch: Sendable {
    /// One encode at one quality and how it scored.
    public struct Probe<Payload> {
        /// The quality.
        public var quality: Int
        /// Its score.
        public var score: Double
        /// What the probe made (the encoded bytes).
        public var payload: Payload
    }

    /// What the search chose.
    public struct Outcome<Payload> {
        /// The lowest passing probe; the highest quality's probe when none passed.
        public var chosen: Probe<Payload>
        /// Encodes made.
        public var probes: Int
    }

    /// The score to reach.
    public var target: Double
    /// Qualities to choose from.
    public var range: ClosedRange<Int>
    /// The first quality probed.
    public var start: Int
    /// A passing score at most this far above the target ends the search at once.
    public var tolerance: Double
    /// The search ends once the lowest passing and highest failing qualities are this close.
    public var resolution: Int
    /// Score points per quality step assumed before two probes have measured it.
    public var typicalSlope: Double
    /// How far above the target a probe placed from one end (by a slope) aims.
    public var margin: Double

    /// Creates a search; the defaults give 2–4 encodes per image on the bench corpus. Without a
    /// `margin`, extrapolations aim at the middle of the window that ends the search, half the tolerance
    /// above the target.
    public init(
        target: Double, start: Int, range: ClosedRange<Int> = 10...95, tolerance: Double = 1.0, resolution: Int = 2,
        typicalSlope: Double = 0.6, margin: Double? = nil
    ) {
        self.target = target
        self.range = range
        self.start = min(max(start, range.lowerBound), range.upperBound)
        self.tolerance = tolerance
        self.resolution = max(1, resolution)
        self.typicalSlope = typicalSlope
        self.margin = margin ?? tolerance / 2
    }

    /// Runs the search, calling `probe` once per quality tried.
    public func run<Payload, Failure: Error>(
        _ probe: (Int) throws(Failure) -> (score: Double, payload: Payload)
    )
        throws(Failure) -> Outcome<Payload>
    {
        var passing: Probe<Payload>?
        var failing: Probe<Payload>?
        var made: [Probe<Payload>] = []
        var quality = start
        while true {
            let (score, payload) = try probe(quality)
            let last = Probe(quality: quality, score: score, payload: payload)
            made.append(last)
            if score >= target {
                if passing.map({ quality < $0.quality }) ?? true { passing = last }
                if score - target <= tolerance { break }
            } else if failing.map({ quality > $0.quality }) ?? true {
                failing = last
            }
            let low = failing?.quality ?? range.lowerBound - 1
            let high = passing?.quality ?? range.upperBound + 1
            if high - low <= resolution { break }
            quality = next(low: low, high: high, passing: passing, failing: failing, made: made)
        }
        guard let chosen = passing ?? failing else { preconditionFailure("the search probes at least once") }
        return Outcome(chosen: chosen, probes: made.count)
    }

    /// The next quality strictly inside the bracket (low, high).
    private func next<Payload>(
        low: Int, high: Int, passing: Probe<Payload>?, failing: Probe<Payload>?,
        made: [Probe<Payload>]
    ) -> Int {
        let last = made[made.count - 1]
        // Extrapolations aim ``margin`` above the target: by default the middle of the window that ends
        // the search, [target, target + tolerance], so that a probe placed by an estimated slope lands
        // inside it as often as it can; with a wide window, just above the target, so that the probe
        // passes without spending the whole window. Interpolation aims at the target itself: scores are
        // concave in quality, so the chord between the bracket's ends already lands above it (aiming
        // higher cost probes in the tests' curves).
        let goal = target + margin
        let guess: Double
        if let passing, let failing {
            // Interpolation, unless the last two probes fell on the same side: then it is converging
            // from one end only, and the midpoint halves the bracket for certain.
            let sameSide = made.count >= 2 && (made[made.count - 2].score >= target) == (last.score >= target)
            if !sameSide, passing.score > failing.score {
                let slope = (passing.score - failing.score) / Double(passing.quality - failing.quality)
                guess = Double(failing.quality) + (target - failing.score) / slope
            } else {
                guess = Double(low + high) / 2
            }
        } else {
            // One end only: extrapolate by the slope measured so far (or the typical one), and at
            // least double the previous step, so that the target is bracketed quickly.
            var slope = typicalSlope
            var previousStep = 0.0
            if made.count >= 2 {
                let before = made[made.count - 2]
                previousStep = Double(last.quality - before.quality)
                let measured = (last.score - before.score) / previousStep
                if measured > 0 { slope = measured }
            }
            var step = (goal - last.score) / slope
            if abs(step) < 2 * abs(previousStep) { step = step < 0 ? -2 * abs(previousStep) : 2 * abs(previousStep) }
            guess = Double(last.quality) + step
        }
        // Rounded up: the probe should rather pass, since a passing probe can end the search.
        return min(max(Int(guess.rounded(.up)), low + 1), high - 1)
    }
}

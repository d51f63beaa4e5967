import Foundation
import ImagePipe
import Testing

@Suite struct QualitySearchTests {
    /// A score that grows with quality like an encoder's, steeper at low qualities.
    static func score(_ quality: Int, offset: Double) -> Double { offset + 40 * (1 - exp(-Double(quality) / 35)) }

    @Test(arguments: [20.0, 30, 40, 50])
    func findsTheLowestPassingQualityExactlyWhenAskedTo(_ offset: Double) throws {
        var probed: [Int] = []
        let outcome = QualitySearch(target: 60, start: 75, tolerance: 0, resolution: 1).run { (quality: Int) -> (score: Double, payload: Int) in
            probed.append(quality)
            return (Self.score(quality, offset: offset), quality)
        }
        let lowest = (10...95).first { Self.score($0, offset: offset) >= 60 } ?? 95
        #expect(outcome.chosen.quality == lowest, "probed \(probed)")
        #expect(outcome.chosen.payload == outcome.chosen.quality && outcome.probes == probed.count)
        #expect(outcome.probes <= 8, "probed \(probed)")
        #expect(Set(probed).count == probed.count, "a quality is never encoded twice: \(probed)")
    }

    @Test(arguments: [20.0, 30, 40, 50])
    func withItsDefaultsStopsNearTheLowestInFewProbes(_ offset: Double) throws {
        var probed: [Int] = []
        let outcome = QualitySearch(target: 60, start: 75).run { (quality: Int) -> (score: Double, payload: Void) in
            probed.append(quality)
            return (Self.score(quality, offset: offset), ())
        }
        let lowest = (10...95).first { Self.score($0, offset: offset) >= 60 } ?? 95
        #expect(outcome.chosen.score >= 60 || outcome.chosen.quality == 95)
        // Within the resolution of the lowest, or passing by no more than the tolerance.
        #expect(outcome.chosen.quality - lowest <= 2 || outcome.chosen.score - 60 <= 1, "probed \(probed), lowest \(lowest)")
        #expect(outcome.probes <= 6, "probed \(probed)")
    }

    @Test func stopsAtOnceWhenAProbeLandsJustAboveTheTarget() {
        let outcome = QualitySearch(target: 60, start: 50).run { (quality: Int) -> (score: Double, payload: Void) in
            (Double(quality) + 10.5, ())
        }
        #expect(outcome.probes == 1 && outcome.chosen.quality == 50)
    }

    /// From one end, the next probe aims at the middle of [target, target + tolerance], not at the
    /// target's edge, where a slightly steeper or flatter slope than estimated would miss the window.
    @Test func extrapolationsAimAtTheMiddleOfTheWindowThatEndsTheSearch() {
        var probed: [Int] = []
        let outcome = QualitySearch(target: 60, start: 50, tolerance: 4, typicalSlope: 0.6).run { (quality: Int) -> (score: Double, payload: Void) in
            probed.append(quality)
            return (0.6 * Double(quality) + 20, ())
        }
        #expect(outcome.probes == 2 && outcome.chosen.score >= 61 && outcome.chosen.score <= 63, "probed \(probed), chose \(outcome.chosen.score)")
    }

    /// `auto`'s settings: a wide window with a start above the median, so a first probe that passes
    /// ends the search, and a step from one failing probe aims just above the target (``margin``) rather
    /// than at the middle of that window, which would pass by half the window's width.
    @Test func withAWideWindowOneStepAimsJustAboveTheTarget() {
        var probed: [Int] = []
        let search = QualitySearch(target: 60, start: 50, tolerance: 12, resolution: 3, typicalSlope: 0.6, margin: 1)
        let outcome = search.run { (quality: Int) -> (score: Double, payload: Void) in
            probed.append(quality)
            return (0.6 * Double(quality) + 20, ())
        }
        // 50 scores 50; the step aims at 61 by the slope, q69 (61.4), where the window's middle (66) would be q77 (66.2).
        #expect(probed == [50, 69] && outcome.chosen.score >= 60 && outcome.chosen.score <= 62, "probed \(probed)")
        let middle = QualitySearch(target: 60, start: 50, tolerance: 12, resolution: 3, typicalSlope: 0.6).run {
            (quality: Int) -> (score: Double, payload: Void) in (0.6 * Double(quality) + 20, ())
        }
        #expect(middle.chosen.quality > outcome.chosen.quality + 5, "without a margin the step overshoots: q\(middle.chosen.quality)")
    }

    @Test func withAWideWindowAFirstPassingProbeEndsTheSearchUnlessFarAbove() {
        let search = QualitySearch(target: 60, start: 70, tolerance: 12, resolution: 3, typicalSlope: 0.6, margin: 1)
        // Passing by 10 points: inside the window, one probe.
        let near = search.run { (quality: Int) -> (score: Double, payload: Void) in (Double(quality), ()) }
        #expect(near.probes == 1 && near.chosen.quality == 70)
        // Passing by 20 points: one step down by the typical slope, aimed a point above the target.
        var probed: [Int] = []
        let far = search.run { (quality: Int) -> (score: Double, payload: Void) in
            probed.append(quality)
            return (Double(quality) * 0.6 + 38, ())
        }
        #expect(probed.count == 2 && probed[1] < 70 && far.chosen.score >= 60 && far.chosen.score <= 62, "probed \(probed)")
    }

    @Test func anUnreachableTargetGivesTheHighestQualityAndAnEasyOneTheLowest() {
        let hard = QualitySearch(target: 99, start: 60).run { (quality: Int) -> (score: Double, payload: Void) in (Double(quality), ()) }
        #expect(hard.chosen.quality == 95 && hard.chosen.score < 99)
        let easy = QualitySearch(target: 5, start: 60).run { (quality: Int) -> (score: Double, payload: Void) in (Double(quality) + 50, ()) }
        #expect(easy.chosen.quality == 10)
        #expect(hard.probes <= 4 && easy.probes <= 4, "\(hard.probes) and \(easy.probes) probes")
    }

    @Test func aNoisyNonMonotonicScoreStillEndsWithAPassingProbe() {
        let outcome = QualitySearch(target: 50, start: 70).run { (quality: Int) -> (score: Double, payload: Void) in
            (Double(quality) * 0.8 + (quality % 3 == 0 ? 3 : -3), ())
        }
        #expect(outcome.chosen.score >= 50 && outcome.probes <= 8)
    }
}

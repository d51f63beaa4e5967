import Dispatch
import Foundation
import ImagePipeTestSupport
import ImagePipe
@testable import ImagePipeVips
import Synchronization
import ImagePipeVipsTesting
import Testing

@Suite struct WorkingMemoryBudgetTests {
    @Test func decodesThatDoNotFitWaitForRoom() {
        let budget = WorkingMemoryBudget(limit: 100)
        let first = budget.acquire(80)
        let secondStarted = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let second = budget.acquire(80)
            secondStarted.store(true, ordering: .sequentiallyConsistent)
            budget.release(second)
            done.signal()
        }
        // Give the second a chance to (wrongly) get in; it must still be waiting.
        Thread.sleep(forTimeInterval: 0.2)
        let startedEarly = secondStarted.load(ordering: .sequentiallyConsistent)
        #expect(!startedEarly)
        #expect(budget.used == 80)
        budget.release(first)
        done.wait()
        let startedAfterRelease = secondStarted.load(ordering: .sequentiallyConsistent)
        #expect(startedAfterRelease)
        #expect(budget.used == 0)
    }

    @Test func smallDecodesShareAndAnOversizedOneRunsAlone() {
        let budget = WorkingMemoryBudget(limit: 100)
        let a = budget.acquire(30), b = budget.acquire(30)
        #expect(budget.used == 60)
        budget.release(a)
        budget.release(b)
        let huge = budget.acquire(10_000)
        #expect(huge == 100, "clamped to the whole budget")
        budget.release(huge)
        #expect(budget.used == 0)
    }

    @Test func workingMemoryCountsWhatEachFormatHolds() throws {
        let small = [Fixtures.variant("a=100x100,jpeg,q80")]
        // One variant: its pixels in memory (4 bytes per pixel at most) and the encoder's buffers.
        let encoder = 100 * 67 * 4 + 100 * 67 * 6
        // Progressive 600x400 4:2:0: luma plus two quarter-size chroma planes, 2 bytes per coefficient.
        let progressive = Fixtures.data("images/formats/progressive.jpg")
        #expect(try VipsProbe.workingMemory(progressive, variants: small) == progressive.count + 600 * 400 * 3 + encoder)
        // Baseline JPEGs decode in strips: only the source and the output count.
        let baseline = Fixtures.data("images/formats/landscape.jpg")
        #expect(try VipsProbe.workingMemory(baseline, variants: small) == baseline.count + encoder)
        // WebP decodes whole; several variants add the in-memory intermediate and the largest encoder.
        let webp = Fixtures.data("images/formats/landscape-webp.webp")
        #expect(try VipsProbe.workingMemory(webp, variants: Preset.web) == webp.count + 600 * 400 * 3 + 600 * 400 * 4 + 600 * 400 * 6)
    }
}

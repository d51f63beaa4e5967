import Foundation
import ImagePipe
import ImagePipeTestKit
import ImagePipeTestSupport
import Synchronization
import Testing

@Suite struct JobPipelineTests {
    let directory = TemporaryDirectory()

    func jobs(_ count: Int) -> [Job] {
        (0..<count).map { Job(path: directory.write("src/\($0).jpg", "image \($0)"), relativePath: "\($0).jpg") }
    }

    @Test func everyJobFinishesExactlyOnceWithinTheConcurrencyLimits() {
        let compressor = ScriptedCompressor(work: .milliseconds(2))
        let storage = InMemoryStorage(delay: .milliseconds(1))
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: compressor, storage: storage),
            configuration: .init(jobs: 2, uploads: 3))
        let finished = Mutex<[String: Int]>([:])
        for job in jobs(60) {
            pipeline.submit(job) { result in
                #expect(result.status == .done)
                finished.withLock { $0[result.source, default: 0] += 1 }
            }
        }
        pipeline.waitUntilIdle()
        #expect(finished.withLock { $0.count } == 60)
        #expect(finished.withLock { $0.values.allSatisfy { $0 == 1 } })
        #expect(compressor.maxConcurrentCalls <= 2)
        #expect(storage.maxConcurrentPuts <= 3)
        #expect(storage.objects.count == 180)
        #expect(pipeline.jobsInFlight == 0)
    }

    @Test func theCompressorMayGiveMemoryBackOnlyWhenNothingIsInFlight() {
        let compressor = ScriptedCompressor(work: .milliseconds(3))
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: compressor, storage: InMemoryStorage()),
            configuration: .init(jobs: 2, uploads: 2))
        let all = jobs(24)
        // Two bursts, each submitted as fast as the pipeline accepts: busy throughout, then idle.
        for burst in [all[..<12], all[12...]] {
            let before = compressor.memoryReleases
            for job in burst { pipeline.submit(job) { _ in } }
            pipeline.waitUntilIdle()
            // The call follows the last job's completion on the pipeline's thread.
            let deadline = ContinuousClock.now + .seconds(5)
            while compressor.memoryReleases == before && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
            #expect(compressor.memoryReleases > before, "an idle pipeline lets the compressor give memory back")
        }
        // Never per job: a busy pipeline keeps what the next image will reuse.
        #expect(compressor.memoryReleases < all.count)
    }

    @Test func slowStorageHoldsBackAcceptanceSoMemoryStaysBounded() {
        // Storage far slower than compression: without backpressure every encoded image would pile up.
        let compressor = ScriptedCompressor()
        let storage = InMemoryStorage(delay: .milliseconds(2), retainingBodies: false)
        let configuration = JobPipeline.Configuration(jobs: 2, uploads: 2, maxInFlight: 4)
        let pipeline = JobPipeline(handler: FileHandler(compressor: compressor, storage: storage), configuration: configuration)
        let maxInFlightSeen = Atomic<Int>(0)
        for job in jobs(120) {
            pipeline.submit(job) { _ in }
            let now = pipeline.jobsInFlight
            maxInFlightSeen.max(now)
        }
        pipeline.waitUntilIdle()
        #expect(storage.objects.count == 360)
        #expect(maxInFlightSeen.load(ordering: .relaxed) <= 4)
        #expect(compressor.maxLiveOutputs <= 4 * 3, "at most maxInFlight jobs' outputs alive at once")
        #expect(compressor.liveOutputs == 0, "outputs are released once stored")
    }

    @Test func jobsWaitingForTheirOutputsToBeMadeDurableHoldNoRoomAndFinishOnlyThen() {
        // A store that takes the bytes at once and reports each put later, as the local directory
        // does between rounds of fsyncs.
        let compressor = ScriptedCompressor()
        let storage = DeferredStorage()
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: compressor, storage: storage), configuration: .init(jobs: 1, uploads: 1, maxInFlight: 2))
        let results = Mutex<[JobResult]>([])
        let accepted = DispatchSemaphore(value: 0)
        let all = jobs(10)
        Thread.detachNewThread {
            for job in all { pipeline.submit(job) { result in results.withLock { $0.append(result) } } }
            accepted.signal()
        }
        #expect(accepted.wait(timeout: .now() + 20) == .success, "ten jobs accepted with room for two, none of them finished")
        let deadline = ContinuousClock.now + .seconds(20)
        while storage.waiting < 30 && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.002) }
        #expect(storage.waiting == 30)
        #expect(results.withLock { $0.isEmpty }, "no job reported before its outputs are durable")
        #expect(compressor.liveOutputs == 0, "the waiting jobs hold none of their bytes")
        #expect(compressor.maxLiveOutputs <= 2 * 3)
        // Reports whatever arrives until the pipeline is idle, so a failure above cannot hang here.
        repeat { storage.reportAll() } while !pipeline.waitUntilIdle(timeout: .now() + .milliseconds(20))
        #expect(results.withLock { $0.count == 10 && $0.allSatisfy { $0.status == .done } })
        #expect(pipeline.jobsInFlight == 0)
    }

    @Test func reservingRefusesWhenFull() {
        let compressor = ScriptedCompressor(work: .milliseconds(50))
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: compressor, storage: InMemoryStorage()),
            configuration: .init(jobs: 1, uploads: 1, maxInFlight: 1))
        let all = jobs(2)
        #expect(pipeline.reserve(timeout: .now()))
        pipeline.submitReserved(all[0]) { _ in }
        #expect(!pipeline.reserve(timeout: .now()))
        pipeline.waitUntilIdle()
        #expect(pipeline.reserve(timeout: .now()))
        pipeline.submitReserved(all[1]) { _ in }
        pipeline.waitUntilIdle()
    }

    @Test func failuresDoNotStopTheOthers() {
        let compressor = ScriptedCompressor(failing: { $0.hasPrefix("1") ? ImagePipeError(.corruptImage, "bad") : nil })
        let pipeline = JobPipeline(handler: FileHandler(compressor: compressor, storage: InMemoryStorage()))
        let statuses = Mutex<[String: JobResult.Status]>([:])
        for job in jobs(25) {
            pipeline.submit(job) { result in statuses.withLock { $0[result.source] = result.status } }
        }
        pipeline.waitUntilIdle()
        let failed = statuses.withLock { $0.filter { $0.value == .failed }.keys.sorted() }
        #expect(failed == ["1.jpg", "10.jpg", "11.jpg", "12.jpg", "13.jpg", "14.jpg", "15.jpg", "16.jpg", "17.jpg", "18.jpg", "19.jpg"])
        #expect(statuses.withLock { $0.count } == 25)
    }
}

extension Atomic where Value == Int {
    func max(_ candidate: Int) {
        var current = load(ordering: .relaxed)
        while candidate > current {
            let (exchanged, original) = compareExchange(expected: current, desired: candidate, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
}

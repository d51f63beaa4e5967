import Foundation
import ImagePipe
import ImagePipeTestKit
import ImagePipeTestSupport
import Synchronization
import Testing

@Suite struct JobPipelineTests {
    let directory = TemporaryDirectory()

    func jobs(_ count: Int) -> [Job] {
        (0..<count).map { Job(path: directory.write("src/\($0).jpg", ScriptedCompressor.image("image \($0)")), relativePath: "\($0).jpg") }
    }

    @Test func everyJobFinishesExactlyOnceWithinTheConcurrencyLimits() async throws {
        let compressor = ScriptedCompressor(work: .milliseconds(2))
        let storage = InMemoryStorage(delay: .milliseconds(1))
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: compressor, storage: storage),
            limits: .init(jobs: 2, uploads: 3))
        let results = try await pipeline.runAll(jobs(60))
        let finished = Dictionary(grouping: results, by: \.source).mapValues(\.count)
        #expect(results.allSatisfy { $0.status == .done })
        #expect(finished.count == 60 && finished.values.allSatisfy { $0 == 1 })
        #expect(compressor.maxConcurrentCalls <= 2)
        #expect(storage.maxConcurrentPuts <= 3)
        #expect(storage.objects.count == 180)
        #expect(pipeline.capacity.held == 0)
    }

    @Test func theCompressorMayGiveMemoryBackOnlyWhenNothingIsInFlight() async throws {
        // The first job of each burst waits until the whole burst is submitted, so the pipeline is
        // busy throughout however slowly a loaded machine runs the submitting task.
        let gates = ["0.jpg": DispatchSemaphore(value: 0), "12.jpg": DispatchSemaphore(value: 0)]
        let compressor = ScriptedCompressor(
            failing: { name in
                // A minute at most: a test that failed before opening the gate still ends.
                _ = gates[name]?.wait(timeout: .now() + 60)
                return nil
            }, work: .milliseconds(3))
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: compressor, storage: InMemoryStorage()),
            limits: .init(jobs: 2, uploads: 2))
        let all = jobs(24)
        for (burst, gate) in [(all[..<12], gates["0.jpg"]!), (all[12...], gates["12.jpg"]!)] {
            let before = compressor.memoryReleases
            for job in burst {
                try await pipeline.reserve()
                pipeline.submit(job) { _ in }
            }
            #expect(compressor.memoryReleases == before, "not while the burst's first job is in flight")
            gate.signal()
            await pipeline.idle()
            // The call follows the last job's end, on the thread that ended it.
            #expect(await eventually { compressor.memoryReleases > before })
            #expect(compressor.memoryReleases == before + 1, "an idle pipeline lets the compressor give memory back, once")
        }
    }

    @Test func slowStorageHoldsBackAdmissionSoMemoryStaysBounded() async throws {
        // Storage far slower than compression: without backpressure every encoded image would pile up.
        let compressor = ScriptedCompressor()
        let storage = InMemoryStorage(delay: .milliseconds(2), retainingBodies: false)
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: compressor, storage: storage), limits: .init(jobs: 2, uploads: 2, room: 4, handedOff: 8))
        let maxHeld = Atomic<Int>(0)
        for job in jobs(120) {
            try await pipeline.reserve()
            maxHeld.max(pipeline.capacity.working)
            pipeline.submit(job) { _ in }
        }
        await pipeline.idle()
        #expect(storage.objects.count == 360)
        #expect(maxHeld.load(ordering: .relaxed) <= 4)
        #expect(compressor.maxLiveOutputs <= 4 * 3, "at most the room's jobs' outputs alive at once")
        #expect(await eventually { compressor.liveOutputs == 0 }, "outputs are released once stored")
    }

    @Test func jobsWaitingForTheirOutputsToBeMadeDurableHoldNoRoomAndFinishOnlyThen() async throws {
        // A store that takes the bytes at once and reports each put later, as the local directory
        // does between rounds of fsyncs.
        let compressor = ScriptedCompressor()
        let storage = DeferredStorage()
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: compressor, storage: storage), limits: .init(jobs: 1, uploads: 1, room: 2, handedOff: 4))
        #expect(pipeline.capacity.limits.holdLimit == 6, "room for two, and twice that handed off")
        let events = Mutex<[String]>([])
        for job in jobs(6) {
            // Admitted without waiting: each job gives its room back once its outputs are handed off.
            try await pipeline.reserve()
            pipeline.submit(job) { event in
                switch event {
                case .handedOff: events.withLock { $0.append("handed off") }
                case .finished: events.withLock { $0.append("finished") }
                case .withdrawn: events.withLock { $0.append("withdrawn") }
                }
            }
        }
        // Reported on every way out, so that a failed wait leaves no job blocked behind the store.
        defer { storage.reportAll() }
        try #require(await eventually(seconds: 60) { storage.waiting >= 18 }, "every output reaches the store")
        #expect(pipeline.tryReserve(upTo: 1) == 0, "the hold limit is reached: six jobs wait for their fsyncs")
        #expect(events.withLock { $0 } == Array(repeating: "handed off", count: 6), "no job reported before its outputs are durable")
        #expect(compressor.liveOutputs == 0, "the waiting jobs hold none of their bytes")
        #expect(compressor.maxLiveOutputs <= 2 * 3)
        storage.reportAll()
        await pipeline.idle()
        #expect(events.withLock { $0.filter { $0 == "finished" }.count } == 6)
        #expect(pipeline.capacity.held == 0 && pipeline.tryReserve(upTo: 3) == 2, "the room is back")
        pipeline.cancelReservation(2)
    }

    @Test func jobsWaitingForTheirOutputsToBeMadeDurableKeepNoSourceOpen() async throws {
        // Every source is kept open for the decoder (as large ones are) and let go once compressed:
        // jobs waiting for their round of fsyncs are bounded by the store's open files, not by
        // sources held for nothing.
        let storage = DeferredStorage()
        let handler = FileHandler(
            compressor: ScriptedCompressor(), storage: storage, configuration: .init(inMemoryLimit: 0))
        let pipeline = JobPipeline(handler: handler, limits: .init(jobs: 1, uploads: 1, room: 2, handedOff: 4))
        let sources = jobs(6)
        for job in sources {
            try await pipeline.reserve()
            pipeline.submit(job) { _ in }
        }
        // Reported on every way out, so that a failed wait leaves no job blocked behind the store.
        defer { storage.reportAll() }
        try #require(await eventually(seconds: 60) { storage.waiting >= 18 }, "every output reaches the store")
        let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")
        }
        #expect(!sources.contains { job in open.contains(job.path) }, "open: \(open.filter { $0.contains("/src/") })")
        storage.reportAll()
        await pipeline.idle()
        #expect(pipeline.capacity.held == 0)
    }

    @Test func aJobThatEndsBeforeItsOutputsAreHandedOffGivesItsRoomBackOnce() async throws {
        let pipeline = JobPipeline(
            handler: FileHandler(
                compressor: ScriptedCompressor(failing: { _ in ImagePipeError(.corruptImage, "bad") }), storage: InMemoryStorage()),
            limits: .init(jobs: 1, uploads: 1, room: 1, handedOff: 2))
        let events = Mutex<[String]>([])
        try await pipeline.reserve()
        pipeline.submit(jobs(1)[0]) { event in
            switch event {
            case .handedOff: events.withLock { $0.append("handed off") }
            case .finished(let result): events.withLock { $0.append("finished \(result.status)") }
            case .withdrawn: events.withLock { $0.append("withdrawn") }
            }
        }
        await pipeline.idle()
        #expect(events.withLock { $0 } == ["finished failed"])
        #expect(pipeline.capacity.working == 0 && pipeline.capacity.held == 0)
    }

    @Test func aJobWithdrawnBeforeItStartsEndsUnreadWithItsRoomBackAndNoResult() async throws {
        let compressor = ScriptedCompressor()
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: compressor, storage: InMemoryStorage()), limits: .init(jobs: 1, uploads: 1, room: 1, handedOff: 2))
        var job = jobs(1)[0]
        let token = JobCancellation()
        job.cancellation = token
        token.withdraw()
        let events = Mutex<[String]>([])
        try await pipeline.reserve()
        pipeline.submit(job) { event in
            switch event {
            case .handedOff: events.withLock { $0.append("handed off") }
            case .finished: events.withLock { $0.append("finished") }
            case .withdrawn: events.withLock { $0.append("withdrawn") }
            }
        }
        await pipeline.idle()
        #expect(events.withLock { $0 } == ["withdrawn"])
        #expect(compressor.calls.isEmpty && pipeline.capacity.held == 0 && pipeline.capacity.working == 0)
    }

    @Test func reservingRefusesWhenFullAndAWaiterIsAdmittedWhenAJobEnds() async throws {
        let compressor = ScriptedCompressor(work: .milliseconds(50))
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: compressor, storage: InMemoryStorage()),
            limits: .init(jobs: 1, uploads: 1, room: 1, handedOff: 2))
        let all = jobs(2)
        #expect(pipeline.tryReserve(upTo: 2) == 1)
        pipeline.submit(all[0]) { _ in }
        #expect(pipeline.tryReserve(upTo: 1) == 0)
        try await pipeline.reserve()
        #expect(compressor.calls == ["0.jpg"], "admitted once the first job ended")
        pipeline.submit(all[1]) { _ in }
        await pipeline.idle()
    }

    @Test func aWaitingReservationEndsWhenItsTaskIsCancelled() async throws {
        let pipeline = JobPipeline(
            handler: FileHandler(compressor: ScriptedCompressor(), storage: DeferredStorage()),
            limits: .init(jobs: 1, uploads: 1, room: 1, handedOff: 2))
        #expect(pipeline.tryReserve(upTo: 1) == 1)
        let waiting = Task { try await pipeline.reserve() }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        pipeline.cancelReservation()
        #expect(pipeline.tryReserve(upTo: 1) == 1, "the cancelled waiter took nothing")
        pipeline.cancelReservation()
    }

    @Test func aCancelledJobStopsAtItsNextSafePointAndStoresNothing() async throws {
        let compressor = ScriptedCompressor()
        let storage = InMemoryStorage()
        let pipeline = JobPipeline(handler: FileHandler(compressor: compressor, storage: storage), limits: .init(jobs: 1, uploads: 1))
        var job = jobs(1)[0]
        let token = JobCancellation()
        job.cancellation = token
        token.cancel()
        let result = try await pipeline.run(job)
        #expect(result.status == .failed && result.errorCode == .cancelled && result.transient == false)
        #expect(compressor.calls.isEmpty && storage.putCount == 0, "neither compressed nor stored")
    }

    @Test func smallSourcesWaitingTogetherAreCompressedInOneCallAndEachEndsOnItsOwn() async throws {
        let compressor = ScriptedCompressor(
            failing: { $0 == "6.jpg" ? ImagePipeError(.corruptImage, "bad") : nil }, held: true,
            batching: CompressionBatching(sources: 4, sourceBytes: 1 << 10, totalBytes: 1 << 20))
        let storage = InMemoryStorage()
        let pipeline = JobPipeline(handler: FileHandler(compressor: compressor, storage: storage), limits: .init(jobs: 1, uploads: 2, room: 12))
        let running = Task { try await pipeline.runAll(jobs(10)) }
        // The first call (of one job, or of the first few as a batch) holds the only lane until the others wait together.
        #expect(
            await eventually(seconds: 60) {
                compressor.runningCalls == 1 && pipeline.waitingForCompression + max(1, compressor.batches.first?.count ?? 0) == 10
            })
        for _ in 0..<10 { compressor.letOneThrough() }
        let results = try await running.value

        #expect(results.count == 10)
        #expect(results.filter { $0.status == .failed }.map(\.source) == ["6.jpg"], "a failure in a batch is that job's alone")
        #expect(results.filter { $0.status == .done }.count == 9)
        #expect(storage.objects.count == 27, "each done job's three outputs, its own")
        for result in results where result.status == .done {
            #expect(
                result.variants.allSatisfy {
                    storage.objects[$0.key].map { String(decoding: $0.body, as: UTF8.self).hasPrefix(result.source + ":") } == true
                })
        }
        let batches = compressor.batches
        #expect(!batches.isEmpty && batches.allSatisfy { $0.count > 1 && $0.count <= 4 }, "\(batches)")
        #expect(batches.map(\.count).reduce(0, +) >= 8, "the jobs that waited went in batches: \(batches)")
        #expect(compressor.calls.sorted() == (0..<10).map { "\($0).jpg" }.sorted(), "each job compressed once")
        #expect(pipeline.waitingForCompression == 0 && pipeline.capacity.held == 0)
    }

    @Test func smallJobsWaitingForABatchGiveTheirRoomBackUpToABatchPerLane() async throws {
        let compressor = ScriptedCompressor(held: true, batching: CompressionBatching(sources: 4, sourceBytes: 1 << 10, totalBytes: 1 << 20))
        let pipeline = JobPipeline(handler: FileHandler(compressor: compressor, storage: InMemoryStorage()), limits: .init(jobs: 1, uploads: 1))
        #expect(pipeline.capacity.limits.room == 3)
        let running = Task { try await pipeline.runAll(jobs(12)) }
        // One compressing (alone, or the first of a batch), and the others waiting: the room (3) and
        // a batch beyond it (4), so 7 in all, where the room alone would admit 3.
        let taken = { max(1, compressor.batches.first?.count ?? 0) }
        #expect(await eventually(seconds: 60) { compressor.runningCalls == 1 && pipeline.waitingForCompression + taken() == 7 })
        #expect(pipeline.capacity.held == 7)
        for _ in 0..<12 { compressor.letOneThrough() }
        let results = try await running.value
        #expect(results.count == 12 && results.allSatisfy { $0.status == .done })
        #expect(compressor.batches.contains { $0.count == 4 }, "a full batch: \(compressor.batches)")
        // Every job's room and place came back once, whichever way it went.
        #expect(pipeline.capacity.working == 0 && pipeline.capacity.held == 0)
    }

    @Test func largeSourcesAreCompressedAlone() async throws {
        let compressor = ScriptedCompressor(batching: CompressionBatching(sources: 4, sourceBytes: 4, totalBytes: 1 << 20))
        let pipeline = JobPipeline(handler: FileHandler(compressor: compressor, storage: InMemoryStorage()), limits: .init(jobs: 1, room: 12))
        let results = try await pipeline.runAll(jobs(10))
        #expect(results.filter { $0.status == .done }.count == 10)
        #expect(compressor.batches.isEmpty, "sources over the batching bound are never batched")
    }

    @Test func failuresDoNotStopTheOthers() async throws {
        let compressor = ScriptedCompressor(failing: { $0.hasPrefix("1") ? ImagePipeError(.corruptImage, "bad") : nil })
        let pipeline = JobPipeline(handler: FileHandler(compressor: compressor, storage: InMemoryStorage()))
        let results = try await pipeline.runAll(jobs(25))
        let failed = results.filter { $0.status == .failed }.map(\.source).sorted()
        #expect(failed == ["1.jpg", "10.jpg", "11.jpg", "12.jpg", "13.jpg", "14.jpg", "15.jpg", "16.jpg", "17.jpg", "18.jpg", "19.jpg"])
        #expect(results.count == 25)
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

import Foundation
import ImagePipe
import ImagePipeTestSupport
import Synchronization
import Testing

/// The pipeline's one owner of capacity, with plain values: admissions, hand-offs, ends, listeners, working memory.
@Suite struct CapacityTests {
    @Test func theLimitsComeFromTheCompressionsTransfersAndOutputs() {
        let defaults = Capacity.Limits(jobs: 2, uploads: 4)
        #expect(
            defaults.room == 8 && defaults.holdLimit == 8 + Capacity.Limits.filesWaitingForDurability / 3,
            "room for twice the compressions plus the transfers, and handed-off jobs up to the files a store keeps open")
        // Many outputs per job: the handed-off jobs' files stay within what a store keeps open.
        let wide = Capacity.Limits(jobs: 16, uploads: 8, outputsPerJob: 10)
        #expect(wide.room == 40 && wide.holdLimit == 40 + Capacity.Limits.filesWaitingForDurability / 10)
        #expect(Capacity.Limits(jobs: 4, uploads: 1, room: 2).room == 4, "never less room than compressions")
    }

    @Test func admissionsStopAtTheRoomAndHandOffsGiveItBackUpToTheHoldLimit() {
        let capacity = Capacity(.init(jobs: 1, uploads: 1, room: 2, handedOff: 4))
        #expect(capacity.limits.holdLimit == 6)
        #expect(capacity.tryReserve(upTo: 5) == 2)
        #expect(capacity.tryReserve(upTo: 1) == 0)
        capacity.handOff()
        capacity.handOff()
        #expect(capacity.working == 0 && capacity.held == 2)
        #expect(capacity.tryReserve(upTo: 5) == 2)
        capacity.handOff()
        capacity.handOff()
        #expect(capacity.tryReserve(upTo: 5) == 2, "six held: two working, four handed off")
        #expect(capacity.available == 0 && capacity.held == 6)
        capacity.handOff()
        #expect(capacity.available == 0, "the hold limit, not the room, stops it now")
        #expect(capacity.end(handedOff: true) == false)
        #expect(capacity.available == 1)
    }

    @Test func anEndGivesBackTheRoomOnlyOfAJobThatStillHeldIt() {
        let capacity = Capacity(.init(jobs: 1, uploads: 1, room: 1, handedOff: 2))
        #expect(capacity.tryReserve(upTo: 1) == 1)
        #expect(capacity.end(handedOff: false) == true, "idle again")
        #expect(capacity.working == 0 && capacity.held == 0)
        #expect(capacity.tryReserve(upTo: 1) == 1)
        capacity.handOff()
        #expect(capacity.working == 0)
        #expect(capacity.end(handedOff: true))
        #expect(capacity.working == 0 && capacity.held == 0)
    }

    @Test func everyListenerHearsEachReturnOfRoom() {
        let capacity = Capacity(.init(jobs: 1, uploads: 1, room: 1, handedOff: 2))
        let heard = Mutex([0, 0])
        let first = capacity.addRoomListener { heard.withLock { $0[0] += 1 } }
        _ = capacity.addRoomListener { heard.withLock { $0[1] += 1 } }
        #expect(capacity.tryReserve(upTo: 1) == 1)
        capacity.handOff()
        capacity.end(handedOff: true)
        #expect(heard.withLock { $0 } == [2, 2], "two workers sharing a pipeline are both woken")
        capacity.removeRoomListener(first)
        capacity.cancelReservation(0)
        #expect(capacity.tryReserve(upTo: 1) == 1)
        capacity.cancelReservation()
        #expect(heard.withLock { $0 } == [2, 3])
    }

    @Test func aWaiterIsAdmittedWhenRoomComesBackAheadOfLaterTries() async throws {
        let capacity = Capacity(.init(jobs: 1, uploads: 1, room: 1, handedOff: 2))
        #expect(capacity.tryReserve(upTo: 1) == 1)
        let waiter = Task { try await capacity.reserve() }
        while capacity.held == 1 && capacity.available == 0 {
            // The waiter is queued once ending the first job admits it instead of freeing the room.
            capacity.end(handedOff: false)
            break
        }
        try await waiter.value
        #expect(capacity.held == 1 && capacity.tryReserve(upTo: 1) == 0, "the place went to the waiter")
        await withCheckedContinuation { continuation in
            Task {
                await capacity.idle()
                continuation.resume()
            }
            capacity.end(handedOff: false)
        }
        #expect(capacity.held == 0)
    }

    @Test func compressionsThatDoNotFitWaitForMemoryInArrivalOrder() throws {
        let memory = WorkingMemory(limit: 100)
        let first = memory.acquire(80)
        let secondGranted = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let second = memory.acquire(80)
            secondGranted.store(true, ordering: .sequentiallyConsistent)
            memory.release(second)
            done.signal()
        }
        // Once it is queued, it cannot have been granted: it waits on its own semaphore.
        try #require(eventually(seconds: 60) { memory.waiting > 0 }, "the second request queues")
        let grantedEarly = secondGranted.load(ordering: .sequentiallyConsistent)
        #expect(!grantedEarly)
        #expect(memory.used == 80)
        memory.release(first)
        #expect(done.wait(timeout: .now() + 60) == .success, "the second request is granted once the first is released")
        let granted = secondGranted.load(ordering: .sequentiallyConsistent)
        #expect(granted)
        #expect(memory.used == 0 && memory.waiting == 0)
    }

    @Test func smallCompressionsShareAndAnOversizedOneRunsAlone() {
        let memory = WorkingMemory(limit: 100)
        let a = memory.acquire(30), b = memory.acquire(30)
        #expect(memory.used == 60)
        memory.release(a)
        memory.release(b)
        let huge = memory.acquire(10_000)
        #expect(huge == 100, "clamped to the whole allowance")
        memory.release(huge)
        #expect(memory.used == 0)
        #expect(WorkingMemory.unlimited.acquire(1 << 40) == 0, "no limit: nothing to count")
    }
}

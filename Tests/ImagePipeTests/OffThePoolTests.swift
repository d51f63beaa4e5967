import Foundation
import ImagePipeTestSupport
import Synchronization
import Testing

/// Synchronous tests of an `.offThePool` suite block a lane each, not one of the cooperative pool's
/// threads, so more of them wait at once than there are cores.
@Suite(.offThePool) struct OffThePoolTests {
    static let arrived = Atomic<Int>(0)

    @Test func aSynchronousTestRunsOnALane() {
        #expect(ProcessTestLanes.isCurrentThreadALane)
    }

    /// Four tests that each wait for all four: on the pool's threads (one per core, two here) the
    /// first two would wait for the others until the deadline.
    @Test(arguments: 0..<4) func fourSynchronousTestsWaitAtOnce(_ index: Int) {
        #expect(ProcessTestLanes.width >= 4)
        Self.arrived.add(1, ordering: .relaxed)
        let deadline = ContinuousClock.now + .seconds(60)
        while Self.arrived.load(ordering: .relaxed) < 4, ContinuousClock.now < deadline { usleep(1000) }
        #expect(Self.arrived.load(ordering: .relaxed) >= 4, "test \(index) waited alone until the deadline")
    }
}

/// A free lane takes the tests of serialized suites first: each of their tests is ready only when
/// the one before it ends, and waiting in turn behind every test queued then, a suite of ten ran
/// at the end of the run, alone.
@Suite struct LaneQueueTests {
    @Test func jobsThatGoAheadComeFirstAndEachKindKeepsItsOrder() {
        var queue = LaneQueue<Int>()
        queue.push(1, ahead: false)
        queue.push(2, ahead: false)
        queue.push(10, ahead: true)
        queue.push(3, ahead: false)
        queue.push(11, ahead: true)
        var taken: [Int] = []
        var aheadFlags: [Bool] = []
        while let (job, wentAhead) = queue.pop() {
            taken.append(job)
            aheadFlags.append(wentAhead)
        }
        #expect(taken == [10, 11, 1, 2, 3])
        #expect(aheadFlags == [true, true, false, false, false])
        queue.push(4, ahead: false)
        #expect(queue.pop()?.0 == 4)
        #expect(queue.pop() == nil)
    }
}

@Suite(.offThePool, .serialized) struct SerializedOffThePoolTests {
    @Test func aTestOfASerializedSuiteGoesAhead() {
        #expect(OffThePool.goesAhead)
        #expect(ProcessTestLanes.isCurrentThreadALane)
    }
}

extension OffThePoolTests {
    @Test func aTestOfASuiteThatRunsSideBySideWaitsItsTurn() {
        #expect(!OffThePool.goesAhead)
        #expect(ProcessTestLanes.isCurrentThreadALane)
    }
}

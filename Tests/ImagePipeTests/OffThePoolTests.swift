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

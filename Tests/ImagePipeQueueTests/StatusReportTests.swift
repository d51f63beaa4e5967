// The worker's status line: its rate counts images done, not failures.
import Foundation
@testable import ImagePipeQueue
import Logging
import Testing

@Suite struct StatusReportTests {
    @Test func theRateCountsOnlyJobsDoneSinceTheLastLine() {
        let start = ContinuousClock.now
        var report = StatusReport(startedAt: start)
        var statistics = WorkerLoop.Statistics()
        statistics.done = 3
        statistics.failed = 5
        let first = report.fields(waiting: nil, statistics: statistics, at: start + .seconds(2))
        #expect(first["images_per_s"].map { "\($0)" } == "1.5")
        statistics.failed = 50
        let second = report.fields(waiting: 4, statistics: statistics, at: start + .seconds(4))
        #expect(second["images_per_s"].map { "\($0)" } == "0.0", "failures are no work done")
    }
}

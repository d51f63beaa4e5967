// Tests of ProcessRunner's measurements: wall time, CPU time and exit status of real child processes.
import Foundation
@testable import ImagePipeBench
import Testing

@Suite struct ProcessRunnerTests {
    /// A shell loop that burns CPU for a while (tens of milliseconds) without touching the disk.
    static let burn = ["sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"]

    @Test func aRunReportsTheCPUTimeOfItsProcesses() {
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        let one = ProcessRunner.run([Self.burn])
        #expect(one.succeeded)
        #expect(one.cpuSeconds > 0)
        // rusage counts in clock ticks at worst: a tick's slack on each side.
        #expect(one.cpuSeconds <= one.seconds * cores + 0.02)

        // Four processes, two at a time: their CPU times add up, still within what the cores could
        // give. A busy machine only ever adds CPU time to a run (the same loop took 0.54 s where it
        // takes 0.25 s on a quiet one), so the four are compared with the lesser of two single runs
        // measured around them, and need only half of what they should add up to.
        let four = ProcessRunner.run(Array(repeating: Self.burn, count: 4), parallel: 2)
        let again = ProcessRunner.run([Self.burn])
        #expect(four.succeeded && again.succeeded)
        #expect(
            four.cpuSeconds > min(one.cpuSeconds, again.cpuSeconds) * 2,
            "\(four.cpuSeconds) s for four, \(one.cpuSeconds) s and \(again.cpuSeconds) s for one")
        #expect(four.cpuSeconds <= four.seconds * cores + 0.02)
    }

    @Test func aSleepingRunTakesWallTimeButLittleCPU() {
        let run = ProcessRunner.run([["sleep", "0.3"]])
        #expect(run.succeeded)
        #expect(run.seconds >= 0.3)
        #expect(run.cpuSeconds < 0.1)
    }

    @Test func theRunsCPUTimeIsInItsJSON() throws {
        let run = RunMeasurement(seconds: 1, peakResidentBytes: 1, succeeded: true, cpuSeconds: 0.25)
        let object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(run)) as? [String: Any])
        #expect(object["cpu_seconds"] as? Double == 0.25)
    }

    /// A run waits for its own children only: a child someone else started in the same program
    /// (Foundation's Process in a test running beside it) must keep its exit status for them.
    @Test func aRunLeavesOtherChildrenOfTheProcessAlone() throws {
        // Spawned here and left unreaped, so only this test (or a runner reaping any child) collects it.
        var other: pid_t = 0
        let words = ["/bin/sh", "-c", "sleep 0.1; exit 3"]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        #expect(posix_spawn(&other, "/bin/sh", nil, nil, argv, environ) == 0)
        // The other child exits while the run is still waiting for its own.
        let run = ProcessRunner.run([["sleep", "0.5"]])
        #expect(run.succeeded)
        var status: Int32 = 0
        #expect(waitpid(other, &status, 0) == other, "the run reaped a child that was not its own")
        #expect((status >> 8) & 0xff == 3)
    }
}

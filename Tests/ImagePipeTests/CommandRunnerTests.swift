// The tests' process runner ends a hung run at its deadline and says so, instead of holding the suite.
import Foundation
import ImagePipeTestSupport
import Testing

@Suite struct CommandRunnerTests {
    @Test func aRunPastItsDeadlineIsKilledAndFailsNamingTheCommand() throws {
        let started = ContinuousClock.now
        do {
            _ = try CommandRunner.run(executable: "/bin/sh", ["-c", "echo started; exec sleep 120"], timeout: .seconds(1))
            Issue.record("a run of two minutes came back within its one-second deadline")
        } catch let error as CommandRunner.TimedOut {
            #expect(error.description.contains("/bin/sh -c echo started; exec sleep 120 ran past 1.0 seconds and was killed"), "\(error)")
            #expect(error.stdout == "started\n", "what it printed before the deadline is kept")
        }
        #expect(ContinuousClock.now - started < .seconds(60), "ended at its deadline, not when the command would have")
    }

    @Test func aRunWithinItsDeadlineIsLeftAlone() throws {
        let output = try CommandRunner.run(executable: "/bin/sh", ["-c", "sleep 0.2; echo done"], timeout: .seconds(30))
        #expect(output.status == 0 && output.stdout == "done\n")
    }
}

// .ci/test-times, the list `make test` ends with: its times are labelled for what they are.
import Foundation
import ImagePipeTestSupport
import Testing

/// A test's time in Swift Testing's xunit file runs from its start to its end while others run
/// beside it, waits for a free thread included: the list must not present it as a test's own cost
/// (a run once listed tests of seconds at 465 s as "slowest tests").
@Suite(.offThePool) struct TestTimesScriptTests {
    @Test func theListSaysItsTimesAreWallTimeInASharedRun() throws {
        let directory = TemporaryDirectory(prefix: "imagepipe-test-times")
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites><testsuite name="TestResults" tests="3">
            <testcase classname="ImagePipeCLITests.WaitingTests" name="waitedForAThread()" time="465.2" />
            <testcase classname="ImagePipeCLITests.WaitingTests" name="quick()" time="1.5" />
            <testcase classname="ImagePipeTests.OtherTests" name="other()" time="2.0" />
            </testsuite></testsuites>
            """
        let file = directory.write("run-swift-testing.xml", xml)
        let output = try CommandRunner.run(executable: "/usr/bin/python3", [Fixtures.repository + "/.ci/test-times", file])
        #expect(output.status == 0, "\(output)")
        let text = output.stdout
        #expect(text.contains("wall time, start to end"), "\(text)")
        #expect(text.contains("a test waiting for a free thread counts the wait"), "\(text)")
        #expect(text.contains("longest tests by wall time, start to end (waits for a free thread included):"), "\(text)")
        #expect(!text.contains("slowest tests:"), "an unlabelled list reads as each test's own cost: \(text)")
        #expect(text.contains("  465.2s  ImagePipeCLITests.WaitingTests.waitedForAThread()"), "\(text)")
        #expect(text.contains("3 tests in 2 suites"), "\(text)")
    }
}

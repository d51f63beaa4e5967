// A test that needs a missing program is skipped on a developer's machine and fails under CI.
import ImagePipeTestSupport
import Testing

@Suite(.offThePool) struct RequiredToolTests {
    let missing = RequiredTool("no-such-tool", at: "/nonexistent/no-such-tool", package: "no-such-package")
    let present = RequiredTool("sh", at: "/bin/sh", package: "dash")

    @Test func aMissingToolSkipsOutsideCIAndFailsInCINamingTheTool() async throws {
        #expect(try await ConditionTrait.requires(present, missing, inCI: false).evaluate() == false)
        await #expect {
            try await ConditionTrait.requires(present, missing, inCI: true).evaluate()
        } throws: { error in
            let text = "\(error)"
            return text.contains("no-such-tool") && text.contains("no-such-package") && !text.contains("dash")
        }
        #expect(try await ConditionTrait.requires(present, inCI: true).evaluate())
    }

    @Test func aTestThatNeedsRootSkipsWithoutItOutsideCIAndFailsInCISayingWhy() async throws {
        #expect(try await ConditionTrait.requiresRoot("mount a tmpfs", inCI: false, isRoot: false).evaluate() == false)
        await #expect {
            try await ConditionTrait.requiresRoot("mount a tmpfs", inCI: true, isRoot: false).evaluate()
        } throws: { error in "\(error)".contains("needs root to mount a tmpfs") }
        #expect(try await ConditionTrait.requiresRoot("mount a tmpfs", inCI: true, isRoot: true).evaluate())
    }
}

// Messages a new user met that said the wrong thing, each run on the built binary: what they say now.
import Foundation
import ImagePipeTestSupport
import Testing

/// Each test is a mistake a user made, and the message must name the mistake and the way out.
@Suite struct MessageTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-messages")

    func photos() -> String {
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "photos/tiny.png")
        return directory.url("photos")
    }

    @Test func aMisspeltCommandIsNamedWithTheClosestCommand() throws {
        let output = try CommandRunner.run(["bach", photos(), "--dest", directory.url("out")], environment: [:])
        #expect(output.status == 2, "\(output)")
        #expect(
            output.stderr.contains("unknown command 'bach' (commands: batch, watch,") && output.stderr.contains("; did you mean 'batch'?"),
            "\(output.stderr)")
        #expect(!output.stderr.contains("Unknown option"), "not the option after the misspelt command: \(output.stderr)")
        // Nothing close: the commands are listed, no guess is made.
        let far = try CommandRunner.run(["resize", photos()], environment: [:])
        #expect(far.status == 2 && far.stderr.contains("unknown command 'resize' (commands: batch, watch"), "\(far.stderr)")
        #expect(!far.stderr.contains("did you mean"))
        #expect(!FileManager.default.fileExists(atPath: directory.url("out")))
    }

    @Test func aWebAddressIsRefusedAsASourceKindNotAsAMissingFile() throws {
        let output = try CommandRunner.run(
            ["batch", "https://example.com/a.jpg", "--dest", directory.url("out")], environment: [:])
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains("source https://example.com/a.jpg: https:// sources are not supported"), "\(output.stderr)")
        #expect(output.stderr.contains("s3://") && output.stderr.contains("supabase://") && output.stderr.contains("--from"))
        #expect(!output.stderr.contains("does not exist"), "\(output.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("out")), "nothing is created")
    }

    @Test func aMisspeltPresetGetsASuggestionAsAConfigurationKeyDoes() throws {
        let output = try CommandRunner.run(["batch", photos(), "--dest", directory.url("out"), "--preset", "wbe"], environment: [:])
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains("unknown preset 'wbe' (presets: web, web-auto); did you mean 'web'?"), "\(output.stderr)")
    }
}

// Messages a new user met that said the wrong thing, each run on the built binary: what they say now.
import Foundation
import ImagePipeTestSupport
import Testing

/// Each test is a mistake a user made, and the message must name the mistake and the way out.
@Suite(.offThePool) struct MessageTests {
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

    @Test func everyErrorLineBeginsTheSameWayArgumentParsersToo() throws {
        for (arguments, reason) in [
            (["batch", photos(), "--dest", directory.url("out"), "--jobs", "x"], "The value 'x' is invalid for '--jobs <jobs>'"),
            (["batch", photos(), "--dest"], "Missing value for '--dest <dest>'"),
            (["batch", photos(), "--dest", directory.url("out"), "--variant", "t=10x10,bmp"], "t=10x10,bmp"),
        ] {
            let output = try CommandRunner.run(arguments, environment: [:])
            #expect(output.status == 2, "\(output)")
            #expect(output.stderr.hasPrefix("imagepipe: error: ") && output.stderr.contains(reason), "\(output.stderr)")
            #expect(!output.stderr.contains("Error: "), "\(output.stderr)")
        }
        // An exit status alone adds no line: a batch with a failure ends with its summary.
        CommandRunner.copyFixture("hostile/truncated.jpg", to: directory, as: "broken/bad.jpg")
        let failed = try CommandRunner.run(["batch", directory.url("broken"), "--dest", directory.url("out")], environment: [:])
        #expect(failed.status == 1 && failed.stderr.hasSuffix(" out\n") && !failed.stderr.hasSuffix("\n\n"), "\(failed.stderr)")
        // Help is not an error, and is printed as it is.
        let help = try CommandRunner.run(["batch", "--help"], environment: [:])
        #expect(help.status == 0 && help.stdout.hasPrefix("OVERVIEW: ") && !help.stdout.contains("imagepipe: error"), "\(help)")
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

    @Test func configWithNothingToCheckShowsItsOwnUsage() throws {
        let output = try CommandRunner.run(["config"], environment: [:])
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains("imagepipe config: nothing to check"), "\(output.stderr)")
        #expect(output.stderr.contains("USAGE: imagepipe config"), "\(output.stderr)")
        #expect(!output.stderr.contains("imagepipe watch <queue>"), "not watch's usage: \(output.stderr)")
        // A variable that sets an option is something to check: config goes on as before, as watch.
        let configured = try CommandRunner.run(
            ["config"], environment: ["IMAGEPIPE_QUEUE": directory.url("queue"), "IMAGEPIPE_DEST": directory.url("out")])
        #expect(configured.status == 0, "\(configured)")
        #expect(configured.stdout.contains("[watch]"), "\(configured.stdout)")
    }

    @Test func configChecksWhatTheRunChecksBeforeItsFirstJobAndSaysWhatItCannot() throws {
        let home = ["HOME": directory.path]
        // Each of these passed `config` (exit 0) and then stopped the run at once.
        let noCredentials = try CommandRunner.run(["config", "batch", photos(), "--dest", "s3://media/web"], environment: home)
        #expect(noCredentials.status == 2 && noCredentials.stderr.contains("no AWS credentials for s3://media/web"), "\(noCredentials)")
        let missingSource = try CommandRunner.run(
            ["config", "batch", directory.url("nowhere"), "--dest", directory.url("out")], environment: home)
        #expect(missingSource.status == 2 && missingSource.stderr.contains("nowhere does not exist"), "\(missingSource)")
        let webSource = try CommandRunner.run(["config", "batch", "http://example.com/a.jpg", "--dest", directory.url("out")], environment: home)
        #expect(webSource.status == 2 && webSource.stderr.contains("http:// sources are not supported"), "\(webSource)")
        let noSupabase = try CommandRunner.run(
            ["config", "watch", directory.url("queue"), "--dest", "supabase://media"], environment: home)
        #expect(noSupabase.status == 2, "\(noSupabase)")
        // The message names the setting, where it is read from, and that the file is not the place.
        #expect(noSupabase.stderr.contains("SUPABASE_URL is not set: supabase://media needs"), "\(noSupabase.stderr)")
        #expect(noSupabase.stderr.contains("environment variable SUPABASE_URL") && noSupabase.stderr.contains("never from a --config file"))
        #expect(!FileManager.default.fileExists(atPath: directory.url("queue")), "config creates no queue")

        // What needs a server to answer is said to be unchecked, not passed over in silence.
        let remote = try CommandRunner.run(
            ["config", "watch", "postgres://worker@127.0.0.1:1/media?queue=images", "--dest", "s3://media/web"],
            environment: home.merging(["AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"]) { $1 })
        #expect(remote.status == 0, "\(remote)")
        #expect(remote.stdout.contains("# Not checked here"), "\(remote.stdout)")
        #expect(remote.stdout.contains("that s3://media/web answers"), "\(remote.stdout)")
        #expect(remote.stdout.contains("that postgres://worker@127.0.0.1:1/media?queue=images answers"), "\(remote.stdout)")
        let local = try CommandRunner.run(["config", "batch", photos(), "--dest", directory.url("out")], environment: home)
        #expect(local.status == 0 && !local.stdout.contains("Not checked"), "\(local)")
    }
}

/// Issue 52 §5: what the first run after the quick starts showed, each on the built binary.
@Suite(.offThePool) struct FirstRunMessageTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-first-run")

    /// `82` where the quality goes is a quality without its `q`: the message says how to write it,
    /// not that `82` is an unknown option.
    @Test func aQualityWithoutItsQIsToldHowToWriteIt() throws {
        CommandRunner.copyFixture("images/formats/tiny.png", to: directory, as: "photos/tiny.png")
        let output = try CommandRunner.run(
            ["batch", directory.url("photos"), "--dest", directory.url("out"), "--variant", "large=2048x2048,jpeg,82"], environment: [:])
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains("invalid --variant 'large=2048x2048,jpeg,82': write the quality as q82, not 82"), "\(output.stderr)")
        #expect(!output.stderr.contains("unknown option '82'"), "\(output.stderr)")
    }

    /// Every command's help names each default once: an option whose own text says its default
    /// (`(default 5m).`) is not followed by the parser's (`(default: 5m)`).
    @Test func noHelpSaysADefaultTwice() throws {
        let commands = [
            [], ["batch"], ["watch"], ["enqueue"], ["retry"], ["srcset"], ["report"], ["prune"], ["config"], ["bench"], ["version"],
            ["queue"], ["queue", "status"], ["queue", "list"], ["queue", "retry"], ["queue", "cancel"], ["queue", "prune"],
        ]
        var checked = 0
        for command in commands {
            let output = try CommandRunner.run(command + ["--help"], environment: [:])
            guard output.status == 0 else { continue }
            checked += 1
            // The help's lines are wrapped: an option's text is read as one line.
            let text = output.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            let twice = text.range(of: #"\(default[^()]*\)\.? \(default: "#, options: .regularExpression)
            #expect(twice == nil, "\(command): \(twice.map { String(text[$0]) } ?? "")")
        }
        #expect(checked >= 12, "the commands' helps were read")
        let watch = try CommandRunner.run(["watch", "--help"], environment: [:]).stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(watch.contains("(default: 5m)") && watch.contains("(default: 10s)"), "the parser still says the notify defaults")
        let batch = try CommandRunner.run(["batch", "--help"], environment: [:]).stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(batch.contains("(default 256 MiB)") && !batch.contains("268435456"), "the byte limit is said once, in MiB")
    }

    @Test func srcsetHelpNamesJPEGXLAmongTheModernFormats() throws {
        let output = try CommandRunner.run(["srcset", "--help"], environment: [:])
        let text = output.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("a <source> per modern format (JPEG XL, AVIF, WebP)"), "\(output.stdout)")
    }
}

import Foundation
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

/// One configuration for batch and watch: the `--config` file, `IMAGEPIPE_*` variables and flags,
/// on the real binary, checked by what it writes.
@Suite(.offThePool) struct ConfigurationTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-config")

    init() {
        CommandRunner.copyFixture("images/formats/small-400x300.jpg", to: directory, as: "src/photo.jpg")
    }

    /// Writes a configuration file and returns its path.
    func config(_ text: String, name: String = "imagepipe.toml") -> String {
        directory.write(name, text)
    }

    /// Runs imagepipe with only `environment`'s IMAGEPIPE_* variables (none of the test's own).
    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandRunner.Output {
        try CommandRunner.run(arguments, environment: environment)
    }

    func size(_ relative: String) throws -> (Int, Int) {
        let info = try VipsProbe.info(Data(contentsOf: URL(fileURLWithPath: directory.url(relative))))
        return (info.width, info.height)
    }

    @Test func aPresetFromTheFileMakesItsVariants() throws {
        let file = config(
            """
            # Written as an operator would.
            dest = "\(directory.url("out"))"
            preset = "avatars"

            [presets]
            avatars = [
              "small=64x64,webp,q75,cover",   # square
              "wide=200x,jpeg,q80",
            ]
            gallery = ["big=300x,png"]
            """)
        let output = try run(["batch", "--config", file, directory.url("src")])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(directory.files(under: "out") == ["photo-small.webp", "photo-wide.jpg"])
        #expect(try size("out/photo-small.webp") == (64, 64))
        #expect(try size("out/photo-wide.jpg") == (200, 150))

        // The other preset of the file, chosen on the command line.
        let gallery = try run(["batch", "--config", file, directory.url("src"), "--preset", "gallery", "--dest", directory.url("out2")])
        #expect(gallery.status == 0, "\(gallery.stderr)")
        #expect(directory.files(under: "out2") == ["photo-big.png"])
        #expect(try size("out2/photo-big.png") == (300, 225))
    }

    @Test func flagsBeatTheEnvironmentWhichBeatsTheFileWhichBeatsDefaults() throws {
        let file = config(
            """
            dest = "\(directory.url("out"))"
            variant = ["v=40x,png"]
            key = "file-{stem}-{variant}.{ext}"
            """)
        let fromFile = try run(["batch", "--config", file, directory.url("src")])
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        let environment = ["IMAGEPIPE_KEY": "env-{stem}-{variant}.{ext}"]
        let fromEnvironment = try run(["batch", "--config", file, directory.url("src")], environment: environment)
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        let fromFlag = try run(
            ["batch", "--config", file, directory.url("src"), "--key", "flag-{stem}-{variant}.{ext}"],
            environment: environment)
        #expect(fromFlag.status == 0, "\(fromFlag.stderr)")
        #expect(directory.files(under: "out") == ["env-photo-v.png", "file-photo-v.png", "flag-photo-v.png"])

        // Without the file the variables alone configure the run; the default key applies.
        let noFile = try run(
            ["batch", directory.url("src")],
            environment: ["IMAGEPIPE_DEST": directory.url("plain"), "IMAGEPIPE_VARIANT": "a=30x,png b=20x,webp,q70"])
        #expect(noFile.status == 0, "\(noFile.stderr)")
        #expect(directory.files(under: "plain") == ["photo-a.png", "photo-b.webp"], "a repeatable option's variable holds several values")
        #expect(try size("plain/photo-b.webp") == (20, 15))
    }

    @Test func variantsAndPresetAreDecidedByTheStrongestSourceThatSetsEither() throws {
        let file = config(
            """
            dest = "\(directory.url("out"))"
            variant = ["fromfile=30x,png"]

            [presets]
            tiny = ["fromflag=10x,png"]
            """)
        // The file's variants would replace a preset given in the file, but not one typed.
        let output = try run(["batch", "--config", file, directory.url("src"), "--preset", "tiny"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(directory.files(under: "out") == ["photo-fromflag.png"])

        let byVariable = try run(
            ["batch", "--config", file, directory.url("src"), "--dest", directory.url("out2")],
            environment: ["IMAGEPIPE_PRESET": "tiny"])
        #expect(byVariable.status == 0, "\(byVariable.stderr)")
        #expect(directory.files(under: "out2") == ["photo-fromflag.png"])
    }

    @Test func aCommandsOwnTableOverridesTheTopLevel() throws {
        let file = config(
            """
            dest = "\(directory.url("shared"))"
            variant = ["v=40x,png"]
            max-attempts = 3      # a watch option: batch ignores it

            [batch]
            dest = "\(directory.url("batch-only"))"
            """)
        let output = try run(["batch", "--config", file, directory.url("src")])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(directory.files(under: "batch-only") == ["photo-v.png"])
        #expect(!FileManager.default.fileExists(atPath: directory.url("shared")))
    }

    @Test(arguments: [
        ("jbos = 2", "imagepipe.toml:2: jbos: names no option of batch, watch or prune; did you mean 'jobs'?"),
        ("[watch]\nforce = true", "imagepipe.toml:3: watch.force: names no option of watch"),
        ("jobs = \"many\"", "imagepipe.toml:2: jobs: The value 'many' is invalid for '--jobs <jobs>'"),
        ("jobs = 0", "imagepipe.toml:2: jobs: --jobs must be between 1 and 256"),
        ("jobs = [1, 2]", "imagepipe.toml:2: jobs: takes one value, not an array"),
        ("overwrite = \"yes\"", "imagepipe.toml:2: overwrite: expects true or false, not a string"),
        ("variant = [\"bad\"]", "imagepipe.toml:2: variant: invalid --variant 'bad'"),
        ("preset = \"nope\"", "imagepipe.toml:2: preset: unknown preset 'nope' (presets: web, web-auto)"),
        ("key = \"../{stem}.{ext}\"", "imagepipe.toml:2: key:"),
        ("\n\n[presets]\nx = [\"a=10x,png\",\n  \"a=20x,png\"]", "imagepipe.toml:5: presets.x: variant name 'a' is used twice"),
        ("[presets]\nweb = [\"a=10x,png\"]", "imagepipe.toml:3: presets.web: 'web' is a built-in preset"),
        ("jobs = 2\njobs = 3", "imagepipe.toml:3: 'jobs' is already defined on line 2"),
        ("max_attempts = 2\nmax-attempts = 3", "imagepipe.toml:3: max-attempts: sets the same option as 'max_attempts' on line 2"),
        ("config = \"other.toml\"", "imagepipe.toml:2: config: a configuration file cannot name another one"),
        ("jobs = 2 3", "imagepipe.toml:2: unexpected '3' after the value"),
        ("key = \"{stem}", "imagepipe.toml:2: the string is not closed"),
    ])
    func aBadFileNamesTheFileTheLineAndTheKeyAndExitsTwo(_ text: String, _ expected: String) throws {
        let file = config("dest = \"\(directory.url("out"))\"\n" + text)
        let output = try run(["batch", "--config", file, directory.url("src")])
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains("imagepipe: error: \(directory.path)/" + expected), "\(output.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("out")), "nothing is created")
    }

    @Test func aFileWithoutEndIsReadOnlyToTheLimit() throws {
        // /dev/zero was read until memory ran out; a file past 1 MiB is refused having read that much.
        let endless = try run(["batch", "--config", "/dev/zero", directory.url("src"), "--dest", directory.url("out")])
        #expect(endless.status == 2, "\(endless)")
        #expect(
            endless.stderr.contains("imagepipe: error: /dev/zero: the file is longer than the 1048576 bytes a configuration file may have"),
            "\(endless.stderr)")
    }

    @Test func aMissingFileOrABadVariableExitsTwoNamingIt() throws {
        let missing = try run(["batch", "--config", directory.url("nope.toml"), directory.url("src"), "--dest", directory.url("out")])
        #expect(missing.status == 2)
        #expect(
            missing.stderr.contains("cannot read the configuration file \(directory.url("nope.toml")): No such file or directory"),
            "\(missing.stderr)")
        let byVariable = try run(
            ["batch", directory.url("src"), "--dest", directory.url("out")],
            environment: ["IMAGEPIPE_CONFIG": directory.url("gone.toml")])
        #expect(byVariable.status == 2)
        #expect(byVariable.stderr.contains("cannot read the configuration file \(directory.url("gone.toml"))"), "\(byVariable.stderr)")

        let badNumber = try run(["batch", directory.url("src"), "--dest", directory.url("out")], environment: ["IMAGEPIPE_UPLOADS": "lots"])
        #expect(badNumber.status == 2)
        #expect(
            badNumber.stderr.contains("environment variable IMAGEPIPE_UPLOADS: The value 'lots' is invalid for '--uploads <uploads>'"),
            "\(badNumber.stderr)")
        let badFlag = try run(["batch", directory.url("src"), "--dest", directory.url("out")], environment: ["IMAGEPIPE_FORCE": "maybe"])
        #expect(badFlag.status == 2)
        #expect(badFlag.stderr.contains("IMAGEPIPE_FORCE: expects true or false"), "\(badFlag.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("out")))

        // A typed value that is wrong is reported as typed, not blamed on the file.
        let file = config("dest = \"\(directory.url("out"))\"\n")
        let typed = try run(["batch", "--config", file, directory.url("src"), "--jobs", "0"])
        #expect(typed.status == 2)
        #expect(typed.stderr.contains("--jobs must be between 1 and 256") && !typed.stderr.contains("imagepipe.toml"), "\(typed.stderr)")
    }

    @Test func anUnknownVariableIsReportedButDoesNotStopTheRun() throws {
        let output = try run(
            ["batch", directory.url("src"), "--dest", directory.url("out"), "--variant", "v=10x,png"],
            environment: ["IMAGEPIPE_JOBZ": "2"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.contains("warning: IMAGEPIPE_JOBZ names no option of batch, watch or prune; ignored"), "\(output.stderr)")
    }

    @Test func theConfigCommandPrintsTheResolvedSettingsWithSecretsMasked() throws {
        let file = config(
            """
            dest = "s3://media/variants"
            jobs = 3

            [watch]
            queue = "postgres://imagepipe:file-password@db.example/images?queue=avatars"
            max-attempts = 7

            [presets]
            avatars = ["small=64x64,webp,q75,cover"]
            """)
        let environment = [
            "IMAGEPIPE_JOBS": "2",
            "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "aws-secret-value",
            "SUPABASE_SERVICE_ROLE_KEY": "supabase-secret-value",
            "PGPASSWORD": "pg-secret-value",
            "AWS_ENDPOINT_URL": "http://minio:url-secret-value@127.0.0.1:9000/?x=1&password=query-secret-value",
        ]
        // Such an endpoint is refused by the run with an s3:// destination, and so by config, which
        // checks as the run does; with a local one it is not used, and only printed, masked.
        let refused = try run(["config", "watch", "--config", file], environment: environment)
        #expect(refused.status == 2 && refused.stderr.contains("must not contain a user name or password"), "\(refused)")
        #expect(!refused.stderr.contains("url-secret-value") && !refused.stdout.contains("url-secret-value"))
        let output = try run(
            ["config", "watch", "--config", file, "--preset", "avatars", "--dest", directory.url("out")], environment: environment)
        #expect(output.status == 0, "\(output.stderr)")
        for secret in [
            "file-password", "aws-secret-value", "supabase-secret-value", "pg-secret-value", "url-secret-value",
            "query-secret-value",
        ] {
            #expect(!output.stdout.contains(secret), "\(secret) is printed: \(output.stdout)")
        }
        let lines = output.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("queue = \"postgres://imagepipe:********@db.example/images?queue=avatars\"  # \(file):5: watch.queue"))
        #expect(lines.contains("jobs = 2  # environment variable IMAGEPIPE_JOBS"))
        #expect(lines.contains("max-attempts = 7  # \(file):6: watch.max-attempts"))
        #expect(lines.contains("preset = \"avatars\"  # command line"))
        #expect(lines.contains("retry-delay = 1.0  # default"))
        #expect(lines.contains("#   AWS_ACCESS_KEY_ID = \"AKIDEXAMPLE\""))
        #expect(lines.contains("#   AWS_SECRET_ACCESS_KEY = \"********\""))
        #expect(lines.contains("#   PGPASSWORD = \"********\""))
        #expect(lines.contains("#   SUPABASE_SERVICE_ROLE_KEY = \"********\""))
        #expect(lines.contains("#   AWS_ENDPOINT_URL = \"http://minio:********@127.0.0.1:9000/?x=1&password=********\""))

        // What it prints is a configuration file itself: read back, it resolves to the same settings.
        let printed = directory.write("printed.toml", output.stdout)
        let again = try run(["config", "watch", "--config", printed])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("jobs = 2  # \(printed):"), "\(again.stdout)")
        #expect(again.stdout.contains("preset = \"avatars\"  # \(printed):"), "\(again.stdout)")
    }

    @Test func aQueueDirectorysConfigurationLeavesOutThePostgreSQLSettings() throws {
        let directoryQueue = try run(["config", "watch", directory.url("queue"), "--dest", directory.url("out")])
        #expect(directoryQueue.status == 0, "\(directoryQueue.stderr)")
        for key in ["lease", "retention"] {
            #expect(!directoryQueue.stdout.contains("\n\(key) ="), "\(key) listed for a queue directory: \(directoryQueue.stdout)")
        }
        #expect(directoryQueue.stdout.contains("\nmax-attempts = "), "the queue's own settings stay")
        let postgres = try run(["config", "watch", "postgres://imagepipe@db.example/images", "--dest", directory.url("out")])
        #expect(postgres.status == 0, "\(postgres.stderr)")
        for key in ["lease", "retention"] { #expect(postgres.stdout.contains("\n\(key) = "), "\(postgres.stdout)") }
    }

    @Test func theConfigCommandFailsLikeTheCommandWould() throws {
        let file = config("[watch]\nqueue = \"\(directory.url("queue"))\"\nmax-attempts = 0\n")
        let output = try run(["config", "--config", file, "--dest", directory.url("out")])
        #expect(output.status == 2)
        #expect(output.stderr.contains("\(file):3: watch.max-attempts: --max-attempts must be at least 1"), "\(output.stderr)")
        #expect(output.stdout.isEmpty)
    }
}

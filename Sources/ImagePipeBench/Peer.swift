// The tools a benchmark compares: imagepipe itself and whichever reference tools are installed.
import Foundation
public import ImagePipe

/// One tool doing the benchmark's job over a corpus.
public struct Peer: Sendable {
    /// Its name in the table.
    public var name: String
    /// Why it cannot run here, or nil when it can.
    public var unavailable: String?
    /// Environment variables the tool runs with.
    public var environment: [String: String] = [:]
    /// The commands of one run, and how many run at once.
    public var commands: @Sendable (_ corpus: Corpus, _ output: String) -> (commands: [[String]], parallel: Int)
    /// For imagepipe writing locally: the command of an untimed run that scores every variant
    /// (`--score`) into the manifest given, for the bytes-and-score columns.
    public var scoredCommand: (@Sendable (_ corpus: Corpus, _ output: String, _ manifest: String) -> [String])?
    /// Whether its outputs land in the run's output folder (not in object storage), where their bytes are counted.
    public var outputIsLocal = true
    /// Commands run before each timed run, untimed (queueing the corpus for queue workers).
    public var setup: (@Sendable (_ corpus: Corpus, _ output: String) -> [[String]])?
    /// A local folder outside the work folder a run writes to (a local `--also-dest`), emptied
    /// before the row's own run like the work folder's output, and not before its re-run row's,
    /// which is to find the outputs in place: left there, an earlier bench run's outputs would make
    /// the row a re-run that only checks them.
    public var extraFolder: (@Sendable (_ output: String) -> String)?

    /// The same tool under another name in the table.
    func renamed(_ name: String) -> Peer {
        var peer = self
        peer.name = name
        return peer
    }
}

/// What every peer is asked to do.
public struct BenchJob: Sendable {
    /// The variants made of each image.
    public var variants: [VariantSpec]
    /// Workers (threads or processes) every tool may use.
    public var workers: Int
    /// More options for imagepipe's own runs (`--sandbox off`); the reference tools take none.
    public var imagepipeArguments: [String]

    /// Creates a job.
    public init(variants: [VariantSpec], workers: Int, imagepipeArguments: [String] = []) {
        self.variants = variants
        self.workers = workers
        self.imagepipeArguments = imagepipeArguments
    }

    /// `name:width:height:format:quality:fit`, the form the peer scripts take.
    var scriptSpecs: [String] {
        variants.map { "\($0.name):\($0.width):\($0.height):\($0.format.rawValue):\($0.quality):\($0.fit.rawValue)" }
    }

    /// The scripts' form followed by `:progressive:effort` as imagepipe encodes them, for the C
    /// reference, which makes imagepipe's own outputs. `progressive` is the longer side from which a
    /// JPEG is progressive: 1 for always, 0 for never.
    var referenceSpecs: [String] {
        zip(variants, scriptSpecs).map { variant, spec in
            let progressive = variant.options.progressive.map { $0 ? 1 : 0 } ?? EncoderOptions.progressiveFromSide
            return "\(spec):\(progressive):\(variant.options.effort(for: variant.format))"
        }
    }
}

extension Peer {
    /// imagepipe's own `batch` command, run as a separate process like every peer.
    static func imagepipe(
        executable: String, job: BenchJob, destination: String?, label: String = "imagepipe",
        remoteCorpus: String? = nil, invocation: String = "", manifest: @escaping @Sendable (String) -> String
    ) -> Peer {
        @Sendable func command(_ corpus: Corpus, _ target: String, _ manifest: String) -> [String] {
            var command = [
                executable, "batch", remoteCorpus ?? corpus.directory, "--dest", target,
                "--manifest", manifest, "--jobs", "\(job.workers)", "--log-level", "error",
                // Every peer encodes every variant: so does imagepipe here, for bytes and scores
                // that compare like for like (a kept original has no score of its own).
                "--always-encode",
            ]
            for variant in job.variants { command += ["--variant", variant.specString] }
            return command + job.imagepipeArguments
        }
        var peer = Peer(name: label, unavailable: nil) { corpus, output in
            let target = destination.map { extraTarget($0, output: output, invocation: invocation) } ?? output
            return ([command(corpus, target, manifest(output))], 1)
        }
        peer.outputIsLocal = destination == nil
        peer.extraFolder = localFolder(destination)
        if destination == nil {
            peer.scoredCommand = { corpus, output, manifest in command(corpus, output, manifest) + ["--score"] }
        }
        return peer
    }

    /// `workers` imagepipe processes running `watch --exit-when-empty` on a PostgreSQL queue, the
    /// corpus queued beforehand (untimed) into a queue of the run's own; the run ends when both
    /// have worked off the queue. They share `job.workers` between them. With `remoteCorpus`, the
    /// jobs name the corpus's copy in object storage (`s3://bucket/prefix/FILE`) instead of the files.
    static func imagepipeQueue(
        executable: String, job: BenchJob, queue: String, workers: Int, destination: String?,
        remoteCorpus: String? = nil, invocation: String = "", label: String
    ) -> Peer {
        @Sendable func queueURL(_ output: String) -> String {
            // A queue per run, named after the run's output folder, so no run finds another's jobs.
            let name = "bench_" + URL(fileURLWithPath: output).lastPathComponent.map { $0.isLetter || $0.isNumber ? $0 : "_" }
            guard var components = URLComponents(string: queue) else { return queue }
            let others = (components.queryItems ?? []).filter { $0.name != "queue" }
            components.queryItems = others + [URLQueryItem(name: "queue", value: name)]
            return components.string ?? queue
        }
        var peer = Peer(name: label, unavailable: nil) { _, output in
            let target = destination.map { extraTarget($0, output: output, invocation: invocation) } ?? output
            var command = [
                executable, "watch", queueURL(output), "--dest", target, "--exit-when-empty",
                "--jobs", "\(max(1, job.workers / workers))", "--status-interval", "0", "--log-level", "error",
            ]
            for variant in job.variants { command += ["--variant", variant.specString] }
            return (Array(repeating: command, count: workers), workers)
        }
        peer.outputIsLocal = destination == nil
        peer.extraFolder = localFolder(destination)
        peer.setup = { corpus, output in
            let sources = corpus.files.map { file in remoteCorpus.map { $0 + "/" + file } ?? corpus.directory + "/" + file }
            return [[executable, "enqueue", queueURL(output)] + sources]
        }
        return peer
    }

    /// A new tag for one bench run's prefixes in object storage (``BenchRunner/run(compare:progress:)``
    /// makes one and gives it to every row).
    static func newInvocationTag() -> String { "bench-" + String(UInt64.random(in: 0...UInt64.max), radix: 36) }

    /// Where a run of an extra destination writes: a folder named after the run's output folder.
    /// In object storage, under the bench run's own prefix as well, since nothing there is emptied
    /// first: a run finding an earlier bench run's outputs in place would only check them. (Those
    /// prefixes are left in the bucket, for the bucket's own lifecycle rules to remove.)
    static func extraTarget(_ destination: String, output: String, invocation: String) -> String {
        let run = URL(fileURLWithPath: output).lastPathComponent
        return localPath(destination) != nil ? destination + "/" + run : destination + "/" + invocation + "/" + run
    }

    /// For a local extra destination (`/dev/shm/DIR` or `file:///dev/shm/DIR`), the folder of a run there.
    static func localFolder(_ destination: String?) -> (@Sendable (String) -> String)? {
        guard let destination, let path = localPath(destination) else { return nil }
        return { output in path + "/" + URL(fileURLWithPath: output).lastPathComponent }
    }

    /// The path of a local destination, nil for object storage.
    static func localPath(_ destination: String) -> String? {
        if destination.hasPrefix("file://") { return URL(string: destination)?.path }
        return destination.contains("://") ? nil : destination
    }

    /// The pyvips script: decode once at the largest size, `thumbnail_image` for the others.
    static func pyvips(scriptDirectory: String, job: BenchJob) -> Peer {
        let available = ProcessRunner.capture(["python3", "-c", "import pyvips; print(pyvips.__version__)"]) != nil
        return Peer(name: "pyvips", unavailable: available ? nil : "python3 module pyvips not installed (pip install pyvips)") { corpus, output in
            ([["python3", scriptDirectory + "/pyvips_job.py", corpus.directory, output, "\(job.workers)"] + job.scriptSpecs], 1)
        }
    }

    /// The hand-written C program on libvips (``PeerScripts/libvipsC``), compiled here with the C
    /// compiler and libvips headers imagepipe itself is built with: what the same outputs cost with
    /// nothing around them.
    static func libvipsC(scriptDirectory: String, job: BenchJob) -> Peer {
        let source = scriptDirectory + "/libvips_reference.c", binary = scriptDirectory + "/libvips_reference"
        // `cc` where there is one, else the Swift toolchain's clang, which builds imagepipe's own C.
        let compile =
            "$(command -v cc || command -v clang) -O2 -D_GNU_SOURCE \"$0\" -o \"$1\" $(pkg-config --cflags --libs vips) -lpthread"
        let compiled = ProcessRunner.capture(["sh", "-c", compile, source, binary]) != nil
        return Peer(name: "libvips in C", unavailable: compiled ? nil : "cannot compile the C reference (needs cc or clang, pkg-config, libvips-dev)")
        {
            corpus, output in
            ([[binary, corpus.directory, output, "\(job.workers)"] + job.referenceSpecs], 1)
        }
    }

    /// Pillow with draft mode in a process pool.
    static func pillow(scriptDirectory: String, job: BenchJob) -> Peer {
        var reason: String?
        if ProcessRunner.capture(["python3", "-c", "import PIL; print(PIL.__version__)"]) == nil {
            reason = "python3 module PIL not installed (pip install pillow)"
        } else if let format = job.variants.first(where: { !$0.format.traits.peers.pillow })?.format {
            reason = "Pillow has no \(format.rawValue) encoder"
        }
        return Peer(name: "pillow", unavailable: reason) { corpus, output in
            ([["python3", scriptDirectory + "/pillow_job.py", corpus.directory, output, "\(job.workers)"] + job.scriptSpecs], 1)
        }
    }

    /// vipsthumbnail, once per image and variant (it makes one size per run), `workers` at a time.
    static func vipsthumbnail(job: BenchJob) -> Peer {
        let available = ProcessRunner.which("vipsthumbnail") != nil
        return Peer(name: "vipsthumbnail", unavailable: available ? nil : "vipsthumbnail not installed (apt-get install libvips-tools)") {
            corpus, output in
            var commands: [[String]] = []
            for file in corpus.files {
                let stem = LocalPath.deletingExtension(file)
                try? FileManager.default.createDirectory(
                    atPath: LocalPath.parent(of: output + "/" + stem),
                    withIntermediateDirectories: true)
                for variant in job.variants {
                    let options = variant.format.traits.peers.vipsthumbnailOptions.map { "strip,Q=\(variant.quality)" + $0 } ?? "strip"
                    var command = [
                        "vipsthumbnail", corpus.directory + "/" + file, "--size", "\(variant.width)x\(variant.height)>",
                        "-o", "\(output)/\(stem)-\(variant.name).\(variant.format.fileExtension)[\(options)]",
                    ]
                    if variant.fit == .cover { command += ["--smartcrop", "centre"] }
                    commands.append(command)
                }
            }
            return (commands, job.workers)
        }
    }

    /// ImageMagick's `convert`, one process per image writing every variant from one decode.
    static func imagemagick(job: BenchJob) -> Peer {
        let convert = realImageMagick()
        var reason: String? = convert == nil ? "ImageMagick not installed (apt-get install imagemagick)" : nil
        if reason == nil, let format = job.variants.first(where: { !$0.format.traits.peers.imageMagick6 })?.format {
            reason = "ImageMagick 6 has no \(format.rawValue) encoder"
        }
        // Each of the `workers` processes gets one thread, as every other tool's workers do.
        return Peer(name: "imagemagick", unavailable: reason, environment: ["MAGICK_THREAD_LIMIT": "1"]) { corpus, output in
            let largestWidth = job.variants.map(\.width).max() ?? 2048
            let largestHeight = job.variants.map(\.height).max() ?? 2048
            var commands: [[String]] = []
            for file in corpus.files {
                let stem = LocalPath.deletingExtension(file)
                try? FileManager.default.createDirectory(
                    atPath: LocalPath.parent(of: output + "/" + stem),
                    withIntermediateDirectories: true)
                // jpeg:size lets libjpeg shrink on load to no less than the largest box, like libvips' shrink-on-load.
                var command = [
                    convert ?? "convert", "-define", "jpeg:size=\(largestWidth)x\(largestHeight)",
                    corpus.directory + "/" + file, "-auto-orient", "-strip",
                ]
                for variant in job.variants {
                    let target = "\(output)/\(stem)-\(variant.name).\(variant.format.fileExtension)"
                    command += ["(", "+clone"]
                    if variant.fit == .cover {
                        command += [
                            "-thumbnail", "\(variant.width)x\(variant.height)^", "-gravity", "center",
                            "-extent", "\(variant.width)x\(variant.height)",
                        ]
                    } else {
                        command += ["-thumbnail", "\(variant.width)x\(variant.height)>"]
                    }
                    command += ["-quality", "\(variant.quality)", "-write", target, "+delete", ")"]
                }
                command += ["null:"]
                commands.append(command)
            }
            return (commands, job.workers)
        }
    }

    /// The first `convert` on PATH that is ImageMagick (some systems shadow it with a stand-in).
    static func realImageMagick() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/convert"
            // A script of that name in front of ImageMagick (a stand-in passing calls on) would be
            // timed too, an interpreter start per image: only the binary itself counts.
            var info = stat()
            guard stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0,
                (try? FileHandle(forReadingAtPath: candidate)?.read(upToCount: 2)) != Data("#!".utf8)
            else { continue }
            if ProcessRunner.capture([candidate, "-version"])?.hasPrefix("Version: ImageMagick") == true { return candidate }
        }
        return nil
    }
}

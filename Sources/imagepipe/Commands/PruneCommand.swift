// `imagepipe prune`: lists, or deletes, the outputs whose original is gone or changed, or whose variant is no longer made.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeLocalStorage

struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "List (or, with --delete, delete) outputs whose original is gone or changed, or whose variant is no longer made.",
        discussion: """
            Every object imagepipe writes records its original (name and SHA-256) and its variant. An output \
            is orphaned when no source has its original's name or its bytes, changed when the source of that \
            name has other bytes now, and of a dropped variant when its variant's name is not among the \
            variants given (--variant, --preset or the --config file, as batch takes them; 'original' with \
            --with-original). Objects without a recorded original are never touched (foreign), nor are outputs \
            whose original was read from outside the sources given (another folder writing under the same \
            prefix: made from other sources). The sources are named as batch names them: give the same \
            folders, files and URLs the outputs were made from. \
            Without --delete nothing is changed: one line per output that would go, then a summary. \
            --delete refuses to run when a source folder could not be listed or holds no files, or a source \
            could not be read. \
            Exit status: 0 when every output was judged (and, with --delete, every one to go is gone, or left \
            because a batch wrote it again meanwhile), \
            1 when a source or an output's recorded origin could not be read, a local folder could not be \
            listed or a deletion failed, 2 for usage or configuration errors, found before anything is \
            judged: a destination that does not exist, a bucket that cannot be listed (missing, credentials \
            refused, unreachable), as in batch.
            """)

    @Argument(
        help: ArgumentHelp(
            "Where the variants are: a directory path, file://, s3://BUCKET/PREFIX or supabase://BUCKET/PREFIX.", valueName: "dest"))
    var dest: String

    @Option(
        name: .long, parsing: .upToNextOption,
        help: ArgumentHelp(
            "The folders, files and s3:// or supabase:// folders the outputs were made from, as given to batch.", valueName: "source"))
    var sources: [String] = []

    @Flag(name: .long, help: "Delete the outputs listed (without it, nothing is changed).")
    var delete = false

    @OptionGroup var variantOptions: VariantOptions

    @Flag(name: .customLong("with-original"), help: "Keep the originals' copies --with-original stored (variant 'original').")
    var withOriginal = false

    @OptionGroup var endpoints: EndpointOptions

    @Option(
        name: .customLong("max-source-bytes"),
        help: ArgumentHelp("Refuse to read sources in object storage larger than this many bytes (default 256 MiB).", valueName: "bytes"))
    var maxSourceBytesGiven: Int?

    /// `--max-source-bytes`, or its default. The help says the default in MiB; an option with an
    /// initial value would have the parser say it again, in bytes.
    var maxSourceBytes: Int { maxSourceBytesGiven ?? 256 << 20 }

    /// Keys a listing page asks for and a batch removal sends (at most 1000); small in tests, so
    /// paging and batching are exercised without thousands of objects.
    @Option(name: .customLong("page-size"), help: .private)
    var pageSize: Int = 1000

    /// Objects looked up at once (HEAD requests, or stat calls).
    @Option(name: .customLong("lookups"), help: .private)
    var lookups: Int = 8

    func validate() throws {
        guard !sources.isEmpty else { throw ValidationError("give the sources the outputs were made from with --sources") }
        guard maxSourceBytes >= 1 else { throw ValidationError("--max-source-bytes must be positive") }
        guard (1...1000).contains(pageSize) else { throw ValidationError("--page-size must be between 1 and 1000") }
        guard lookups >= 1 else { throw ValidationError("--lookups must be positive") }
        do {
            _ = try variantOptions.variantSpecs(withOriginal: withOriginal)
        } catch {
            throw ValidationError(error.reason)
        }
    }

    func run() async throws {
        _ = CompositionRoot.bootstrapLogging(level: "warning")
        // Listing, reading and hashing are blocking I/O: off the cooperative pool.
        let prepared = try await BlockingIO.run { () throws(ImagePipeError) in try judge() }
        let plan = prepared.plan
        for entry in plan.deletions { print("\(entry.verdict.rawValue) \(Self.shown(entry.key)): \(entry.reason)") }
        for entry in plan.entries where entry.verdict == .keep && entry.reason.hasPrefix("kept:") {
            Console.shared.line("imagepipe: warning: \(Self.shown(entry.key)) \(entry.reason)")
        }
        let unplaced = plan.unplaced
        if !unplaced.isEmpty {
            Console.shared.line(
                "imagepipe: warning: \(unplaced.count) outputs record no place their original was read from (written by an imagepipe "
                    + "that did not record it, e.g. \(Self.shown(unplaced[0].key))), so whether it is among the sources cannot be told: "
                    + "they are left alone; a batch run once with --force over their sources records it")
        }
        let problems = prepared.unlisted.map { "cannot list \($0.path): \($0.reason)" } + plan.problems
        for problem in problems { Console.shared.line("imagepipe: warning: \(problem)") }
        // The stored original (`--with-original`) is no variant the batch chose: leaving it out, the
        // check still sees variants forgotten when both runs store originals.
        let original: Set = [FileHandler.originalVariantName]
        let unknownVariants =
            prepared.variants.subtracting(original).isDisjoint(with: plan.recordedVariants.subtracting(original))
            && plan.count(.droppedVariant) > 0
        if unknownVariants {
            Console.shared.line(
                "imagepipe: warning: no output is of a variant given (\(prepared.variants.sorted().joined(separator: ", "))); "
                    + "the outputs have \(plan.recordedVariants.sorted().joined(separator: ", ")): give the variants the batch made")
        }
        guard delete else {
            Console.shared.line("imagepipe: \(plan.summary(deleted: false)); dry run, nothing was deleted (--delete deletes them)")
            if !problems.isEmpty { throw ExitCode(1) }
            return
        }
        try refuseIncomplete(
            plan, problems: problems, sourceCount: prepared.sourceCount, emptyFolders: prepared.emptyFolders, unknownVariants: unknownVariants)
        let storage = prepared.storage
        let (pageSize, lookups) = (self.pageSize, self.lookups)
        let deletion = try await BlockingIO.run { () throws(ImagePipeError) in
            try PruneSurvey.delete(plan, from: storage, batchSize: pageSize, lookups: lookups)
        }
        for entry in deletion.rewritten {
            Console.shared.line(
                "imagepipe: warning: left \(Self.shown(entry.key)): it was written again since it was judged (by a batch writing into the destination?)"
            )
        }
        let failures = deletion.failures
        for failure in failures {
            Console.shared.line("imagepipe: error: cannot delete \(Self.shown(failure.key)): \(failure.reason)")
        }
        Console.shared.line("imagepipe: \(deletion.summary(of: plan))")
        if !failures.isEmpty { throw ExitCode(1) }
    }

    /// What was found: the plan, the storage it is about, the source folders that could not be
    /// listed, how many sources there are and the folders that hold none.
    private struct Prepared: Sendable {
        var plan: PrunePlan
        var variants: Set<String>
        var storage: any PrunableStorage
        var unlisted: [(path: String, reason: String)]
        var sourceCount: Int
        var emptyFolders: [String]
    }

    /// Lists the sources and the destination, reads each output's origin and judges it. Blocking I/O.
    private func judge() throws(ImagePipeError) -> Prepared {
        let specs = try variantOptions.variantSpecs(withOriginal: withOriginal)
        let variants = Set(specs.map(\.name) + (withOriginal ? [FileHandler.originalVariantName] : []))
        guard let storage = try StorageFactory.make(destination: dest, endpoints, sourceURLs: sources) as? any PrunableStorage else {
            throw .configuration("destination \(dest) cannot be listed for pruning")
        }
        let urls = sources.filter(ObjectLocation.isURL)
        let repositories = try StorageFactory.sources(urls, endpoints)
        let bySchema = Dictionary(repositories.map { ($0.scheme, $0) }, uniquingKeysWith: { first, _ in first })
        let inputs = sources.map { SourceScanner.Input($0) }
        if storage is LocalDirectoryStorage, !FileManager.default.fileExists(atPath: storage.location) {
            throw .configuration("destination \(storage.location) does not exist")
        }
        // A destination inside a source folder is not read back as sources, as in a batch.
        let scanner = SourceScanner(inputs: inputs, excluding: [storage.location], sources: bySchema)
        // A local source that does not exist stops the prune before the destination is read (a
        // bucket that cannot be listed is found when the sources are scanned, after the listing).
        try scanner.check()
        let maxSourceBytes = self.maxSourceBytes
        // The destination first, then the sources: see PruneSurvey for a batch writing meanwhile.
        let places = SourcePlaces(inputs: sources)
        let (plan, scan) = try PruneSurvey.plan(of: storage, pageSize: pageSize, lookups: lookups, places: places, variants: variants) {
            () throws(ImagePipeError) in
            let scan = try scanner.scan()
            // A name the scan found but could not take (a link whose target is gone) may be an
            // unmounted disk's: its outputs are kept, and --delete refuses.
            let unavailable = Dictionary(
                scan.skipped.map { ($0.source, $0.reason ?? "could not be read") }, uniquingKeysWith: { first, _ in first })
            return (scan, SourceDigests(jobs: scan.jobs, unavailable: unavailable, repositories: bySchema, maxSourceBytes: maxSourceBytes))
        }
        return Prepared(
            plan: plan, variants: variants, storage: storage, unlisted: scan.unreadable, sourceCount: scan.jobs.count,
            emptyFolders: scan.emptyFolders)
    }

    /// `--delete` deletes only what a complete look at the sources found: a folder that could not be
    /// listed, or a source that could not be read, would make outputs look orphaned that are not.
    /// Sources without files, or variants none of the outputs has, are taken for mistakes too.
    private func refuseIncomplete(
        _ plan: PrunePlan, problems: [String], sourceCount: Int, emptyFolders: [String], unknownVariants: Bool
    ) throws(ImagePipeError) {
        if !problems.isEmpty {
            throw ImagePipeError(
                .unreadableSource,
                "not deleting anything: the sources could not be read completely (\(problems.joined(separator: "; "))); "
                    + "fix that and run again, or prune without --delete to see what would go")
        }
        // An empty source folder (an unmounted disk, a mistyped prefix) makes every output an orphan.
        if sourceCount == 0, !plan.deletions.isEmpty {
            throw ImagePipeError(
                .sourceNotFound,
                "not deleting anything: the sources (\(sources.joined(separator: ", "))) hold no files, which would make every "
                    + "output an orphan; check the source paths (to empty the destination, remove it instead)")
        }
        // So does one among others, for the outputs made from it, which would go with the true orphans.
        if !emptyFolders.isEmpty, !plan.deletions.isEmpty {
            throw ImagePipeError(
                .sourceNotFound,
                "not deleting anything: a source folder holds no files (\(emptyFolders.joined(separator: ", "))), which would make "
                    + "the outputs made from it look orphaned; check the source paths, or leave out a folder that is empty on purpose")
        }
        // Variants forgotten (the web preset by default, where the batch had others) would drop every output.
        if unknownVariants {
            throw ImagePipeError(
                .configuration,
                "not deleting anything: none of the outputs is of a variant given, so every one would go as a dropped variant; "
                    + "give the variants the batch made (--variant, --preset or --config)")
        }
    }

    /// A key as printed: as it is, or quoted when it holds control characters (a line break would
    /// make it look like two lines).
    static func shown(_ key: String) -> String {
        key.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } ? key.doubleQuoted : key
    }
}

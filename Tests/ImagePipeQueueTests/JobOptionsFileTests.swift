// A job's options file in a queue directory (`NAME.options.json`): claimed and read with its original, never a job, kept as a pair through every move.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImagePipe
import ImagePipeQueue
import ImagePipeTestKit
import ImagePipeTestSupport
import Logging
import Testing

@Suite struct JobOptionsFileTests {
    let silent = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    func text(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    func failure(_ fixture: QueueFixture, _ name: String) throws -> FailureRecord {
        try JSONDecoder().decode(FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: fixture.queue.failed + "/" + name + ".error.json")))
    }

    /// Opens a DirectoryQueue on the fixture's queue and claims what is there; the jobs claimed
    /// refused are discarded as a worker settles them (the queue never settles one by itself).
    func claimAll(_ fixture: QueueFixture) async throws -> (DirectoryQueue, [ClaimedJob]) {
        let queue = try DirectoryQueue(directory: fixture.queue, logger: silent)
        try await queue.open(wake: {})
        let claimed = await queue.claim(upTo: 10)
        for job in claimed {
            guard let result = job.refusalResult else { continue }
            #expect(await queue.discard(job, failure: AttemptRecord(result), result: result, notice: nil) == .recorded)
        }
        return (queue, claimed.filter { $0.refusal == nil })
    }

    @Test func aClaimedJobCarriesItsOptionsAndOptionsAloneAreNoJob() async throws {
        let fixture = try QueueFixture()
        // The producer's order: the options first, then the original, each by rename.
        fixture.deliverText("a.jpg.options.json", #"{"focus": [0.3, 0.7], "later": true}"#)
        fixture.deliver("a.jpg")
        fixture.deliver("2024/b.png")
        fixture.deliverText("lonely.jpg.options.json", #"{"focus": [0.5, 0.5]}"#)

        let (queue, jobs) = try await claimAll(fixture)
        #expect(jobs.map(\.id) == ["2024/b.png", "a.jpg"], "the options files are not claimed as jobs")
        #expect(jobs.last?.job.focus == FocalPoint(x: 0.3, y: 0.7) && jobs.first?.job.focus == nil)
        let area = fixture.queue.processing + "/" + queue.id
        #expect(text(area + "/a.jpg.options.json")?.contains("0.3") == true, "claimed with the original: \(fixture.files("processing"))")
        #expect(fixture.files("inbox") == ["lonely.jpg.options.json"], "one whose original never came waits")
        #expect(await queue.waitingCount() == 0)
        #expect(await queue.remainder(dueWithin: .seconds(60)) == QueueRemainder(due: 0), "a worker told to exit when empty exits")
        let overview = fixture.queue.overview()
        #expect(overview.counts[.waiting] == 0 && overview.counts[.running] == 2, "\(overview.counts)")
        #expect(overview.optionsWithoutOriginal == 1)

        // A job given back takes its options with it.
        await queue.release(jobs)
        await queue.close()
        #expect(fixture.files("inbox") == ["2024/b.png", "a.jpg", "a.jpg.options.json", "lonely.jpg.options.json"])
        #expect(fixture.queue.optionsWithoutOriginal() == ["lonely.jpg.options.json"])
    }

    @Test(arguments: [
        ("nope", "are not a JSON object: nope"),
        ("[0.3, 0.7]", "are not a JSON object: [0.3, 0.7]"),
        (#"{"focus": [1.5, 0.5]}"#, "not [1.5,0.5]"),
        (#"{"focus": "0.3,0.7"}"#, #"not "0.3,0.7""#),
        (#"{"focus": [0.3]}"#, "not [0.3]"),
    ])
    func unusableOptionsFailTheirJobAtItsClaimAndTheOthersGoOn(_ contents: String, _ shown: String) async throws {
        let fixture = try QueueFixture()
        fixture.deliverText("bad.jpg.options.json", contents)
        fixture.deliver("bad.jpg")
        fixture.deliverText("good.jpg.options.json", #"{"focus": [0.1, 0.9]}"#)
        fixture.deliver("good.jpg")

        let (queue, jobs) = try await claimAll(fixture)
        #expect(jobs.map(\.id) == ["good.jpg"] && jobs.first?.job.focus == FocalPoint(x: 0.1, y: 0.9))
        #expect(fixture.files("failed") == ["bad.jpg", "bad.jpg.error.json", "bad.jpg.options.json"], "kept beside, to be put right")
        let record = try failure(fixture, "bad.jpg")
        #expect(record.errorCode == .invalidJobOptions && record.attempts == 1 && record.history.count == 1)
        #expect(record.error.hasPrefix("bad.jpg.options.json: ") && record.error.contains(shown), "\(record.error)")
        #expect(text(fixture.queue.failed + "/bad.jpg.options.json") == contents)
        await queue.release(jobs)
        await queue.close()
    }

    @Test func optionsThatAreNoRegularFileAreRefusedWithoutBeingRead() async throws {
        let fixture = try QueueFixture()
        let secret = fixture.directory.write("secret.json", #"{"focus": [0.5, 0.5], "token": "s3cr3t"}"#)
        #expect(symlink(secret, fixture.queue.inbox + "/linked.jpg.options.json") == 0)
        fixture.deliver("linked.jpg")
        #expect(mkfifo(fixture.queue.inbox + "/piped.jpg.options.json", 0o644) == 0)
        fixture.deliver("piped.jpg")

        let (queue, jobs) = try await claimAll(fixture)
        #expect(jobs.isEmpty)
        #expect(try failure(fixture, "linked.jpg").error == "linked.jpg.options.json is a symbolic link, not a regular file")
        #expect(try failure(fixture, "piped.jpg").error == "piped.jpg.options.json is not a regular file")
        #expect(try !failure(fixture, "linked.jpg").error.contains("s3cr3t"))
        await queue.close()
    }

    @Test func abandonedJobsGoBackWithTheirOptions() throws {
        let fixture = try QueueFixture()
        let dead = fixture.queue.processing + "/deadhost-3-0"
        try FileManager.default.createDirectory(atPath: dead + "/sub", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dead + "/.lock", contents: Data())
        func put(_ name: String, _ contents: String) { _ = FileManager.default.createFile(atPath: dead + "/" + name, contents: Data(contents.utf8)) }
        put("a.jpg", "a")
        put("a.jpg.options.json", "a's options")
        // Another file took the name in the inbox meanwhile: both get the next one.
        put("sub/b.jpg", "b")
        put("sub/b.jpg.options.json", "b's options")
        fixture.deliver("sub/b.jpg", "someone else's b")
        // Killed between the two moves back: its options are in the inbox already.
        put("half.jpg", "half")
        fixture.deliverText("half.jpg.options.json", "half's options")
        // Killed between the link and the unlink of its options' move back.
        put("twice.jpg", "twice")
        put("twice.jpg.options.json", "twice's options")
        #expect(link(dead + "/twice.jpg.options.json", fixture.queue.inbox + "/twice.jpg.options.json") == 0)
        // Finished: in done/ with its record, killed before its claim was released.
        put("finished.jpg", "finished")
        put("finished.jpg.options.json", "finished's options")
        #expect(link(dead + "/finished.jpg", fixture.queue.done + "/finished.jpg") == 0)
        _ = FileManager.default.createFile(atPath: fixture.queue.done + "/finished.jpg.json", contents: Data("{}".utf8))
        // Options whose original already left: they left after it, from a finished job.
        put("gone.jpg.options.json", "gone's options")

        let recovered = ClaimArea.recoverAbandoned(in: fixture.queue, except: nil, logger: silent)
        #expect(recovered.jobs.sorted() == ["a.jpg", "half.jpg", "sub/b.jpg", "twice.jpg"])
        #expect(
            fixture.files("inbox") == [
                "a.jpg", "a.jpg.options.json", "half.jpg", "half.jpg.options.json", "sub/b.1.jpg", "sub/b.1.jpg.options.json", "sub/b.jpg",
                "twice.jpg", "twice.jpg.options.json",
            ])
        #expect(text(fixture.queue.inbox + "/sub/b.1.jpg") == "b" && text(fixture.queue.inbox + "/sub/b.1.jpg.options.json") == "b's options")
        #expect(text(fixture.queue.inbox + "/a.jpg.options.json") == "a's options")
        #expect(fixture.files("done") == ["finished.jpg", "finished.jpg.json"])
        #expect(!FileManager.default.fileExists(atPath: dead), "nothing left behind")
    }

    @Test func doneDropsTheOptionsFailedKeepsThemAndRetrySendsThemBack() throws {
        let fixture = try QueueFixture()
        for name in ["x.jpg", "y.jpg", "z.jpg"] {
            fixture.deliverText(name + ".options.json", "\(name)'s options")
            fixture.deliver(name)
        }
        // Options left alone in failed/ (a retry cut short): y's must not join them.
        _ = FileManager.default.createFile(atPath: fixture.queue.failed + "/y.jpg.options.json", contents: Data("stale".utf8))
        let area = try ClaimArea(queue: fixture.queue)
        for name in ["x.jpg", "y.jpg", "z.jpg"] { #expect(area.claim(.init(name)) == .claimed(area.pathOf(name))) }
        #expect(fixture.files("inbox").isEmpty)

        try area.moveOut("x.jpg", into: fixture.queue.done, record: Data("{}\n".utf8), suffix: ".json", keepingOptions: false)
        #expect(fixture.files("done") == ["x.jpg", "x.jpg.json"])
        let placed = try area.moveOut("y.jpg", into: fixture.queue.failed, record: Data("{}\n".utf8), suffix: ".error.json", keepingOptions: true)
        #expect(placed == fixture.queue.failed + "/y.1.jpg")
        try area.moveOut("z.jpg", into: fixture.queue.failed, record: Data("{}\n".utf8), suffix: ".error.json", keepingOptions: true)
        #expect(
            fixture.files("failed") == [
                "y.1.jpg", "y.1.jpg.error.json", "y.1.jpg.options.json", "y.jpg.options.json", "z.jpg", "z.jpg.error.json", "z.jpg.options.json",
            ])
        #expect(text(fixture.queue.failed + "/y.1.jpg.options.json") == "y.jpg's options")
        #expect(fixture.files("processing").allSatisfy { $0.hasSuffix(".lock") }, "\(fixture.files("processing"))")

        let failed = FailedJobs(queue: fixture.queue)
        #expect(failed.list() == ["y.1.jpg", "z.jpg"], "options are no failed jobs")
        #expect(try failed.retry(["y.1.jpg"]) == [.returned(from: "failed/y.1.jpg", to: "inbox/y.1.jpg")])
        #expect(fixture.files("inbox") == ["y.1.jpg", "y.1.jpg.options.json"])
        #expect(text(fixture.queue.inbox + "/y.1.jpg.options.json") == "y.jpg's options")

        let pruned = QueueRetention(queue: fixture.queue).prune(olderThan: .zero, includingFailed: true, now: Date().addingTimeInterval(60))
        #expect(pruned.deleted.sorted() == ["done/x.jpg", "failed/z.jpg"], "\(pruned)")
        #expect(fixture.files("failed") == ["y.jpg.options.json"], "the options went with their job")
    }
}

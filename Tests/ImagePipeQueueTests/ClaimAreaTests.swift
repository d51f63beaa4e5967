import Foundation
import ImagePipe
import ImagePipeQueue
import Logging
import ImagePipeTestKit
import Synchronization
import Testing

@Suite struct ClaimAreaTests {
    @Test func abandonedAreasAreReturnedToTheInboxAndLiveOnesAreNot() throws {
        let fixture = try QueueFixture()
        // A worker that died: its area exists, its lock file is free.
        let dead = fixture.queue.processing + "/deadhost-1-0"
        try FileManager.default.createDirectory(atPath: dead + "/sub", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dead + "/.lock", contents: Data())
        try Data("a".utf8).write(to: URL(fileURLWithPath: dead + "/sub/orphan.jpg"))
        // A live worker: its area is locked by this process through another descriptor.
        let live = try ClaimArea(queue: fixture.queue)
        try Data("b".utf8).write(to: URL(fileURLWithPath: live.path + "/mine.jpg"))

        let recovered = ClaimArea.recoverAbandoned(
            in: fixture.queue, except: nil, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        #expect(recovered.jobs == ["sub/orphan.jpg"])
        #expect(fixture.files("inbox") == ["sub/orphan.jpg"])
        #expect(!FileManager.default.fileExists(atPath: dead))
        #expect(FileManager.default.fileExists(atPath: live.path + "/mine.jpg"))
    }

    /// A claim area of a worker killed while it was moving files, with its lock free.
    private func deadArea(_ fixture: QueueFixture, holding names: [String]) throws -> String {
        let dead = fixture.queue.processing + "/deadhost-2-0"
        try FileManager.default.createDirectory(atPath: dead, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dead + "/.lock", contents: Data())
        for name in names { try Data(name.utf8).write(to: URL(fileURLWithPath: dead + "/" + name)) }
        return dead
    }

    @Test func aKillDuringAnyFinishingStepNeverDuplicatesTheJob() throws {
        let fixture = try QueueFixture()
        let dead = try deadArea(fixture, holding: ["recorded.jpg", "linked.jpg", "returning.jpg"])
        // Killed after the original was linked into done/ and its record written, before the release.
        link(dead + "/recorded.jpg", fixture.queue.done + "/recorded.jpg")
        try Data("{}".utf8).write(to: URL(fileURLWithPath: fixture.queue.done + "/recorded.jpg.json"))
        // Killed after the link into done/, while writing the record (staged in the claim area).
        link(dead + "/linked.jpg", fixture.queue.done + "/linked.jpg")
        try Data("{\"sou".utf8).write(to: URL(fileURLWithPath: dead + "/.linked.jpg.json.1234.tmp"))
        // Killed while being returned to the inbox, between link and unlink.
        link(dead + "/returning.jpg", fixture.queue.inbox + "/returning.jpg")

        let recovered = ClaimArea.recoverAbandoned(
            in: fixture.queue, except: nil, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        #expect(recovered.jobs.sorted() == ["linked.jpg", "returning.jpg"])
        #expect(fixture.files("inbox") == ["linked.jpg", "returning.jpg"], "nothing under a second name")
        #expect(!FileManager.default.fileExists(atPath: dead))

        // The rerun of the half-finished job completes it under its first name.
        let area = try ClaimArea(queue: fixture.queue)
        guard case .claimed = area.claim(.init("linked.jpg")) else { Issue.record("not claimed"); return }
        let placed = try area.moveOut("linked.jpg", into: fixture.queue.done, record: Data("{}".utf8), suffix: ".json")
        #expect(placed == fixture.queue.done + "/linked.jpg")
        #expect(fixture.files("done") == ["linked.jpg", "linked.jpg.json", "recorded.jpg", "recorded.jpg.json"])
    }

    @Test func ofTwoClaimsOnlyOneWins() throws {
        let fixture = try QueueFixture()
        let first = try ClaimArea(queue: fixture.queue), second = try ClaimArea(queue: fixture.queue)
        fixture.deliver("contested.jpg")
        let outcomes = [first.claim(.init("contested.jpg")), second.claim(.init("contested.jpg"))]
        #expect(outcomes.filter { if case .claimed = $0 { true } else { false } }.count == 1)
        #expect(outcomes.contains(.gone))
    }

    @Test func writerCheckSeesAnOpenWriter() throws {
        let fixture = try QueueFixture()
        let path = fixture.queue.inbox + "/writing.jpg"
        _ = FileManager.default.createFile(atPath: path, contents: Data("x".utf8))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        #expect(WriterCheck.writers(of: path) == .open)
        try handle.close()
        #expect(WriterCheck.writers(of: path) == .none)
        let reader = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        #expect(WriterCheck.writers(of: path) == .none, "readers do not count")
        try reader.close()
    }

    @Test func backoffGrowsWithFullJitter() {
        let policy = RetryPolicy(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(10))
        #expect(policy.delay(afterAttempt: 1, random: 1) == .seconds(1))
        #expect(policy.delay(afterAttempt: 3, random: 1) == .seconds(4))
        #expect(policy.delay(afterAttempt: 9, random: 1) == .seconds(10))
        #expect(policy.delay(afterAttempt: 3, random: 0) == .zero)
        #expect(policy.shouldRetry(afterAttempt: 4) && !policy.shouldRetry(afterAttempt: 5))
    }
}

/// The notices a dead worker's area kept: sent by the next worker that notifies when their job's
/// record is written, dropped when the job was cut short before it (it runs again, with its own).
@Suite struct ClaimAreaNoticeTests {
    @Test func aDeadWorkersNoticesGoOnlyForRecordedJobsAndOnlyToAWorkerThatNotifies() throws {
        let fixture = try QueueFixture()
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        var ids: [String: String] = [:]
        let deadPath: String
        do {
            let dead = try ClaimArea(queue: fixture.queue)
            deadPath = dead.path
            for name in ["recorded.jpg", "released.jpg", "cut.jpg"] {
                fixture.deliver(name)
                guard case .claimed = dead.claim(.init(name)) else {
                    Issue.record("\(name) not claimed")
                    return
                }
                let notice = JobNotice(event: .done, job: name, result: JobResult(source: name, status: .done))
                ids[name] = notice.id
                try dead.keep(notice, for: name)
            }
            // Finished: the original in done/ with its record, the claim released.
            try dead.moveOut("released.jpg", into: fixture.queue.done, record: Data("{}".utf8), suffix: ".json")
            // Killed after the record was written, before the release.
            link(dead.pathOf("recorded.jpg"), fixture.queue.done + "/recorded.jpg")
            try Data("{}".utf8).write(to: URL(fileURLWithPath: fixture.queue.done + "/recorded.jpg.json"))
            // cut.jpg: killed before its original moved; no record tells of it.
            // reused.jpg: recorded, then a new delivery under its name claimed and cut short.
            fixture.deliver("reused.jpg", "first bytes")
            guard case .claimed = dead.claim(.init("reused.jpg")) else {
                Issue.record("reused.jpg was not claimed")
                return
            }
            let first = JobNotice(event: .done, job: "reused.jpg", result: JobResult(source: "reused.jpg", status: .done))
            ids["reused.jpg"] = first.id
            try dead.keep(first, for: "reused.jpg")
            try dead.moveOut("reused.jpg", into: fixture.queue.done, record: Data("{}".utf8), suffix: ".json")
            fixture.deliver("reused.jpg", "second bytes")
            guard case .claimed = dead.claim(.init("reused.jpg")) else {
                Issue.record("reused.jpg was not claimed")
                return
            }
            let second = JobNotice(event: .done, job: "reused.jpg", result: JobResult(source: "reused.jpg", status: .done))
            ids["reused.jpg again"] = second.id
            try dead.keep(second, for: "reused.jpg")
        }  // The area's lock goes with it, as with the process of a worker killed.

        let silent = ClaimArea.recoverAbandoned(in: fixture.queue, except: nil, takingNoticesInto: nil, logger: logger)
        #expect(silent.jobs.sorted() == ["cut.jpg", "reused.jpg"] && silent.notices.isEmpty)
        #expect(fixture.files("inbox") == ["cut.jpg", "reused.jpg"])
        #expect(
            Set(try FileManager.default.contentsOfDirectory(atPath: deadPath + "/.outbox"))
                == [ids["recorded.jpg"]! + ".json", ids["released.jpg"]! + ".json", ids["reused.jpg"]! + ".json"],
            "the cut job's notice is gone; the others wait, with their area, for a worker that notifies")

        let own = try ClaimArea(queue: fixture.queue)
        let taken = ClaimArea.recoverAbandoned(in: fixture.queue, except: own.id, takingNoticesInto: own, logger: logger)
        #expect(Set(taken.notices.map(\.id)) == [ids["recorded.jpg"]!, ids["released.jpg"]!, ids["reused.jpg"]!])
        #expect(taken.notices.allSatisfy { $0.event == .done && $0.result.status == .done })
        #expect(!FileManager.default.fileExists(atPath: deadPath), "the emptied area is removed")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: own.path + "/.outbox")).count == 3, "kept here until delivered")
        for id in taken.notices.map(\.id) { own.forget(notice: id) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: own.path + "/.outbox").isEmpty)
    }
}

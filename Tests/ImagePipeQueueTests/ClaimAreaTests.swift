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
        #expect(recovered == ["sub/orphan.jpg"])
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
        #expect(recovered.sorted() == ["linked.jpg", "returning.jpg"])
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

import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeTestSupport
import Testing

/// Jobs finishing together in one round (`ClaimArea.finish`): real files in a real queue
/// directory, the round's syncs the real ones, seen (and failed on purpose) on their way.
@Suite struct ClaimAreaRoundTests {
    /// What the round asked to sync, step by step, with what was on disk at that moment.
    final class Syncs {
        struct Step {
            var items: [SyncRound.Item]
            /// The paths of the files among them (read through /proc while they are open).
            var files: [String]
            var recordsInPlace: [String]
            var noticesInPlace: [String]
            var claimsLeft: [String]
        }

        var steps: [Step] = []
        /// Fails the file items whose path contains this, or the directory items equal to it.
        let failing: String?
        let fixture: QueueFixture
        let area: ClaimArea

        init(_ fixture: QueueFixture, _ area: ClaimArea, failing: String? = nil) {
            self.fixture = fixture
            self.area = area
            self.failing = failing
        }

        func sync(_ items: [SyncRound.Item]) -> [Int32?] {
            let files = items.compactMap { item -> String? in
                guard case .file(let fd) = item else { return nil }
                return try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")
            }
            let step = Step(
                items: items, files: files, recordsInPlace: fixture.files("done").filter { $0.hasSuffix(".json") },
                noticesInPlace: ClaimAreaRoundTests.keptNotices(area),
                claimsLeft: fixture.directory.files(under: "queue/processing/" + area.id).filter { !$0.hasSuffix(".lock") })
            steps.append(step)
            let real = SyncRound.sync(items)
            return zip(items, real).map { item, outcome in
                guard let failing else { return outcome }
                switch item {
                case .file(let fd):
                    let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? ""
                    return path.contains(failing) ? EIO : outcome
                case .directory(let path):
                    return path == failing ? EIO : outcome
                }
            }
        }
    }

    /// The notices kept in the area's outbox.
    static func keptNotices(_ area: ClaimArea) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: area.path + "/.outbox")) ?? []).filter { !$0.hasPrefix(".") }
    }

    /// An area holding `names`, claimed from the inbox.
    func claimed(_ names: [String], in fixture: QueueFixture) throws -> ClaimArea {
        let area = try ClaimArea(queue: fixture.queue)
        for name in names {
            fixture.deliver(name)
            guard case .claimed = area.claim(.init(name)) else {
                Issue.record("\(name) not claimed")
                continue
            }
        }
        return area
    }

    func finishes(_ names: [String], _ fixture: QueueFixture, notices: Bool = false) -> [ClaimArea.Finish] {
        names.map { name in
            ClaimArea.Finish(
                name, into: fixture.queue.done, record: Data("{\"source\":\"\(name)\"}\n".utf8), suffix: ".json",
                notice: notices ? JobNotice(event: .done, job: name, result: JobResult(source: name, status: .done)) : nil)
        }
    }

    @Test func jobsFinishingTogetherShareOneSyncOfTheirRecordsBytesAndOneOfTheirNames() throws {
        let fixture = try QueueFixture()
        let names = ["one.jpg", "two.jpg", "sub/three.jpg", "sub/four.jpg", "sub/deeper/five.jpg"]
        let area = try claimed(names, in: fixture)
        let syncs = Syncs(fixture, area)

        let outcomes = ClaimArea.finish(finishes(names, fixture), in: area.path, of: fixture.queue, sync: syncs.sync)

        #expect(try outcomes.map { try $0.get() } == names.map { fixture.queue.done + "/" + $0 })
        let steps = syncs.steps
        // Each job alone would have made ten rounds; together they make two.
        try #require(steps.count == 2, "\(steps.map(\.items))")
        #expect(steps[0].files.count == names.count && steps[0].files.allSatisfy { $0.contains("/processing/") && $0.hasSuffix(".tmp") })
        #expect(steps[0].recordsInPlace.isEmpty, "no record is under its name before its bytes are synced")
        let done = fixture.queue.done
        #expect(steps[1].items == [done + "/sub/deeper", done + "/sub", done].map(SyncRound.Item.directory), "each directory once, deepest first")
        #expect(steps[1].recordsInPlace.count == names.count, "every record is in place before its directory is synced")
        #expect(steps[1].claimsLeft.sorted() == names.sorted(), "and no claim is released before")
        #expect(fixture.directory.files(under: "queue/processing/" + area.id).filter { !$0.hasSuffix(".lock") }.isEmpty)
        #expect(fixture.files("done").count == names.count * 2)
    }

    @Test func keptNoticesAreSyncedInTheRoundAndNamedBeforeAnyRecordIs() throws {
        let fixture = try QueueFixture()
        let names = ["a.jpg", "b.jpg", "c.jpg"]
        let area = try claimed(names, in: fixture)
        let syncs = Syncs(fixture, area)

        let outcomes = ClaimArea.finish(finishes(names, fixture, notices: true), in: area.path, of: fixture.queue, sync: syncs.sync)

        #expect(outcomes.allSatisfy { (try? $0.get()) != nil })
        let steps = syncs.steps
        try #require(steps.count == 3, "bytes, the outbox, the records' directories: \(steps.map(\.items))")
        #expect(steps[0].files.count == names.count * 2, "the records' and the notices' bytes in one sync")
        #expect(steps[0].noticesInPlace.isEmpty)
        #expect(steps[1].items == [.directory(area.path + "/.outbox")])
        #expect(steps[1].noticesInPlace.count == names.count && steps[1].recordsInPlace.isEmpty, "every notice is named before any record")
        #expect(steps[2].recordsInPlace.count == names.count)
        #expect(Self.keptNotices(area).count == names.count, "the notices stay kept until sent")
    }

    @Test func aFileWhoseSyncFailsFailsItsOwnJobAlone() throws {
        let fixture = try QueueFixture()
        let names = ["good.jpg", "bad.jpg", "fine.jpg"]
        let area = try claimed(names, in: fixture)
        let syncs = Syncs(fixture, area, failing: "bad.jpg.json")

        let outcomes = ClaimArea.finish(finishes(names, fixture), in: area.path, of: fixture.queue, sync: syncs.sync)

        #expect((try? outcomes[0].get()) != nil && (try? outcomes[2].get()) != nil)
        guard case .failure(let error) = outcomes[1] else { Issue.record("the job whose record failed to sync succeeded"); return }
        #expect(error.code == .storageUnavailable && error.reason.contains("done/bad.jpg.json"), "\(error)")
        #expect(fixture.files("done").sorted() == ["bad.jpg", "fine.jpg", "fine.jpg.json", "good.jpg", "good.jpg.json"], "no record for it")
        let left = fixture.directory.files(under: "queue/processing/" + area.id).filter { !$0.hasSuffix(".lock") }
        #expect(left == ["bad.jpg"], "it stays claimed, its temporary record removed: \(left)")
    }

    @Test func aDirectoryWhoseSyncFailsFailsTheJobsUnderItAndNoOthers() throws {
        let fixture = try QueueFixture()
        let names = ["top.jpg", "sub/one.jpg", "sub/two.jpg"]
        let area = try claimed(names, in: fixture)
        let syncs = Syncs(fixture, area, failing: fixture.queue.done + "/sub")

        let outcomes = ClaimArea.finish(finishes(names, fixture), in: area.path, of: fixture.queue, sync: syncs.sync)

        #expect((try? outcomes[0].get()) != nil)
        for outcome in outcomes.dropFirst() {
            guard case .failure(let error) = outcome else { Issue.record("a job under the unsynced directory succeeded"); continue }
            #expect(error.reason.contains("cannot fsync the directory \(fixture.queue.done)/sub "), "\(error)")
        }
        let left = fixture.directory.files(under: "queue/processing/" + area.id).filter { !$0.hasSuffix(".lock") }.sorted()
        #expect(left == ["sub/one.jpg", "sub/two.jpg"], "their claims stay, for a worker that finds them finished or not: \(left)")
    }
}

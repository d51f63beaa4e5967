// A round's syncs: one syncfs per file system, and each item failed by its own error only; the calls recorded, real ones on real files.
import Foundation
@testable import ImagePipe
import ImagePipeTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct SyncRoundTests {
    let directory = TemporaryDirectory()

    /// Calls that record what they were asked and fail as told: descriptors below 100 are on device
    /// 1, the others on device 2.
    final class Recorder: Sendable {
        let log = Mutex<[String]>([])
        let failing: [String: Int32]

        init(failing: [String: Int32] = [:]) { self.failing = failing }

        var calls: SyncRound.Calls {
            SyncRound.Calls(
                fsync: { self.record("fsync \($0)") }, syncfs: { self.record("syncfs \($0)") },
                waitWriteback: { self.record("wait \($0)") }, mechanism: { (.syncfs, $0 < 100 ? 1 : 2) })
        }

        private func record(_ call: String) -> Int32? {
            log.withLock { $0.append(call) }
            return failing[call]
        }
    }

    @Test func oneSyncfsPerFileSystemThenEachFilesOwnWriteBackErrorFailsItAlone() {
        let recorder = Recorder(failing: ["wait 11": EIO])
        let outcomes = SyncRound.sync([.file(10), .file(11), .file(200), .file(12)], calls: recorder.calls)
        #expect(outcomes == [nil, EIO, nil, nil], "the file whose pages did not reach the disk fails; the others are durable")
        #expect(
            recorder.log.withLock { $0 } == ["syncfs 10", "syncfs 200", "wait 10", "wait 11", "wait 12", "wait 200"]
                || recorder.log.withLock { $0 } == ["syncfs 10", "wait 10", "wait 11", "wait 12", "syncfs 200", "wait 200"],
            "\(recorder.log.withLock { $0 })")
        #expect(!recorder.log.withLock { $0 }.contains { $0.hasPrefix("fsync") }, "no fsync when the syncfs committed")
    }

    @Test func aFailedSyncfsMayBeAnotherFilesErrorSoEachItemIsFsyncedAndFailsByItsOwn() {
        // The neighbour's write-back failed: syncfs reports it, but only file 11's own fsync fails.
        let recorder = Recorder(failing: ["syncfs 10": EIO, "fsync 11": ENOSPC])
        let outcomes = SyncRound.sync([.file(10), .file(11), .file(200)], calls: recorder.calls)
        #expect(outcomes == [nil, ENOSPC, nil])
        let log = recorder.log.withLock { $0 }
        #expect(log.contains("fsync 10") && log.contains("fsync 11"), "\(log)")
        #expect(!log.contains("fsync 200") && log.contains("wait 200"), "the other file system's round committed: \(log)")
    }

    @Test func aDirectoryIsCommittedWithItsFileSystemAndOneThatCannotBeOpenedFailsAlone() throws {
        let made = directory.url("made")
        try FileManager.default.createDirectory(atPath: made, withIntermediateDirectories: true)
        let opened = Mutex<[Int32]>([])
        var calls = SyncRound.Calls.system
        let real = calls.syncfs
        calls.syncfs = { fd in
            opened.withLock { $0.append(fd) }
            return real(fd)
        }
        calls.mechanism = { (.syncfs, SyncRound.mechanism(for: $0).device) }
        let outcomes = SyncRound.sync([.directory(made), .directory(directory.url("missing"))], calls: calls)
        #expect(outcomes == [nil, ENOENT])
        #expect(opened.withLock { $0.count } == 1, "one syncfs for the directory that exists")
    }

    @Test func realFilesOnTheTestsDiskAreCommittedByOneSyncfsAndStayWhole() throws {
        let syncfsCalls = Atomic<Int>(0)
        var calls = SyncRound.Calls.system
        let real = calls.syncfs
        calls.syncfs = {
            syncfsCalls.add(1, ordering: .relaxed)
            return real($0)
        }
        calls.mechanism = { (.syncfs, SyncRound.mechanism(for: $0).device) }
        let fds = (0..<8).map { index -> Int32 in
            let fd = open(directory.url("f\(index)"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            _ = write(fd, "bytes of \(index)", 10)
            return fd
        }
        defer { fds.forEach { close($0) } }
        let outcomes = SyncRound.sync(fds.map(SyncRound.Item.file), calls: calls)
        #expect(outcomes == Array(repeating: nil, count: 8))
        #expect(syncfsCalls.load(ordering: .relaxed) == 1)
        #expect(try String(contentsOfFile: directory.url("f3"), encoding: .utf8) == "bytes of 3")
    }

    @Test func fsyncsIssuedTogetherEachAnswerForTheirOwnItem() {
        let started = Atomic<Int>(0)
        var calls = Recorder(failing: ["fsync 13": EIO]).calls
        let fsync = calls.fsync
        calls.fsync = {
            started.add(1, ordering: .relaxed)
            return fsync($0)
        }
        calls.mechanism = { _ in (.together, 1) }
        let outcomes = SyncRound.sync((10..<50).map { SyncRound.Item.file(Int32($0)) }, calls: calls)
        #expect(outcomes == (10..<50).map { $0 == 13 ? EIO : nil }, "each outcome in its item's place")
        #expect(started.load(ordering: .relaxed) == 40, "each file fsynced once")
    }
}

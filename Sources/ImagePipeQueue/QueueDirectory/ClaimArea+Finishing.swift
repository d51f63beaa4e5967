// Jobs finishing together settle in one round: their records' (and kept notices') bytes made durable by one round of syncs, their names by another.
public import Foundation
public import ImagePipe
#if canImport(Glibc)
import Glibc
#endif

extension ClaimArea {
    /// A claimed job to move to `done/` or `failed/` beside its record (see ``finish(_:)``).
    public struct Finish: Sendable {
        /// The job's name in the area.
        public var relative: String
        /// `done/` or `failed/`.
        public var directory: String
        /// The JSON to write beside the original.
        public var record: Data
        /// `.json` for done, `.error.json` for failed.
        public var suffix: String
        /// Whether the job's options go beside the original (else they are removed).
        public var keepingOptions: Bool
        /// The notice to keep in the area's outbox before the record, when the worker notifies.
        public var notice: JobNotice?

        public init(_ relative: String, into directory: String, record: Data, suffix: String, keepingOptions: Bool = false, notice: JobNotice? = nil)
        {
            self.relative = relative
            self.directory = directory
            self.record = record
            self.suffix = suffix
            self.keepingOptions = keepingOptions
            self.notice = notice
        }
    }

    /// The most jobs one round finishes: each keeps two files open at most (its record and its
    /// notice) until the round's syncs, within what a store may keep open for its own round.
    public static let finishesPerRound = Capacity.Limits.filesWaitingForDurability / 2

    /// Moves finished jobs out of this area, each beside its record; one outcome per job, in order:
    /// the original's new path, or why the job stays claimed (it returns to the inbox when this
    /// worker restarts).
    ///
    /// Each job keeps the order of ``moveOut(_:into:record:suffix:keepingOptions:)``, and the jobs go
    /// through its durable steps together, so the round costs one sync of the file system (or one
    /// fsync per file where that is the mechanism, ``SyncRound``) per step, not per job:
    /// 1. every original linked into place, options beside it when kept, and every record and
    ///    notice written to a temporary file in the area;
    /// 2. one round for the bytes of them all;
    /// 3. the notices moved into the outbox, and one round for the outbox's entries, so a notice is
    ///    on disk before the record it tells of;
    /// 4. the records moved into place, and one round for their directories and each directory
    ///    above them up to `done/` or `failed/`;
    /// 5. each claim released (its tally, its options, then the original).
    ///
    /// A failed sync fails the jobs it covers and no other: a file's own error fails its job (its
    /// temporary file removed), a directory's every job whose record or notice is under it.
    public func finish(_ finishes: [Finish]) -> [Result<String, ImagePipeError>] {
        StallWatch.watch("settling \(finishes.count) job\(finishes.count == 1 ? "" : "s") into \(queue.root)") {
            Self.finish(finishes, in: path, of: queue)
        }
    }

    /// ``finish(_:)`` from the area at `areaPath`, which the caller holds the lock of: its own, or a
    /// dead worker's it is taking over. `sync` makes a step's items durable (``SyncRound/sync(_:calls:)``):
    /// tests watch and fail it.
    package static func finish(
        _ finishes: [Finish], in areaPath: String, of queue: QueueDirectory,
        sync: ([SyncRound.Item]) -> [Int32?] = { SyncRound.sync($0) }
    ) -> [Result<String, ImagePipeError>] {
        var outcomes = [Result<String, ImagePipeError>](repeating: .success(""), count: finishes.count)
        var staged: [Staged] = []
        for (index, finish) in finishes.enumerated() {
            do throws(ImagePipeError) {
                if let job = try stage(finish, at: index, in: areaPath, of: queue) {
                    staged.append(job)
                } else {
                    outcomes[index] = .success(try finishWithoutLinks(finish, in: areaPath, of: queue))
                }
            } catch {
                outcomes[index] = .failure(error)
            }
        }
        func fail(_ job: Staged, _ error: ImagePipeError) {
            job.discardTemporaries()
            outcomes[job.index] = .failure(error)
        }

        // Their bytes.
        let files = staged.flatMap { job in [job.notice, job.record].compactMap(\.?.fd) }
        let filesSynced = Dictionary(uniqueKeysWithValues: zip(files, sync(files.map(SyncRound.Item.file))))
        var written: [Staged] = []
        for job in staged {
            var failure: ImagePipeError?
            for file in [job.notice, job.record].compactMap(\.self) {
                let closed = close(file.fd) == 0 ? nil : errno
                if failure == nil, let code = filesSynced[file.fd]! ?? closed {
                    failure = DurableFile.failure(code, "cannot write \(file.path)", default: .storageUnavailable)
                }
            }
            if let failure { fail(job, failure) } else { written.append(job) }
        }

        // The notices' names, before any record's.
        var noticed: [Staged] = []
        written = written.filter { job in
            guard let notice = job.notice else { return true }
            if case .failure(let code) = DurableFile.place(notice.temporary, at: notice.path, replacing: true) {
                fail(job, DurableFile.failure(code.rawValue, "cannot write \(notice.path)", default: .storageUnavailable))
                return false
            }
            noticed.append(job)
            return true
        }
        if !noticed.isEmpty, let code = sync([.directory(outbox(of: areaPath))])[0] {
            let error = DurableFile.failure(code, "cannot fsync the outbox \(outbox(of: areaPath))", default: .storageUnavailable)
            let failed = Set(noticed.map(\.index))
            written = written.filter { job in
                guard failed.contains(job.index) else { return true }
                fail(job, error)
                return false
            }
        }

        // The records' names, and the directories above them.
        var placed: [Staged] = []
        for job in written {
            let record = job.record
            switch DurableFile.place(record.temporary, at: record.path, replacing: true) {
            case .success:
                placed.append(job)
            case .failure(let code) where code.rawValue == EXDEV:
                // The area is on another file system: the record is written beside its name instead.
                unlink(record.temporary)
                do throws(ImagePipeError) {
                    try DurableFile.write(finishes[job.index].record, to: record.path)
                    placed.append(job)
                } catch {
                    fail(job, error)
                }
            case .failure(let code):
                fail(job, DurableFile.failure(code.rawValue, "cannot write \(record.path)", default: .storageUnavailable))
            }
        }
        var covered: [String: [Int]] = [:]
        for (position, job) in placed.enumerated() {
            for directory in directories(from: LocalPath.parent(of: job.placed), upTo: finishes[job.index].directory) {
                covered[directory, default: []].append(position)
            }
        }
        // Deepest first, so a failure names the directory nearest the record.
        let ordered = covered.keys.sorted { $0.utf8.count > $1.utf8.count || ($0.utf8.count == $1.utf8.count && $0 < $1) }
        var unsynced: [Int: ImagePipeError] = [:]
        for (directory, failed) in zip(ordered, sync(ordered.map(SyncRound.Item.directory))) {
            guard let code = failed else { continue }
            for position in covered[directory]! where unsynced[position] == nil {
                unsynced[position] = DurableFile.failure(
                    code, "cannot fsync the directory \(directory) of \(placed[position].record.path)", default: .storageUnavailable)
            }
        }

        // Finished now: a crash from here on leaves each claim to a worker that finds it finished.
        for (position, job) in placed.enumerated() {
            if let error = unsynced[position] {
                // The record stays: whoever takes the area over finds the job finished.
                outcomes[job.index] = .failure(error)
                continue
            }
            do throws(ImagePipeError) {
                try release(finishes[job.index].relative, in: areaPath, of: queue, placed: job.placed)
                outcomes[job.index] = .success(job.placed)
            } catch {
                outcomes[job.index] = .failure(error)
            }
        }
        return outcomes
    }

    /// A job of a round: its original linked into place, its record (and notice) written, open.
    private struct Staged {
        /// A temporary file written, open until the round's sync.
        struct File {
            var fd: Int32
            var temporary: String
            var path: String
        }

        var index: Int
        /// The original's new path.
        var placed: String
        var record: File
        var notice: File?

        /// Removes what a failed job wrote: its record and notice stay unwritten.
        func discardTemporaries() {
            unlink(record.temporary)
            if let notice { unlink(notice.temporary) }
        }
    }

    /// Links the job's original into place (its options beside it when kept) and writes its record
    /// and notice to temporary files in the area; nil when the file system has no hard links, for
    /// ``finishWithoutLinks(_:in:of:)``.
    private static func stage(_ finish: Finish, at index: Int, in areaPath: String, of queue: QueueDirectory) throws(ImagePipeError) -> Staged? {
        let options = areaPath + "/" + JobOptionsFile.name(of: finish.relative)
        let keeps = finish.keepingOptions && FileMoves.exists(options)
        guard let placed = try linkOriginal(finish, in: areaPath, keepingOptions: keeps) else { return nil }
        if keeps { try FileMoves.keepCopy(options, at: JobOptionsFile.name(of: placed), staging: areaPath) }
        var notice: Staged.File?
        if let kept = finish.notice {
            let entry = try noticeEntry(kept, for: finish.relative, inArea: areaPath)
            notice = try temporaryFile(entry, for: outbox(of: areaPath) + "/\(kept.id).json", in: areaPath)
        }
        do throws(ImagePipeError) {
            let record = try temporaryFile(finish.record, for: placed + finish.suffix, in: areaPath)
            return Staged(index: index, placed: placed, record: record, notice: notice)
        } catch {
            if let notice {
                close(notice.fd)
                unlink(notice.temporary)
            }
            throw error
        }
    }

    /// Writes `data` to a new temporary file in `staging`, for `path`, and starts its write-back.
    private static func temporaryFile(_ data: Data, for path: String, in staging: String) throws(ImagePipeError) -> Staged.File {
        let temporary = staging + "/.\(LocalPath.name(of: path)).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd: Int32
        switch DurableFile.create(temporary) {
        case .success(let opened): fd = opened
        case .failure(let code): throw DurableFile.failure(code.rawValue, "cannot create \(temporary)", default: .storageUnavailable)
        }
        if let failed = data.withUnsafeBytes({ DurableFile.writeAll(fd, $0) }) {
            close(fd)
            unlink(temporary)
            throw DurableFile.failure(failed.rawValue, "cannot write \(path)", default: .storageUnavailable)
        }
        DurableFile.startWriteback(fd)
        return Staged.File(fd: fd, temporary: temporary, path: path)
    }

    /// Links the original of `finish` at its name in `done/` or `failed/` (a numbered one when
    /// taken, whether by a file, a record or kept options); its path, or nil when the file system
    /// has no hard links. An earlier run of the same job found linked already (a crash before its
    /// record) completes under that name, so a job is never finished twice under two names.
    private static func linkOriginal(_ finish: Finish, in areaPath: String, keepingOptions keeps: Bool) throws(ImagePipeError) -> String? {
        let source = areaPath + "/" + finish.relative
        let target = finish.directory + "/" + finish.relative
        try DurableFile.makeParent(of: target)
        var number = 0, parentRemakes = 0
        while true {
            let candidate = number == 0 ? target : FileMoves.numbered(target, number)
            if FileMoves.sameFile(source, candidate) { return candidate }
            if FileMoves.exists(candidate) || FileMoves.exists(candidate + finish.suffix)
                || (keeps && FileMoves.exists(JobOptionsFile.name(of: candidate)))
            {
                number += 1
                continue
            }
            if Glibc.link(source, candidate) == 0 { return candidate }
            if errno == EEXIST {
                // Another worker took this name between the check and the link.
                number += 1
            } else if errno == ENOENT, FileMoves.exists(source), parentRemakes < 3 {
                // A prune removed the folder as empty between its making and the link: make it again.
                parentRemakes += 1
                try DurableFile.makeParent(of: target)
            } else if errno == EPERM || errno == EXDEV || errno == EOPNOTSUPP || errno == EMLINK {
                return nil
            } else {
                throw FileMoves.failure("cannot move \(source) to \(candidate)")
            }
        }
    }

    /// A job's move out where the file system has no hard links (some network file systems), alone:
    /// its notice, its options and its record first, then a rename of the original. Options left here
    /// by a crash after it belong to a finished job; so does a tally a crash keeps from being removed
    /// (`imagepipe retry` removes it, should the job come back).
    private static func finishWithoutLinks(_ finish: Finish, in areaPath: String, of queue: QueueDirectory) throws(ImagePipeError) -> String {
        let source = areaPath + "/" + finish.relative
        let options = areaPath + "/" + JobOptionsFile.name(of: finish.relative)
        let keeps = finish.keepingOptions && FileMoves.exists(options)
        let target = finish.directory + "/" + finish.relative
        var number = 0
        var candidate = target
        while FileMoves.exists(candidate) || FileMoves.exists(candidate + finish.suffix)
            || (keeps && FileMoves.exists(JobOptionsFile.name(of: candidate)))
        {
            number += 1
            candidate = FileMoves.numbered(target, number)
        }
        if let notice = finish.notice { try keep(notice, for: finish.relative, inArea: areaPath) }
        if keeps { try FileMoves.keepCopy(options, at: JobOptionsFile.name(of: candidate), staging: areaPath) }
        try DurableFile.write(finish.record, to: candidate + finish.suffix, stagingIn: areaPath)
        if rename(source, candidate) != 0 { throw FileMoves.failure("cannot move \(source) to \(candidate)") }
        _ = DurableFile.syncDirectory(LocalPath.parent(of: candidate))
        AttemptLedger.forget(candidate, in: queue)
        if unlink(options) != 0 && errno != ENOENT { throw FileMoves.failure("cannot release \(options)") }
        FileMoves.removeEmptyParents(of: finish.relative, under: areaPath)
        return candidate
    }

    /// Releases the claim of a job whose record is on disk: its tally, its options, then the original.
    private static func release(_ relative: String, in areaPath: String, of queue: QueueDirectory, placed: String) throws(ImagePipeError) {
        AttemptLedger.forget(placed, in: queue)
        for file in [areaPath + "/" + JobOptionsFile.name(of: relative), areaPath + "/" + relative] {
            if unlink(file) != 0 && errno != ENOENT { throw FileMoves.failure("cannot release \(file)") }
        }
        FileMoves.removeEmptyParents(of: relative, under: areaPath)
    }

    /// `directory` and each directory above it up to `root`, deepest first.
    private static func directories(from directory: String, upTo root: String) -> [String] {
        var chain = [directory]
        var current = directory
        while current.utf8.count > root.utf8.count, current.hasPrefix(root + "/") {
            current = LocalPath.parent(of: current)
            chain.append(current)
        }
        return chain
    }
}

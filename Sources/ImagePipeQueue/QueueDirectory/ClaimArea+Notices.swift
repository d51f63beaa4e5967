// The claim area's outbox: a notice written before its job's record, so a worker that dies leaves it to the next one.
import Foundation
public import ImagePipe
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// One kept notice as `processing/AREA/.outbox/ID.json` holds it: the notice, and which claimed
/// file it tells of: its name in the area and its inode (a later delivery under the same name is
/// another file). No device number: another machine sharing the queue over NFS sees another one.
struct KeptNotice: Codable {
    var claim: String
    var inode: UInt64
    var notice: JobNotice
}

extension ClaimArea {
    /// Where this area keeps the notices of its jobs until they are delivered.
    var outbox: String { Self.outbox(of: path) }

    /// The outbox of the area at `areaPath`.
    static func outbox(of areaPath: String) -> String { areaPath + "/.outbox" }

    /// Keeps `notice` durably before the job `relative` is moved out with its record.
    ///
    /// Written ahead, the entry may tell of a record a crash kept from being written: whoever takes
    /// it over sends it only once the record is there (see ``takeOverNotices(of:in:into:logger:)``).
    public func keep(_ notice: JobNotice, for relative: String) throws(ImagePipeError) {
        try Self.keep(notice, for: relative, inArea: path)
    }

    /// ``keep(_:for:)`` in the area at `areaPath`, which the caller holds the lock of: its own, or a
    /// dead worker's whose job it sets aside.
    static func keep(_ notice: JobNotice, for relative: String, inArea areaPath: String) throws(ImagePipeError) {
        let entry = try noticeEntry(notice, for: relative, inArea: areaPath)
        try DurableFile.write(entry, to: outbox(of: areaPath) + "/\(notice.id).json", stagingIn: areaPath)
    }

    /// The outbox entry of `notice` for the job `relative` in the area at `areaPath`, the outbox made
    /// first when it is not there yet.
    static func noticeEntry(_ notice: JobNotice, for relative: String, inArea areaPath: String) throws(ImagePipeError) -> Data {
        var info = stat()
        guard lstat(areaPath + "/" + relative, &info) == 0 else { throw FileMoves.failure("cannot keep the notice of \(relative)") }
        try makeOutbox(of: areaPath)
        return Data(JSONLine.encode(KeptNotice(claim: relative, inode: UInt64(info.st_ino), notice: notice)).utf8)
    }

    /// Creates the outbox once, durably: its entry in the area is fsynced, so an entry written in it
    /// cannot vanish in a crash that the job's record survives.
    private func makeOutbox() throws(ImagePipeError) {
        try Self.makeOutbox(of: path)
    }

    private static func makeOutbox(of areaPath: String) throws(ImagePipeError) {
        let outbox = Self.outbox(of: areaPath)
        var info = stat()
        guard lstat(outbox, &info) != 0 else { return }
        BlockingIO.mayBlock("mkdir \(outbox)")
        guard mkdir(outbox, 0o755) == 0 || errno == EEXIST else { throw FileMoves.failure("cannot create \(outbox)") }
        if let failed = DurableFile.syncDirectory(areaPath) {
            errno = failed.rawValue
            throw FileMoves.failure("cannot sync \(areaPath)")
        }
    }

    /// The notices this area keeps under `ids`, read back (those a worker could not send now).
    func keptNotices(_ ids: [String]) -> [JobNotice] {
        ids.compactMap { id in
            FileManager.default.contents(atPath: outbox + "/\(id).json").flatMap { try? JSONDecoder().decode(KeptNotice.self, from: $0).notice }
        }
    }

    /// Forgets a notice delivered or given up.
    public func forget(notice id: String) {
        BlockingIO.mayBlock("unlink a kept notice")
        unlink(outbox + "/\(id).json")
    }

    /// The kept notices of this area, by file name (ignoring what is not an entry).
    static func keptNotices(in areaPath: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: areaPath + "/.outbox")) ?? []
        return names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
    }

    /// Takes over the notices an abandoned area kept (its lock is held by the caller, and its claims
    /// are still in place): those whose record is written move into `own`'s outbox and are returned,
    /// to be sent; those whose job was cut short before its record are removed, as the job goes back
    /// to the inbox and its next run has its own. Without `own` (this worker does not notify) the
    /// deliverable ones stay, and so does the area, for a worker that does.
    static func takeOverNotices(of areaPath: String, in queue: QueueDirectory, into own: ClaimArea?, logger: Logger) -> [JobNotice] {
        let names = keptNotices(in: areaPath)
        guard !names.isEmpty else { return [] }

        var taken: [JobNotice] = []
        for name in names {
            let file = areaPath + "/.outbox/" + name
            guard let data = FileManager.default.contents(atPath: file), let entry = try? JSONDecoder().decode(KeptNotice.self, from: data)
            else {
                // Entries are written whole (a temporary file renamed), so this is a damaged disk: the
                // job's record is in done/ or failed/ all the same.
                logger.error("cannot read a kept notification; removed, its job's record is in the queue", metadata: ["file": "\(file)"])
                unlink(file)
                continue
            }
            // Its job's claim still here (the same file under its name): the record is written only
            // if the job finished. Else the claim was released, which comes after the record.
            let claimed = areaPath + "/" + entry.claim
            var info = stat()
            if lstat(claimed, &info) == 0, UInt64(info.st_ino) == entry.inode, !isFinished(claimed, relative: entry.claim, in: queue) {
                unlink(file)
                continue
            }
            guard let own, (try? own.makeOutbox()) != nil else { continue }
            if rename(file, own.outbox + "/" + name) == 0 { taken.append(entry.notice) }
        }
        if !taken.isEmpty, let own { _ = DurableFile.syncDirectory(own.outbox) }
        return taken
    }
}

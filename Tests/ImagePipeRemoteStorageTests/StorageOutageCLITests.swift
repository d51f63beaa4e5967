// An S3 destination that goes away in the middle of a batch: the real binary against a moto server that is stopped.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// `imagepipe batch` into S3 when the store stops answering part-way.
@Suite(.offThePool) struct StorageOutageCLITests {
    let directory = TemporaryDirectory(prefix: "imagepipe-s3-outage")

    @Test func aStoreThatGoesAwayHaltsTheBatchAfterOneJobsRetriesAndLeavesTheRestNotStarted() throws {
        let moto = try MotoServer.dedicated()
        let bucket = try moto.makeBucket()
        let count = 60
        let photo = Fixtures.data("images/formats/small-400x300.jpg")
        // Each a little larger than the one before (bytes after the image's end, which decoding
        // ignores): images start largest first, so the last names start first.
        for index in 0..<count { directory.write(String(format: "src/photo-%03d.jpg", index), photo + Data(count: index * 64)) }
        let manifest = directory.url("manifest.jsonl")
        let batch = try WorkerProcess(
            [
                "batch", directory.url("src"), "--dest", "s3://\(bucket)/site", "--endpoint", moto.endpoint, "--region", "us-east-1",
                "--manifest", manifest, "--variant", "t=200x200,jpeg,q70", "--jobs", "1", "--uploads", "1",
            ],
            log: directory.url("batch.log"),
            environment: ["AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "HOME": directory.path])
        let lines = { ((try? String(contentsOfFile: manifest, encoding: .utf8)) ?? "").split(separator: "\n") }
        #expect(eventually(seconds: 60) { lines().count >= 5 }, "\(batch.log)")
        moto.stop()
        // One job's requests use up their retries (three attempts, a few seconds), then the batch
        // halts; it used to go through every remaining image, each failing after its own retries.
        let status = batch.waitForExit(seconds: 60)
        #expect(status == 1, "\(batch.log.suffix(3000))")
        let records = try lines().map { try JSONDecoder().decode(JobResult.self, from: Data($0.utf8)) }
        let done = records.filter { $0.status == .done }.count
        let unavailable = records.filter { $0.errorCode == .storageUnavailable }
        #expect(done >= 5 && done < count)
        // The job that met the outage, and those already admitted fail: the pipeline's room (3 here),
        // and the small images that gave theirs back to wait for a batch (16 at most with one
        // compression); none of the rest is started, so none of them has a line in the manifest.
        #expect(!unavailable.isEmpty && unavailable.count <= 4 + 16, "\(unavailable.count): \(unavailable.map { $0.error ?? "" })")
        #expect(records.count < count - 10)
        let log = batch.log
        let notStarted = count - records.count
        #expect(log.contains("halted: storage_unavailable ("), "\(log.suffix(2000))")
        #expect(
            log.contains(
                "\(notStarted) image(s) not started: images start largest first, not in path order, so those not started are the "
                    + "smallest (the manifest lists what was done); run the batch again once the store answers"),
            "\(log.suffix(2000))")
        // As it says: those with a line in the manifest are the largest, the first names the smallest.
        let started = Set(records.map(\.source))
        let expected = Set((count - records.count..<count).map { String(format: "photo-%03d.jpg", $0) })
        #expect(started == expected, "\(started.sorted())")
    }
}

extension StorageOutageCLITests {
    @Test func aWatchWorkerPausesClaimingWhileTheStoreIsDownAndResumesWhenItIsBack() throws {
        var moto = try MotoServer.dedicated()
        let port = moto.port
        let bucket = try moto.makeBucket()
        let queue = directory.url("queue")
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)
        let worker = try WorkerProcess(
            [
                "watch", queue, "--dest", "s3://\(bucket)/site", "--endpoint", moto.endpoint, "--region", "us-east-1",
                "--variant", "t=200x200,jpeg,q70", "--jobs", "1", "--uploads", "1", "--status-interval", "0", "--retry-delay", "0.2",
                "--max-attempts", "50",
            ],
            log: directory.url("worker.log"),
            environment: ["AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "HOME": directory.path])
        let photo = Fixtures.data("images/formats/small-400x300.jpg")
        func deliver(_ name: String) {
            let hidden = queue + "/inbox/." + name
            _ = FileManager.default.createFile(atPath: hidden, contents: photo)
            rename(hidden, queue + "/inbox/" + name)
        }
        deliver("first.jpg")
        #expect(eventually { FileManager.default.fileExists(atPath: queue + "/done/first.jpg.json") }, "\(worker.log)")

        moto.stop()
        for index in 0..<6 { deliver("during-\(index).jpg") }
        // The first job to meet the outage (after its requests' retries) pauses claiming.
        #expect(worker.waitForLog("storage cannot be reached: no new claims", seconds: 60), "\(worker.log)")
        #expect(
            TextLog.hasLine(
                worker.log, "warning", "storage cannot be reached: no new claims for a while, longer while it stays so; jobs held retry as usual",
                ["error_code": "storage_unavailable"]), "\(worker.log)")

        // The store comes back where it was, with its bucket: the held retries are stored, claiming resumes.
        moto = try MotoServer.dedicated(port: port)
        _ = try moto.makeBucket(bucket)
        #expect(worker.waitForLog("storage takes objects again: claiming resumed", seconds: 60), "\(worker.log)")
        let done = (0..<6).map { queue + "/done/during-\($0).jpg.json" }
        #expect(eventually(seconds: 90) { done.allSatisfy { FileManager.default.fileExists(atPath: $0) } }, "\(worker.log)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: queue + "/failed").isEmpty)
        worker.send(SIGTERM)
        #expect(worker.waitForExit(seconds: 30) == 0, "\(worker.log)")
        withExtendedLifetime(moto) {}
    }
}

import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing
import ImagePipeRemoteStorage

/// `imagepipe watch` storing into S3 through a proxy that fails for a while: the job survives on
/// retries, and its original stays safe in the queue until every object is stored.
@Suite(.offThePool) struct WatchIntoS3Tests {
    let directory = TemporaryDirectory(prefix: "imagepipe-watch-s3")

    @Test func aStorageOutageIsRetriedUntilTheJobIsDone() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        // The start-up probe (HEAD bucket) and the first attempt's three lookups (HEAD object) pass;
        // its three puts meet 503s; then the store recovers.
        let proxy = try FaultProxy(upstream: moto, plan: ["pass", "pass", "pass", "pass", "503", "503", "503"])
        let queue = directory.url("queue")
        try FileManager.default.createDirectory(atPath: queue + "/inbox", withIntermediateDirectories: true)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandRunner.binary)
        process.arguments = [
            "watch", queue, "--dest", "s3://\(bucket)/media", "--endpoint", proxy.endpoint, "--region", "us-east-1",
            "--jobs", "1", "--uploads", "1", "--retry-delay", "0.05", "--max-attempts", "4", "--status-interval", "0",
        ]
        // One request attempt per put, so the outage reaches the queue's own retries.
        process.environment = checkingBlocking(
            ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AWS_") }.merging([
                "AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.credentials.secretAccessKey,
                "AWS_MAX_ATTEMPTS": "1", "HOME": directory.path,
            ]) { $1 })
        let log = directory.url("worker.log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        let hidden = queue + "/inbox/.photo.png"
        try Fixtures.data("images/formats/tiny.png").write(to: URL(fileURLWithPath: hidden))
        rename(hidden, queue + "/inbox/photo.png")

        let record = queue + "/done/photo.png.json"
        let finished = eventually { FileManager.default.fileExists(atPath: record) }
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(finished, "\(output)")
        let result = try JSONDecoder().decode(JobResult.self, from: Data(contentsOf: URL(fileURLWithPath: record)))
        #expect(result.status == .done)
        #expect(result.attempts == 2, "the first attempt met the outage")
        #expect(
            TextLog.hasLine(
                output, "warning", "attempt failed, retrying",
                ["source": "photo.png", "attempt": "1", "max_attempts": "4", "error_code": "storage_unavailable"]), "\(output)")
        #expect(try moto.keys(bucket) == ["media/photo-large.jpg", "media/photo-medium.webp", "media/photo-thumb.webp"])
        #expect(proxy.entries().dropFirst(4).prefix(3).allSatisfy { $0.fault == "503" })
        #expect(!FileManager.default.fileExists(atPath: queue + "/failed/photo.png"))

        process.interrupt()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}

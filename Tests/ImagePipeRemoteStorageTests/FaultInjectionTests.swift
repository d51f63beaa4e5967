import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Testing

/// S3Storage through a proxy that drops, resets, stalls, corrupts and fails requests on the way to moto.
@Suite(.offThePool) struct FaultInjectionTests {
    let moto: MotoServer
    let bucket: String

    init() throws {
        moto = try MotoServer.signed()
        bucket = try moto.makeBucket()
    }

    func storage(
        _ proxy: FaultProxy, retry: RetryPolicy = .fast, stallTimeout: Duration = .seconds(30),
        multipart: Bool = false
    ) throws -> S3Storage {
        S3Storage(
            configuration: try moto.configuration(
                bucket: bucket, endpoint: proxy.endpoint, retry: retry, stallTimeout: stallTimeout,
                multipartThreshold: multipart ? 5 << 20 : 8 << 20, partSize: 5 << 20))
    }

    @Test func serverErrorsAndBrokenConnectionsAreRetriedUntilStored() throws {
        let proxy = try FaultProxy(upstream: moto, plan: ["503", "reset", "500", "drop", "pass"])
        let body = Data.pattern(300_000)
        let storage = try storage(proxy, retry: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20)))

        let stored = try storage.put(StorageObject(key: "retried.jpg", body: body, contentType: "image/jpeg"))

        #expect(stored.bytes == body.count)
        #expect(proxy.entries().map(\.fault) == ["503", "reset", "500", "drop", "pass"])
        #expect(proxy.entries().allSatisfy { $0.method == "PUT" && $0.contentMD5 == Data(Digests.md5(body)).base64EncodedString() })
        #expect(try moto.object(bucket, "retried.jpg")?.sha256 == body.sha256)
    }

    @Test func whenRetriesRunOutTheFailureIsTransientAndNothingIsStored() throws {
        let proxy = try FaultProxy(upstream: moto, plan: ["503", "503", "503", "pass"])
        let storage = try storage(proxy)
        let error = try #require(throws: ImagePipeError.self) {
            try storage.put(StorageObject(key: "never.jpg", body: Data([1, 2, 3]), contentType: "image/jpeg"))
        }
        #expect(error.code == .storageUnavailable)
        #expect(error.isTransient)
        #expect(error.reason.contains("SlowDown (503): Please reduce your request rate."), "\(error.reason)")
        #expect(error.reason.contains("gave up after 3 attempts"))
        #expect(proxy.entries().count == 3, "the fourth request, which would pass, is never sent")
        #expect(try moto.object(bucket, "never.jpg") == nil)
    }

    @Test func aStalledTransferIsAbandonedAndRetried() throws {
        let proxy = try FaultProxy(upstream: moto, plan: ["stall", "pass"])
        let storage = try storage(proxy, stallTimeout: .seconds(1))
        _ = try storage.put(StorageObject(key: "after-stall.webp", body: Data.pattern(5000), contentType: "image/webp"))
        #expect(proxy.entries().map(\.fault) == ["stall", "pass"])
        #expect(try moto.object(bucket, "after-stall.webp")?.size == 5000)
    }

    @Test func permanentErrorsAreNotRetried() throws {
        let proxy = try FaultProxy(upstream: moto, plan: ["403"])
        let storage = try storage(proxy)
        let error = try #require(throws: ImagePipeError.self) {
            try storage.put(StorageObject(key: "denied.jpg", body: Data([1]), contentType: "image/jpeg"))
        }
        #expect(error.code == .storageRejected)
        #expect(error.reason.contains("AccessDenied (403): Access Denied"))
        #expect(proxy.entries().count == 1)
    }

    /// moto does not check Content-MD5 itself (S3, MinIO, R2 and Ceph do), so this is caught by
    /// comparing the ETag moto computed over the bytes it received with the MD5 that was sent.
    @Test func aBodyCorruptedOnTheWayIsDetectedAndSentAgain() throws {
        let proxy = try FaultProxy(upstream: moto, plan: ["corrupt", "pass"])
        let body = Data.pattern(100_000, seed: 7)
        let storage = try storage(proxy)
        _ = try storage.put(StorageObject(key: "fixed.jpg", body: body, contentType: "image/jpeg"))
        #expect(proxy.entries().map(\.fault) == ["corrupt", "pass"])
        #expect(try moto.object(bucket, "fixed.jpg")?.sha256 == body.sha256)
    }

    @Test func aBodyCorruptedEveryTimeFailsAndLeavesNoBrokenObject() throws {
        let proxy = try FaultProxy(upstream: moto, plan: ["corrupt", "corrupt", "corrupt"])
        let storage = try storage(proxy)
        let error = try #require(throws: ImagePipeError.self) {
            try storage.put(StorageObject(key: "broken.jpg", body: Data.pattern(50_000), contentType: "image/jpeg"))
        }
        #expect(error.code == .storageUnavailable)
        #expect(error.reason.contains("checksum mismatch"), "\(error.reason)")
        #expect(proxy.entries().map(\.method) == ["PUT", "PUT", "PUT", "DELETE"])
        #expect(try moto.object(bucket, "broken.jpg") == nil)
    }

    @Test func aFailedPartIsRetriedWithinTheMultipartUpload() throws {
        // 1 create, 2 part 1, 3 part 2 (503), 4 part 2 again, 5 part 3, 6 complete.
        let proxy = try FaultProxy(upstream: moto, plan: ["pass", "pass", "503"])
        let body = Data.pattern(11 << 20, seed: 3)
        let storage = try storage(proxy, multipart: true)
        _ = try storage.put(StorageObject(key: "large.tiff", body: body, contentType: "image/tiff"))
        let entries = proxy.entries()
        #expect(entries.map(\.method) == ["POST", "PUT", "PUT", "PUT", "PUT", "POST"])
        #expect(entries[1...4].allSatisfy { $0.contentMD5 != nil && $0.path.contains("partNumber=") })
        #expect(try moto.object(bucket, "large.tiff")?.sha256 == body.sha256)
        #expect(try moto.pendingUploads(bucket).isEmpty)
    }

    @Test func aMultipartUploadThatFailsIsAbortedLeavingNoParts() throws {
        // 1 create, 2 part 1, 3 part 2 refused for good, 4 abort.
        let proxy = try FaultProxy(upstream: moto, plan: ["pass", "pass", "403", "pass"])
        let storage = try storage(proxy, multipart: true)
        let error = try #require(throws: ImagePipeError.self) {
            try storage.put(StorageObject(key: "aborted.tiff", body: .pattern(11 << 20), contentType: "image/tiff"))
        }
        #expect(error.code == .storageRejected)
        #expect(error.reason.contains("UploadPart 2 of s3://\(bucket)/aborted.tiff: AccessDenied (403)"), "\(error.reason)")
        let entries = proxy.entries()
        #expect(entries.map(\.method) == ["POST", "PUT", "PUT", "DELETE"])
        #expect(entries.last?.path.contains("uploadId=") == true)
        #expect(try moto.pendingUploads(bucket).isEmpty, "no orphaned parts")
        #expect(try moto.object(bucket, "aborted.tiff") == nil)
    }
}

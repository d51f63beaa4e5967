import Foundation
import ImagePipeTestSupport
import ImagePipe
import ImagePipeRemoteStorage
import Testing

/// S3SourceRepository against moto with signature checking on, through the fault proxy where the
/// wire matters, checked with boto3.
///
/// moto's signature check gets a `/` in a query value wrong (boto3's own `list_objects_v2(Prefix="a/")`
/// fails it too), so listings of a folder below the bucket's root run against moto without
/// signature checking; whole-bucket listings, with every key in folders, run with it.
@Suite(.offThePool) struct S3SourceTests {
    let moto: MotoServer
    let bucket: String

    init() throws {
        moto = try MotoServer.signed()
        bucket = try moto.makeBucket()
    }

    func repository(endpoint: String? = nil, secret: String? = nil) throws -> S3SourceRepository {
        S3SourceRepository(configuration: try moto.configuration(bucket: bucket, secret: secret, endpoint: endpoint))
    }

    func location(_ key: String, bucket: String? = nil) -> ObjectLocation {
        ObjectLocation(scheme: "s3", bucket: bucket ?? self.bucket, key: key)
    }

    func readError(_ repository: S3SourceRepository, _ key: String, maxBytes: Int = 1 << 20) -> ImagePipeError? {
        thrownError { () throws(ImagePipeError) in try repository.read(location(key), maxBytes: maxBytes) }
    }

    @Test func anObjectIsReadWholeWithItsETag() throws {
        let file = Fixtures.root + "/images/formats/small-200x150.jpg"
        let etag = try moto.put(bucket, "in/2024/a b.jpg", file: file)
        let fetched = try repository().read(location("in/2024/a b.jpg"), maxBytes: 1 << 20)
        #expect(fetched.data == (Fixtures.data("images/formats/small-200x150.jpg")))
        #expect(fetched.etag == etag && etag.count == 32, "boto3's ETag, without quotes")

        let info = try #require(try repository().info(location("in/2024/a b.jpg")))
        #expect(info.bytes == fetched.data.count && info.etag == etag)
        #expect(try repository().info(location("in/missing.jpg")) == nil)
    }

    @Test func aMissingObjectIsSourceNotFound() throws {
        let error = try #require(readError(try repository(), "nothing/here.jpg"))
        #expect(error.code == .sourceNotFound)
        #expect(!error.isTransient)
        #expect(error.reason.hasPrefix("s3://\(bucket)/nothing/here.jpg does not exist (NoSuchKey (404)"), "\(error.reason)")
    }

    @Test func aRefusedReadIsSourceForbiddenAndNotRetried() throws {
        try moto.put(bucket, "a.jpg", size: 100)
        let proxy = try FaultProxy(upstream: moto, plan: ["403"])
        let error = try #require(readError(try repository(endpoint: proxy.endpoint), "a.jpg"))
        #expect(error.code == .sourceForbidden)
        #expect(error.reason.contains("reading s3://\(bucket)/a.jpg is refused (AccessDenied (403): Access Denied)"), "\(error.reason)")
        #expect(proxy.entries().map(\.method) == ["GET"])

        // Credentials moto does not accept: refused the same way, by moto's own signature check.
        let wrongSecret = try #require(readError(try repository(secret: "not-the-secret"), "a.jpg"))
        #expect(wrongSecret.code == .sourceForbidden)
        #expect(wrongSecret.reason.contains("SignatureDoesNotMatch (403)"), "\(wrongSecret.reason)")
    }

    @Test func transientFailuresOfAGetAreRetried() throws {
        let body = Data.pattern(50_000, seed: 4)
        let file = NSTemporaryDirectory() + "/imagepipe-source-\(UUID().uuidString.prefix(8))"
        try body.write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        try moto.put(bucket, "retried.jpg", file: file)

        let proxy = try FaultProxy(upstream: moto, plan: ["503", "reset", "pass"])
        let fetched = try repository(endpoint: proxy.endpoint).read(location("retried.jpg"), maxBytes: 1 << 20)
        #expect(fetched.data == body)
        #expect(proxy.entries().map(\.method) == ["GET", "GET", "GET"])
        #expect(proxy.entries().map(\.fault) == ["503", "reset", "pass"])

        let outage = try FaultProxy(upstream: moto, plan: ["503", "503", "503", "pass"])
        let error = try #require(readError(try repository(endpoint: outage.endpoint), "retried.jpg"))
        #expect(error.code == .storageUnavailable && error.isTransient)
        #expect(error.reason.contains("gave up after 3 attempts"), "\(error.reason)")
        #expect(outage.entries().count == 3)
    }

    @Test func anObjectLargerThanTheLimitIsRefusedFromItsContentLengthWithoutItsBody() throws {
        let size = 32 << 20
        try moto.put(bucket, "huge.tiff", size: size)
        let proxy = try FaultProxy(upstream: moto, plan: [])
        let error = try #require(readError(try repository(endpoint: proxy.endpoint), "huge.tiff", maxBytes: 1 << 20))
        #expect(error.code == .imageTooLarge)
        #expect(
            error.reason
                == "s3://\(bucket)/huge.tiff is \(size) bytes, more than the \(1 << 20) bytes --max-source-bytes allows; it was not downloaded")
        let entries = proxy.entries()
        #expect(entries.map(\.method) == ["GET"], "refused at once, not retried")
        // The proxy only gets rid of what fits in the sockets' buffers (a few MiB on loopback) before the client hangs up.
        let relayed = try #require(waitForRelayed(proxy))
        #expect(relayed < size / 4, "\(relayed) of \(size) bytes were taken")
    }

    /// The bytes the proxy relayed for its first request, once it has logged them.
    func waitForRelayed(_ proxy: FaultProxy) -> Int? {
        for _ in 0..<100 {
            if let relayed = proxy.entries().first?.relayed { return relayed }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return nil
    }

    @Test func aBucketIsListedAcrossPagesWithSizesAndETags() throws {
        let file = Fixtures.root + "/images/formats/tiny.png"
        let keys = try moto.fill(bucket, prefix: "many", count: 1_100, files: [file])
        let proxy = try FaultProxy(upstream: moto, plan: [])
        let listed = try repository(endpoint: proxy.endpoint).list(location(""))

        #expect(listed.map(\.location.key).sorted() == keys.sorted())
        let size = Fixtures.data("images/formats/tiny.png").count
        #expect(listed.allSatisfy { $0.bytes == size && $0.etag == Digests.md5(Fixtures.data("images/formats/tiny.png")).hexString })
        let requests = proxy.entries()
        #expect(requests.count == 2, "1,000 keys a page: \(requests.map(\.path))")
        #expect(requests.last?.path.contains("continuation-token=") == true)
    }

    @Test func aFolderBelowTheRootIsListedAndKeysWithSpacesPlusAndAccentsSurvive() throws {
        let unsigned = try MotoServer.unsigned()
        let bucket = try unsigned.makeBucket()
        let keys = ["odd/a b.jpg", "odd/a+b (1).jpg", "odd/été/ü.png", "odd/x&y<z>.jpg", "odd/sub/deeper/c.jpg"]
        for (index, key) in keys.enumerated() {
            try unsigned.put(bucket, key, size: 10 + index)
        }
        try unsigned.put(bucket, "odd.jpg", size: 1)
        try unsigned.put(bucket, "oddities/x.jpg", size: 1)
        let repository = S3SourceRepository(configuration: try unsigned.configuration(bucket: bucket))

        let listed = try repository.list(location("odd/", bucket: bucket))
        #expect(listed.map(\.location.key).sorted() == keys.sorted(), "only the folder's objects, not odd.jpg or oddities/")
        for (index, key) in keys.enumerated() {
            let fetched = try repository.read(location(key, bucket: bucket), maxBytes: 100)
            #expect(fetched.data.count == 10 + index, "\(key)")
        }
    }

    @Test func aBucketThatCannotBeListedIsAConfigurationError() throws {
        let right = try repository()
        let missing = try #require(thrownError { () throws(ImagePipeError) in try right.list(location("", bucket: "no-such-bucket")) })
        #expect(missing.code == .configuration)
        #expect(missing.reason == "bucket s3://no-such-bucket does not exist at \(moto.endpoint)")
        let wrong = try repository(secret: "wrong")
        let refused = try #require(thrownError { () throws(ImagePipeError) in try wrong.list(location("")) })
        #expect(refused.code == .configuration)
        #expect(
            refused.reason.contains("access to bucket s3://\(bucket) is denied (403)") && refused.reason.contains("s3:GetObject"),
            "\(refused.reason)")
    }
}

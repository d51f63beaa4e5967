import Foundation
import ImagePipeTestSupport
import ImagePipe
import ImagePipeRemoteStorage
import Testing

/// S3Storage against a real S3-compatible server (moto on loopback), checked with boto3.
@Suite(.offThePool) struct S3StorageTests {
    @Test func storesObjectsWithTheirHeadersUnderThePrefix() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        let storage = S3Storage(configuration: try moto.configuration(bucket: bucket, prefix: "variants/2024"))
        let body = Fixtures.data("images/formats/tiny.png")

        let stored = try storage.put(
            StorageObject(
                key: "trip/beach thumb.png", body: body, contentType: "image/png",
                cacheControl: "public, max-age=60"))

        #expect(
            stored
                == StoredObject(
                    key: "trip/beach thumb.png",
                    url: "\(moto.endpoint)/\(bucket)/variants/2024/trip/beach%20thumb.png", bytes: body.count))
        let info = try #require(try moto.object(bucket, "variants/2024/trip/beach thumb.png"))
        #expect(info.size == body.count && info.sha256 == body.sha256)
        #expect(info.contentType == "image/png")
        #expect(info.cacheControl == "public, max-age=60")
        #expect(storage.location == "s3://\(bucket)/variants/2024/")
    }

    @Test func aPutReplacesTheObjectAndReusesTheConnection() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        // moto closes every connection after answering; the proxy in front of it keeps them open as S3 does.
        let proxy = try FaultProxy(upstream: moto, plan: [])
        let storage = S3Storage(configuration: try moto.configuration(bucket: bucket, endpoint: proxy.endpoint))
        for index in 0..<6 {
            _ = try storage.put(StorageObject(key: "same.webp", body: .pattern(10_000 + index, seed: UInt64(index)), contentType: "image/webp"))
        }
        #expect(try moto.object(bucket, "same.webp")?.sha256 == Data.pattern(10_005, seed: 5).sha256)
        #expect(storage.httpStatistics == CurlHTTPClient.Statistics(requests: 6, connections: 1), "one connection for six sequential puts")
    }

    @Test func concurrentPutsFromManyThreads() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        let storage = S3Storage(configuration: try moto.configuration(bucket: bucket))
        let bodies = (0..<16).map { Data.pattern(20_000 + $0 * 1000, seed: UInt64($0)) }
        DispatchQueue.concurrentPerform(iterations: bodies.count) { index in
            #expect(throws: Never.self) {
                try storage.put(StorageObject(key: "many/\(index).jpg", body: bodies[index], contentType: "image/jpeg"))
            }
        }
        #expect(try moto.keys(bucket) == (0..<16).map { "many/\($0).jpg" }.sorted())
        for (index, body) in bodies.enumerated() {
            #expect(try moto.object(bucket, "many/\(index).jpg")?.sha256 == body.sha256)
        }
        #expect(storage.httpStatistics.connections <= 16)
    }

    @Test func aPublicBaseURLIsRecordedInsteadOfTheBucketURL() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        var configuration = try moto.configuration(bucket: bucket, prefix: "img")
        configuration.publicBaseURL = "https://cdn.example.com/media/"
        let stored = try S3Storage(configuration: configuration)
            .put(StorageObject(key: "a b/c.avif", body: Data([1, 2, 3]), contentType: "image/avif"))
        #expect(stored.url == "https://cdn.example.com/media/img/a%20b/c.avif")
    }

    /// moto's signature checker gets keys with non-ASCII letters, `+` and `(` wrong, so these go to a
    /// moto without signature checking; the signer's encoding of them is proven by the AWS vectors.
    @Test func keysWithSpacesAccentsPlusAndParentheses() throws {
        let moto = try MotoServer.unsigned()
        let bucket = try moto.makeBucket()
        let storage = S3Storage(configuration: try moto.configuration(bucket: bucket, prefix: "Été"))
        let keys = ["Été 2024/a+b (1)-large.jpg", "naïve/日本語 ~file!.webp", "sp ace/x=y&z;@$,'.png"]
        var urls: [String] = []
        for (index, key) in keys.enumerated() {
            let body = Data.pattern(3000, seed: UInt64(index))
            urls.append(try storage.put(StorageObject(key: key, body: body, contentType: "image/jpeg")).url)
            #expect(try moto.object(bucket, "Été/" + key)?.sha256 == body.sha256)
        }
        #expect(
            urls == [
                "\(moto.endpoint)/\(bucket)/%C3%89t%C3%A9/%C3%89t%C3%A9%202024/a%2Bb%20%281%29-large.jpg",
                "\(moto.endpoint)/\(bucket)/%C3%89t%C3%A9/na%C3%AFve/%E6%97%A5%E6%9C%AC%E8%AA%9E%20~file%21.webp",
                "\(moto.endpoint)/\(bucket)/%C3%89t%C3%A9/sp%20ace/x%3Dy%26z%3B%40%24%2C%27.png",
            ])
    }

    @Test func spacesInKeysPassMotosSignatureCheck() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        let storage = S3Storage(configuration: try moto.configuration(bucket: bucket))
        _ = try storage.put(StorageObject(key: "my photos/summer trip-thumb.webp", body: Data([9, 9]), contentType: "image/webp"))
        #expect(try moto.object(bucket, "my photos/summer trip-thumb.webp")?.size == 2)
    }

    @Test func aWrongSecretFailsAtOnceNamingTheCauseWithoutTheSecret() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        let secret = "wrong-secret-\(UUID().uuidString)"
        let storage = S3Storage(configuration: try moto.configuration(bucket: bucket, secret: secret))
        let error = try #require(throws: ImagePipeError.self) {
            try storage.put(StorageObject(key: "a.jpg", body: Data([1]), contentType: "image/jpeg"))
        }
        #expect(error.code == .storageRejected)
        #expect(!error.isTransient)
        #expect(error.reason.contains("SignatureDoesNotMatch (403): "), "\(error.reason)")
        #expect(!error.reason.contains(secret))
        #expect(!"\(storage.configuration.credentials)".contains(secret))
        #expect(!String(reflecting: storage.configuration).contains(secret))
        #expect(storage.httpStatistics.requests == 1, "authentication errors are not retried")
        #expect(try moto.object(bucket, "a.jpg") == nil)
    }

    @Test func aMissingBucketIsAPermanentError() throws {
        let moto = try MotoServer.signed()
        let storage = S3Storage(configuration: try moto.configuration(bucket: "no-such-bucket-here"))
        let error = try #require(throws: ImagePipeError.self) {
            try storage.put(StorageObject(key: "a.jpg", body: Data([1]), contentType: "image/jpeg"))
        }
        #expect(error.code == .storageRejected)
        #expect(error.reason.contains("NoSuchBucket (404)"))
    }

    @Test func keysThatWouldEscapeTheDestinationAreRefused() throws {
        let moto = try MotoServer.signed()
        let storage = S3Storage(configuration: try moto.configuration(bucket: "any-bucket"))
        for key in ["../x.jpg", "/x.jpg", "a//b.jpg"] {
            let error = try #require(throws: ImagePipeError.self) {
                try storage.put(StorageObject(key: key, body: Data([1]), contentType: "image/jpeg"))
            }
            #expect(error.code == .invalidKey)
        }
        #expect(storage.httpStatistics.requests == 0)
    }

    // MARK: Multipart

    @Test func aLargeObjectGoesUpInPartsAndReassemblesExactly() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        let storage = S3Storage(configuration: try moto.configuration(bucket: bucket, multipartThreshold: 5 << 20, partSize: 5 << 20))
        let body = Data.pattern(12 << 20, seed: 42)

        let stored = try storage.put(StorageObject(key: "big/original.tiff", body: body, contentType: "image/tiff", cacheControl: "no-cache"))

        #expect(stored.bytes == body.count)
        let info = try #require(try moto.object(bucket, "big/original.tiff"))
        #expect(info.size == body.count && info.sha256 == body.sha256)
        #expect(info.etag.hasSuffix("-3"), "three parts: 5 + 5 + 2 MiB")
        #expect(info.contentType == "image/tiff" && info.cacheControl == "no-cache")
        // Create, three parts, complete.
        #expect(storage.httpStatistics.requests == 5)
        #expect(try moto.pendingUploads(bucket).isEmpty)
    }

    @Test func anObjectAtTheThresholdGoesUpInOnePut() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        let storage = S3Storage(configuration: try moto.configuration(bucket: bucket, multipartThreshold: 5 << 20, partSize: 5 << 20))
        _ = try storage.put(StorageObject(key: "edge.png", body: .pattern(5 << 20), contentType: "image/png"))
        #expect(storage.httpStatistics.requests == 1)
        #expect(try moto.object(bucket, "edge.png")?.etag.contains("-") == false)
    }
}

import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Testing

/// What S3Storage records and reads back for the up-to-date and collision checks, against moto, checked with boto3.
@Suite(.offThePool) struct S3OriginTests {
    let origin = Origin(sha256: String(repeating: "ab", count: 32), source: "Été 2024/IMG 1+(2).jpg", width: 2048, height: 1365)

    @Test(arguments: [1_000, 9 << 20]) func theOriginTravelsAsUserMetadataOnSingleAndMultipartPuts(size: Int) throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        let storage = S3Storage(configuration: try moto.configuration(bucket: bucket, prefix: "web"))
        #expect(try storage.existing("k.jpg") == nil)
        _ = try storage.put(StorageObject(key: "k.jpg", body: .pattern(size), contentType: "image/jpeg", origin: origin))

        let info = try #require(try moto.object(bucket, "web/k.jpg"))
        #expect(info.metadata["imagepipe-sha256"] == origin.sha256, "boto3 reads the same metadata back")
        #expect(info.metadata["imagepipe-size"] == "2048x1365")
        let existing = try #require(try storage.existing("k.jpg"))
        #expect(existing.origin == origin, "the source name survives non-ASCII letters, '+' and parentheses")
        #expect(existing.bytes == size)
        #expect(existing.url == "\(moto.endpoint)/\(bucket)/web/k.jpg")

        try storage.delete("k.jpg")
        #expect(try moto.object(bucket, "web/k.jpg") == nil)
        #expect(try storage.existing("k.jpg") == nil)
    }

    @Test func theProbeNamesAMissingBucketRefusedCredentialsAndAnUnreachableEndpoint() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        try S3Storage(configuration: try moto.configuration(bucket: bucket)).probe()

        func probeError(_ configuration: S3Configuration) -> ImagePipeError? {
            do {
                try S3Storage(configuration: configuration).probe()
                return nil
            } catch {
                return error
            }
        }
        let missing = probeError(try moto.configuration(bucket: "nobucket"))
        #expect(missing?.code == .configuration)
        #expect(missing?.reason == "bucket s3://nobucket does not exist at \(moto.endpoint)")
        let refused = probeError(try moto.configuration(bucket: bucket, secret: "wrong"))
        #expect(refused?.reason.contains("access to bucket s3://\(bucket) is denied (403)") == true, "\(refused?.reason ?? "")")
        // A port nothing listens on: connections are refused at once, retried, then reported.
        var closed = try moto.configuration(bucket: bucket, endpoint: "http://127.0.0.1:9")
        closed.retry = .fast
        let unreachable = probeError(closed)
        #expect(unreachable?.code == .configuration)
        #expect(
            unreachable?.reason.hasPrefix("cannot reach bucket s3://\(bucket) at http://127.0.0.1:9: connection failed") == true,
            "\(unreachable?.reason ?? "")")
    }

    @Test(arguments: [1_000, 9 << 20]) func aNewKeyIsWrittenOnlyIfStillFreeSingleAndMultipart(size: Int) throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        let storage = S3Storage(configuration: try moto.configuration(bucket: bucket))
        func object(_ sha: Character, _ seed: UInt64) -> StorageObject {
            StorageObject(
                key: "k.jpg", body: .pattern(size, seed: seed), contentType: "image/jpeg",
                origin: Origin(sha256: String(repeating: sha, count: 64), source: "\(sha).jpg", variant: "large"), policy: .create)
        }
        _ = try storage.put(object("a", 1))
        // The same original written meanwhile by another worker: kept, reported in place.
        let same = try storage.put(object("a", 2))
        #expect(same.wasInPlace)
        #expect(try moto.object(bucket, "k.jpg")?.sha256 == Data.pattern(size, seed: 1).sha256)
        // Another original: refused, whatever the look-up found before.
        do {
            _ = try storage.put(object("b", 3))
            Issue.record("another original's object must not be replaced")
        } catch {
            #expect(error.code == .keyCollision && error.reason.contains("made from 'a.jpg'"), "\(error.reason)")
        }
        #expect(try moto.object(bucket, "k.jpg")?.sha256 == Data.pattern(size, seed: 1).sha256)
        #expect(try moto.pendingUploads(bucket).isEmpty, "a refused multipart upload is aborted")
    }
}

import Foundation
import ImagePipeTestSupport
import ImagePipe
import ImagePipeRemoteStorage
import Testing

/// SupabaseStorage against a local stand-in that checks the wire protocol (no Supabase server can
/// run here): method, path, headers and body of standard and resumable (TUS) uploads.
@Suite(.offThePool) struct SupabaseStorageTests {
    let key = "service-role-\(UUID().uuidString)"

    @Test func aStandardUploadCarriesEveryHeaderSupabaseNeeds() throws {
        let stub = try SupabaseStub(key: key)
        let storage = SupabaseStorage(configuration: try stub.configuration(bucket: "media", prefix: "site/v1"))
        let body = Fixtures.data("images/formats/tiny.png")

        let stored = try storage.put(
            StorageObject(
                key: "trip/a b.png", body: body, contentType: "image/png",
                cacheControl: "public, max-age=31536000, immutable"))

        #expect(
            stored
                == StoredObject(
                    key: "trip/a b.png",
                    url: "\(stub.url)/storage/v1/object/public/media/site/v1/trip/a%20b.png", bytes: body.count))
        let state = try stub.state()
        let object = try #require(state.objects["media/site/v1/trip/a b.png"])
        #expect(object["sha256"] as? String == body.sha256)
        #expect(object["content_type"] as? String == "image/png")
        #expect(object["cache_control"] as? String == "public, max-age=31536000, immutable")
        #expect(object["method"] as? String == "standard")
        let request = try #require(state.requests.first)
        #expect(request["method"] as? String == "POST")
        #expect(request["path"] as? String == "/storage/v1/object/media/site/v1/trip/a%20b.png")
        #expect((request["headers"] as? [String: String])?["x-upsert"] == "true")
        #expect(storage.location == "supabase://media/site/v1/")
    }

    @Test func aPublicBaseURLIsRecorded() throws {
        let stub = try SupabaseStub(key: key)
        let storage = SupabaseStorage(configuration: try stub.configuration(publicBaseURL: "https://img.example.com"))
        let stored = try storage.put(StorageObject(key: "x/y.webp", body: Data([1]), contentType: "image/webp"))
        #expect(stored.url == "https://img.example.com/x/y.webp")
    }

    @Test func aWrongKeyIsRejectedWithoutShowingTheKey() throws {
        let stub = try SupabaseStub(key: key)
        let wrong = "wrong-\(UUID().uuidString)"
        let storage = SupabaseStorage(configuration: try stub.configuration(key: wrong))
        let error = try #require(throws: ImagePipeError.self) {
            try storage.put(StorageObject(key: "a.jpg", body: Data([1]), contentType: "image/jpeg"))
        }
        #expect(error.code == .storageRejected)
        #expect(error.reason.contains("Unauthorized (403): Invalid Compact JWS"), "\(error.reason)")
        #expect(!error.reason.contains(wrong) && !error.reason.contains(key))
        #expect(!"\(storage.configuration)".contains(wrong))
        #expect(!String(reflecting: storage.configuration).contains(wrong))
        #expect(try stub.state().objects.isEmpty)
    }

    @Test func unavailableAnswersAreRetried() throws {
        let stub = try SupabaseStub(key: key, faults: ["post#1=503", "post#2=503"])
        let storage = SupabaseStorage(configuration: try stub.configuration())
        _ = try storage.put(StorageObject(key: "retry.jpg", body: Data([1, 2]), contentType: "image/jpeg"))
        #expect(try stub.state().requests.count == 3)
        #expect(try stub.state().objects["media/retry.jpg"] != nil)
    }

    @Test func aLargeObjectGoesThroughResumableChunksOfSixMiB() throws {
        let stub = try SupabaseStub(key: key)
        let storage = SupabaseStorage(configuration: try stub.configuration(prefix: "big"))
        let body = Data.pattern(13 << 20, seed: 11)

        _ = try storage.put(StorageObject(key: "pano.tiff", body: body, contentType: "image/tiff", cacheControl: "public, max-age=600"))

        let state = try stub.state()
        let object = try #require(state.objects["media/big/pano.tiff"])
        #expect(object["sha256"] as? String == body.sha256)
        #expect(object["method"] as? String == "tus")
        #expect(object["content_type"] as? String == "image/tiff")
        #expect(object["cache_control"] as? String == "600")
        let offsets = state.requests.filter { $0["method"] as? String == "PATCH" }
            .compactMap { ($0["headers"] as? [String: String])?["upload-offset"] }
        #expect(offsets == ["0", String(6 << 20), String(12 << 20)])
    }

    @Test func aChunkCutOffMidwayResumesFromWhereTheServerStands() throws {
        let stub = try SupabaseStub(key: key, faults: ["patch#2=cut"])
        let storage = SupabaseStorage(configuration: try stub.configuration())
        let body = Data.pattern(14 << 20, seed: 5)

        _ = try storage.put(StorageObject(key: "resumed.tiff", body: body, contentType: "image/tiff"))

        let state = try stub.state()
        #expect(state.objects["media/resumed.tiff"]?["sha256"] as? String == body.sha256)
        let methods = state.requests.compactMap { $0["method"] as? String }
        let offsets = state.requests.filter { $0["method"] as? String == "PATCH" }
            .compactMap { ($0["headers"] as? [String: String])?["upload-offset"] }
        // The cut chunk left half of its 6 MiB on the server: after asking (HEAD), the upload goes on
        // from 9 MiB, not 6. Depending on when libcurl notices the closed connection, it may first
        // resend the cut request itself, which the server refuses as stale (409).
        #expect(methods.first == "POST" && methods.last == "PATCH" && methods.dropLast().last == "HEAD", "\(methods)")
        #expect(offsets.first == "0" && offsets.last == String(9 << 20), "\(offsets)")
        #expect(offsets.dropFirst().dropLast().allSatisfy { $0 == String(6 << 20) }, "\(offsets)")
    }

    @Test func aNewKeyIsUploadedWithoutUpsertAndAnotherOriginalIsRefused() throws {
        let key = "service-\(UUID().uuidString)"
        let stub = try SupabaseStub(key: key)
        let storage = SupabaseStorage(configuration: try stub.configuration(key: key))
        func object(_ sha: Character) -> StorageObject {
            StorageObject(
                key: "k.jpg", body: Data("\(sha)".utf8), contentType: "image/jpeg",
                origin: Origin(sha256: String(repeating: sha, count: 64), source: "\(sha).jpg", variant: "large"), policy: .create)
        }
        _ = try storage.put(object("a"))
        #expect(try storage.put(object("a")).wasInPlace)
        do {
            _ = try storage.put(object("b"))
            Issue.record("another original's object must not be replaced")
        } catch {
            #expect(error.code == .keyCollision && error.reason.contains("made from 'a.jpg'"), "\(error.reason)")
        }
        let uploads = try stub.state().requests.filter { $0["method"] as? String == "POST" }
        #expect(uploads.allSatisfy { ($0["headers"] as? [String: String])?["x-upsert"] == "false" })
        #expect(try storage.existing("k.jpg")?.origin?.source == "a.jpg")
    }
}

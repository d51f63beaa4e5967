import Foundation
import ImagePipeTestSupport
import ImagePipe
import ImagePipeRemoteStorage
import Testing

/// SupabaseSourceRepository against the local stand-in, which checks the headers of every request
/// and answers the list API one folder level and one page at a time.
@Suite(.offThePool) struct SupabaseSourceTests {
    let key = "service-role-\(UUID().uuidString)"

    func location(_ key: String, bucket: String = "media") -> ObjectLocation {
        ObjectLocation(scheme: "supabase", bucket: bucket, key: key)
    }

    func readError(_ repository: SupabaseSourceRepository, _ key: String, maxBytes: Int = 1 << 20) -> ImagePipeError? {
        thrownError { () throws(ImagePipeError) in try repository.read(location(key), maxBytes: maxBytes) }
    }

    @Test func aFolderIsListedRecursivelyPageByPage() throws {
        let stub = try SupabaseStub(key: key)
        var expected: [String: String] = [:]
        for index in 0..<7 {
            let name = "photos/\(index % 2 == 0 ? "trip/" : "")\(index).jpg"
            expected[name] = try stub.seed(.pattern(100 + index, seed: UInt64(index)), key: name)
        }
        try stub.seed(.pattern(5), key: "photos/trip/deep/er/x.png")
        expected["photos/trip/deep/er/x.png"] = Digests.md5(Data.pattern(5)).hexString
        try stub.seed(.pattern(5), key: "photography/not-in-the-folder.jpg")
        let repository = SupabaseSourceRepository(configuration: try stub.configuration(listPageSize: 2))

        let listed = try repository.list(location("photos/"))

        #expect(Dictionary(uniqueKeysWithValues: listed.map { ($0.location.key, $0.etag ?? "") }) == expected)
        #expect(listed.first { $0.location.key == "photos/3.jpg" }?.bytes == 103)
        let listings = try stub.listings()
        // photos/ holds 3 files and the folder trip: two full pages, then an empty one says it ended;
        // trip/ holds 4 files and the folder deep (3 pages); then deep/ and er/. Each is asked for
        // with its trailing slash, the one form that can name a folder with an empty name.
        let pages = listings.map { "\($0["prefix"] as? String ?? "?")@\($0["offset"] as? Int ?? -1)" }
        #expect(
            pages.sorted()
                == [
                    "photos/trip/deep/er/@0", "photos/trip/deep/@0", "photos/trip/@0", "photos/trip/@2", "photos/trip/@4",
                    "photos/@0", "photos/@2", "photos/@4",
                ].sorted(), "\(pages)")
        #expect(listings.allSatisfy { $0["limit"] as? Int == 2 })
    }

    @Test func anObjectIsReadWithItsETagThroughTheAuthenticatedEndpoint() throws {
        let stub = try SupabaseStub(key: key)
        let body = Fixtures.data("images/formats/tiny.png")
        let etag = try stub.seed(body, key: "in/tiny a.png", contentType: "image/png")
        let repository = SupabaseSourceRepository(configuration: try stub.configuration())

        let fetched = try repository.read(location("in/tiny a.png"), maxBytes: 1 << 20)
        #expect(fetched.data == body && fetched.etag == etag)
        let info = try #require(try repository.info(location("in/tiny a.png")))
        #expect(info.bytes == body.count && info.etag == etag)
        #expect(try repository.info(location("in/none.png")) == nil)
        let paths = try stub.state().requests.compactMap { $0["path"] as? String }
        #expect(paths.contains("/storage/v1/object/authenticated/media/in/tiny%20a.png"), "\(paths)")
    }

    @Test func missingRefusedTooLargeAndUnavailableReads() throws {
        let stub = try SupabaseStub(key: key, faults: ["get#2=503", "get#3=503"])
        try stub.seed(.pattern(4000), key: "big.jpg")
        let repository = SupabaseSourceRepository(configuration: try stub.configuration())

        let missing = try #require(readError(repository, "none.jpg"))
        #expect(missing.code == .sourceNotFound, "\(missing)")
        #expect(missing.reason.hasPrefix("supabase://media/none.jpg does not exist"), "\(missing.reason)")

        // Two 503s, then the object: retried like an upload.
        #expect(try repository.read(location("big.jpg"), maxBytes: 1 << 20).data == .pattern(4000))

        let tooLarge = try #require(readError(repository, "big.jpg", maxBytes: 1000))
        #expect(tooLarge.code == .imageTooLarge)
        #expect(tooLarge.reason.hasPrefix("supabase://media/big.jpg is 4000 bytes, more than the 1000 bytes"), "\(tooLarge.reason)")

        let wrongKey = SupabaseSourceRepository(configuration: try stub.configuration(key: "wrong-\(UUID().uuidString)"))
        let forbidden = try #require(readError(wrongKey, "big.jpg"))
        #expect(forbidden.code == .sourceForbidden)
        #expect(forbidden.reason.contains("Unauthorized (403)") && !forbidden.reason.contains(key), "\(forbidden.reason)")
        let gets = try stub.state().requests.filter { ($0["path"] as? String)?.hasPrefix("/storage/v1/object/authenticated/") == true }
        #expect(gets.count == 6, "none, big ×3, big (too large), big (refused)")
    }

    @Test func aMissingBucketOrARefusedKeyIsAConfigurationError() throws {
        let stub = try SupabaseStub(key: key)
        let repository = SupabaseSourceRepository(configuration: try stub.configuration())
        let missing = try #require(thrownError { () throws(ImagePipeError) in try repository.list(location("", bucket: "nobucket")) })
        #expect(missing.code == .configuration)
        #expect(missing.reason == "bucket supabase://nobucket does not exist in \(stub.url)")
        let wrongKey = SupabaseSourceRepository(configuration: try stub.configuration(key: "wrong"))
        let refused = try #require(thrownError { () throws(ImagePipeError) in try wrongKey.list(location("photos/")) })
        #expect(refused.code == .configuration && refused.reason.contains("is denied"), "\(refused.reason)")
        #expect(try repository.list(location("")).isEmpty, "an empty bucket lists as empty")
    }
}

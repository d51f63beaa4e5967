// Answers a broken or hostile store could send: read as they are, in time and memory bounded by their size.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Testing

/// What the fuzzers found in the parsers of S3's and Supabase's answers (fixtures/fuzz/crashes/),
/// and the worst shapes of answers at their size limits.
@Suite(.offThePool) struct HostileAnswerTests {
    let folder = ObjectLocation(scheme: "s3", bucket: "media", key: "")

    @Test func aDeleteObjectsRefusalOfAKeyWhoseNameStartsWithACombiningMarkNamesItWithoutThePrefix() throws {
        // `web/` and a combining mark after it are one character: the prefix is taken off as bytes.
        let answer = "<DeleteResult><Error><Key>web/\u{301}x.jpg</Key><Code>AccessDenied</Code></Error></DeleteResult>"
        let failures = try S3Storage.deleteFailures(answer, bucket: "media", prefix: "web/")
        #expect(failures.map(\.key) == ["\u{301}x.jpg"])
        #expect(failures.first?.reason == "DeleteObjects refused s3://media/web/\u{301}x.jpg: AccessDenied")
        #expect(throws: ImagePipeError.self) { try S3Storage.deleteFailures("<html>busy</html>", bucket: "media", prefix: "web/") }
    }

    @Test func aSupabaseObjectInfoWithANegativeSizeGivesNone() {
        let info = SupabaseStorage.objectInfo(Data(#"{"size": -5, "etag": "\"e\"", "metadata": "none"}"#.utf8))
        #expect(SupabaseStorage.size(inObjectInfo: info) == nil)
        #expect(SupabaseStorage.existingObject(info: info, url: "u").bytes == 0)
        #expect(SupabaseStorage.removedNames(Data(#"[{"name": "web/a.jpg"}, {"name": 7}]"#.utf8)) == ["web/a.jpg"])
        #expect(SupabaseStorage.removedNames(Data("{}".utf8)) == nil)
    }

    @Test func aKeyThatStartsWithAByteOrderMarkKeepsIt() {
        // Foundation's percent-decoding dropped it: the listing named another object, `a.jpg`.
        #expect(S3SourceRepository.urlDecoded("%EF%BB%BFa.jpg") == "\u{FEFF}a.jpg")
        let page = try? S3SourceRepository.listingPage(
            "<ListBucketResult><Contents><Key>%EF%BB%BFa+b.jpg</Key></Contents></ListBucketResult>", in: folder)
        #expect(page?.objects.map(\.location.key) == ["\u{FEFF}a b.jpg"])
    }

    /// A 200 that is no listing (a proxy's login page, an empty body, another operation's answer)
    /// read as a page would be a folder holding nothing: every output an orphan to prune.
    @Test(
        arguments: [
            ("", "an empty answer"), ("<html><body>Sign in to continue</body></html>", "'<html><body>Sign in to continue</body></html>'"),
            ("<?xml version=\"1.0\"?><DeleteResult></DeleteResult>", "'<?xml version=\"1.0\"?><DeleteResult></DeleteResult>'"),
        ])
    func anAnswerWithoutAListBucketResultIsRefused(_ body: String, _ shown: String) throws {
        let folder = ObjectLocation(scheme: "s3", bucket: "media", key: "orig/")
        let error = try #require(thrownError { () throws(ImagePipeError) in try S3SourceRepository.listingPage(body, in: folder) })
        #expect(error.code == .configuration)
        #expect(error.reason == "cannot list s3://media/orig/: the answer is no ListObjectsV2 result (no <ListBucketResult>): \(shown)")
    }

    @Test func anEmptyListingIsNoError() throws {
        let empty = String(decoding: Fixtures.data("fuzz/s3-listing/list-empty.xml"), as: UTF8.self)
        let page = try S3SourceRepository.listingPage(empty, in: ObjectLocation(scheme: "s3", bucket: "media", key: "nothing/"))
        #expect(page.objects.isEmpty && !page.isTruncated)
    }

    @Test(
        arguments: [
            ("a%2Bb+c%2F%C3%A9", "a+b c/é"), ("%", nil), ("%4", nil), ("%zz", nil), ("%C3", nil), ("%00", "\u{0}"), ("", ""),
        ] as [(String, String?)])
    func keysAreDecodedAsListingsEncodeThem(_ encoded: String, _ key: String?) {
        #expect(S3SourceRepository.urlDecoded(encoded) == key)
    }

    @Test func anElementThatStartsWithACombiningMarkIsFound() {
        // As characters, `>` and the mark after it are one, so the tag was not found.
        let body = "<Error><Code>NoSuchKey</Code><Message>\u{301}é missing</Message></Error>"
        #expect(XMLText.first("Message", in: body) == "\u{301}é missing")
        #expect(XMLText.first("Code", in: "<Code>\u{301}</Code>") == "\u{301}")
    }

    @Test func referencesAreDecodedScalarByScalar() {
        #expect(XMLText.unescape("a &lt;b&gt; &amp;amp; &#x263A;&#65;&#x110000;&;&unknown; &") == "a <b> &amp; ☺A&#x110000;&;&unknown; &")
        // A `;` more than 10 scalars after the `&` ends no reference, as before.
        #expect(XMLText.unescape("&#000000065;") == "&#000000065;")
        #expect(XMLText.unescape("&#00000065;") == "A")
    }

    @Test func anAnswerOfAmpersandsIsDecodedInTimeLinearInItsLength() {
        // Every `&` searched the rest of the text for a `;`: 1 MiB of them took hours.
        let text = String(repeating: "&", count: 1 << 20)
        let elapsed = ContinuousClock().measure { #expect(XMLText.unescape(text) == text) }
        #expect(elapsed < .seconds(20), "\(elapsed)")
    }
}

/// Listings from a store that answers too much or never ends (Support/python/hostile_store.py): each
/// page is held only up to the client's answer limit (4 MiB), and a listing that would loop stops.
@Suite(.offThePool) struct HostileListingTests {
    let store: HelperProcess

    init() throws {
        store = try HelperProcess("hostile_store.py")
    }

    func listingError(_ bucket: String, maxListedEntries: Int = ListingBound.defaultMaxEntries) throws -> ImagePipeError? {
        var configuration = S3Configuration(
            destination: try RemoteDestination(bucket: "out", prefix: ""), region: "us-east-1",
            endpoint: try ServiceEndpoint(parsing: "http://127.0.0.1:\(store.port)", what: "endpoint"),
            credentials: AWSCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret"), retry: .fast)
        configuration.maxListedEntries = maxListedEntries
        let repository = S3SourceRepository(configuration: configuration)
        return thrownError { () throws(ImagePipeError) in try repository.list(ObjectLocation(scheme: "s3", bucket: bucket, key: "orig/")) }
    }

    @Test(arguments: ["huge-page", "huge-chunked"])
    func aListingPageLargerThanTheAnswerLimitIsRefused(_ bucket: String) throws {
        let error = try #require(try listingError(bucket), "a 5 MiB page must be refused")
        #expect(error.code == .configuration)
        #expect(error.reason.contains("the answer is longer than the 4194304 bytes accepted"), "\(error.reason)")
    }

    @Test func aContinuationTokenGivenTwiceStopsTheListing() throws {
        let error = try #require(try listingError("same-token"))
        #expect(error.reason == "listing s3://same-token/orig/ stopped: the store gave the continuation token 'again' a second time")
    }

    // The store ends the listing long past the bound: without the bound it would be listed to the end.
    @Test func aListingThatNeverEndsStopsAtTheBoundNamingIt() throws {
        // New tokens for ever, three objects a page: the bound stops it after the page that passes 10.
        let error = try #require(try listingError("endless", maxListedEntries: 10))
        #expect(error.code == .configuration)
        #expect(error.reason.hasPrefix("listing s3://endless/orig/ stopped: it holds more than 10 entries"), "\(error.reason)")
    }

    func supabaseListingError(_ bucket: String, maxListedEntries: Int = ListingBound.defaultMaxEntries) throws -> ImagePipeError? {
        var configuration = SupabaseConfiguration(
            projectURL: try ServiceEndpoint(parsing: "http://127.0.0.1:\(store.port)", what: "project"), key: "key",
            destination: try RemoteDestination(bucket: "out", prefix: ""), listPageSize: 4, retry: .fast)
        configuration.maxListedEntries = maxListedEntries
        let repository = SupabaseSourceRepository(configuration: configuration)
        return thrownError { () throws(ImagePipeError) in try repository.list(ObjectLocation(scheme: "supabase", bucket: bucket, key: "orig/")) }
    }

    // The store ends the listing long past the bound: without the bound it would be listed to the end.
    @Test func aSupabaseStoreThatIgnoresTheOffsetStopsTheListing() throws {
        let error = try #require(try supabaseListingError("same-page"))
        #expect(error.reason == "listing supabase://same-page/orig/ stopped: the store gave the same page of 'orig/' again at offset 4")
    }

    // A store whose empty-named folder holds itself (`orig//`, `orig///`, …) would have prefixes grow
    // for ever; any folder longer than a key is such a loop. The store stops nesting at 2,048 bytes:
    // without the bound the listing would end there, unsaid.
    @Test func aSupabaseFolderLongerThanAKeyStopsTheListing() throws {
        let error = try #require(try supabaseListingError("deep"))
        #expect(
            error.reason == "listing supabase://deep/orig/ stopped: the store named a folder longer than the 1024 bytes a key may have")
    }

    // The store ends the listing long past the bound: without the bound it would be listed to the end.
    @Test func aSupabaseListingThatNeverEndsStopsAtTheBound() throws {
        let error = try #require(try supabaseListingError("endless", maxListedEntries: 10))
        #expect(error.reason.hasPrefix("listing supabase://endless/orig/ stopped: it holds more than 10 entries"), "\(error.reason)")
    }
}

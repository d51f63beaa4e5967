// `imagepipe prune` on Supabase Storage (the stand-in): origins in user metadata, the list API paged, batch removals.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Testing

/// The real binary against the Supabase stand-in: outputs of a real batch, pruned.
@Suite(.offThePool) struct PruneSupabaseTests {
    let directory = TemporaryDirectory()
    let key = "service-\(UUID().uuidString)"
    static let small = "small=100x,webp,q70", big = "big=120x,jpeg,q80"

    @Test func outputsOfARemovedOriginalAndADroppedVariantGoInBatchesAndAForeignObjectStays() throws {
        let stub = try SupabaseStub(key: key)
        let environment = ["SUPABASE_URL": stub.url, "SUPABASE_SERVICE_ROLE_KEY": key]
        CommandRunner.copyFixture("images/formats/small-200x150.jpg", to: directory, as: "src/keep.jpg")
        CommandRunner.copyFixture("images/formats/small-400x300.jpg", to: directory, as: "src/trip/gone.jpg")
        let batch = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", "supabase://media/site", "--variant", Self.small, "--variant", Self.big, "--jobs", "1"],
            environment: environment)
        #expect(batch.status == 0, "\(batch.stderr)")
        try stub.seed(Data([1, 2, 3]), key: "site/foreign.jpg")
        try FileManager.default.removeItem(atPath: directory.url("src/trip/gone.jpg"))
        let before = try stub.state().objects.keys.sorted()
        #expect(before.count == 5)
        let arguments = ["prune", "supabase://media/site", "--sources", directory.url("src"), "--variant", Self.small, "--page-size", "2"]

        let dryRun = try CommandRunner.run(arguments, environment: environment)
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(
            dryRun.stdout.split(separator: "\n").map { String($0.prefix { $0 != ":" }) } == [
                "dropped-variant keep-big.jpg", "dropped-variant trip/gone-big.jpg", "orphaned trip/gone-small.webp",
            ], "\(dryRun.stdout)")
        #expect(
            dryRun.stderr.contains(
                "1 outputs kept, 3 to delete (orphaned: 1, changed: 0, dropped variant: 2), left alone (made from other sources: 0, foreign: 1)"))
        #expect(try stub.state().objects.keys.sorted() == before && stub.deletions().isEmpty, "a dry run deletes nothing")
        #expect(try stub.listings().allSatisfy { $0["limit"] as? Int == 2 }, "listed 2 entries a page")

        let deleted = try CommandRunner.run(arguments + ["--delete"], environment: environment)
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(try stub.deletions() == [2, 1], "two batch removals")
        #expect(try stub.state().objects.keys.sorted() == ["media/site/foreign.jpg", "media/site/keep-small.webp"])
    }

    /// Names a batch removal's answer leaves out are looked up: one still there is reported, and so
    /// is one whose look-up fails (not known to be gone), without losing those found before or after.
    @Test func everyNameNotConfirmedGoneIsReportedWhenALookUpFails() throws {
        let destination = try RemoteDestination(bucket: "media", prefix: "site")
        var looked: [String] = []
        let failures = SupabaseStorage.notRemoved(["a", "b", "c", "d", "e"], answered: ["site/a"], in: destination) {
            (key) throws(ImagePipeError) in
            looked.append(key)
            if key == "c" { throw ImagePipeError(.storageUnavailable, "info supabase://media/site/c: HTTP 503 (gave up after 3 attempts)") }
            return key == "b" || key == "e"
        }
        #expect(looked == ["b", "c", "d", "e"], "the removed one is not looked up, the rest all are")
        #expect(
            failures == [
                KeyFailure(key: "b", reason: "supabase://media/site/b was not removed (may the key delete it?)"),
                KeyFailure(
                    key: "c",
                    reason: "supabase://media/site/c may not have been removed: looking it up failed: "
                        + "info supabase://media/site/c: HTTP 503 (gave up after 3 attempts)"),
                KeyFailure(key: "e", reason: "supabase://media/site/e was not removed (may the key delete it?)"),
            ])
    }
}

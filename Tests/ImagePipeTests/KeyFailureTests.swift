// The batch removal loop S3 and Supabase share for `imagepipe prune`: which keys go together, and what is reported.
import ImagePipe
import Testing

/// ``KeyFailure/removingInBatches(_:of:_:)`` with a removal that records its calls: no store is
/// needed to see the batches and the failures gathered.
@Suite struct KeyFailureTests {
    @Test func keysGoInOrderInBatchesOfTheSizeTheLastOneShort() throws {
        var batches: [[String]] = []
        let failures = try KeyFailure.removingInBatches(["a", "b", "c", "d", "e"], of: 2) { (batch) throws(ImagePipeError) in
            batches.append(batch)
            return batch.filter { $0 == "b" || $0 == "e" }.map { KeyFailure(key: $0, reason: "refused") }
        }
        #expect(batches == [["a", "b"], ["c", "d"], ["e"]])
        #expect(failures.map(\.key) == ["b", "e"])
    }

    /// A batch that fails as a whole stops the rest, and its error still names what the batches
    /// before it did not remove: thrown alone, those would be reported nowhere.
    @Test func aBatchThatFailsKeepsTheFailuresOfTheBatchesBefore() throws {
        var batches: [[String]] = []
        let error = try #require(throws: ImagePipeError.self) {
            try KeyFailure.removingInBatches(["a", "b", "c", "d", "e", "f"], of: 2) { (batch) throws(ImagePipeError) in
                batches.append(batch)
                if batch.contains("e") { throw ImagePipeError(.storageUnavailable, "DeleteObjects of 2 keys: HTTP 503") }
                return batch.filter { $0 != "a" }.map { KeyFailure(key: $0, reason: "refused") }
            }
        }
        #expect(batches == [["a", "b"], ["c", "d"], ["e", "f"]], "no batch after the one that failed")
        #expect(error.code == .storageUnavailable)
        #expect(error.reason == "DeleteObjects of 2 keys: HTTP 503; the batches before it did not remove: b (refused); c (refused); d (refused)")
    }

    @Test func aFirstBatchThatFailsThrowsItsErrorAsItIs() throws {
        let thrown = ImagePipeError(.storageRejected, "DeleteObjects of 2 keys: AccessDenied")
        let error = try #require(throws: ImagePipeError.self) {
            try KeyFailure.removingInBatches(["a", "b", "c"], of: 2) { (_) throws(ImagePipeError) in throw thrown }
        }
        #expect(error == thrown)
    }

    @Test func noKeysMakeNoRequest() throws {
        var calls = 0
        let failures = try KeyFailure.removingInBatches([], of: 1000) { (_) throws(ImagePipeError) in
            calls += 1
            return []
        }
        #expect(calls == 0 && failures.isEmpty)
    }
}

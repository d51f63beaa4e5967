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

    @Test func noKeysMakeNoRequest() throws {
        var calls = 0
        let failures = try KeyFailure.removingInBatches([], of: 1000) { (_) throws(ImagePipeError) in
            calls += 1
            return []
        }
        #expect(calls == 0 && failures.isEmpty)
    }
}

// failed/NAME.error.json: the last attempt's result and the history before it, its summary the result's own.
import Foundation
import ImagePipe
@testable import ImagePipeQueue
import Testing

@Suite struct FailureRecordTests {
    @Test func theSummaryAtTheTopIsTheResultsOwnAndReadsBack() throws {
        let error = ImagePipeError(.corruptImage, "premature end of JPEG file")
        let result = JobResult(source: "burst/broken.jpg", status: .failed, error: error, attempts: 2)
        let history = [AttemptRecord(result)]
        let record = FailureRecord(history: history, result: result)
        let object = try #require(try JSONSerialization.jsonObject(with: record.encoded()) as? [String: Any])
        #expect(object["source"] as? String == "burst/broken.jpg")
        #expect(object["error"] as? String == "premature end of JPEG file")
        #expect(object["error_code"] as? String == "corrupt_image")
        #expect(object["attempts"] as? Int == 2)
        #expect(object["skip_code"] == nil)
        #expect(try JSONDecoder().decode(FailureRecord.self, from: record.encoded()) == record)
    }

    /// A delivery that is no image, filed in failed/ by an earlier version, failed no attempt: its
    /// record says why in the skip's words.
    @Test func aDeliveryThatIsNoImageSaysSoWithItsSkipCode() throws {
        let result = JobResult.skipped("notes.txt", .notAnImage, reason: "not an image: its first bytes match no format")
        let object = try #require(try JSONSerialization.jsonObject(with: FailureRecord(history: [], result: result).encoded()) as? [String: Any])
        #expect(object["skip_code"] as? String == "not_an_image")
        #expect(object["error"] as? String == "not an image: its first bytes match no format")
        #expect(object["error_code"] == nil)
    }
}

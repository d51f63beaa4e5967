// Crop positions through the real binary: a batch's cover variant keeps the subject, and a changed position makes it again.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

@Suite(.offThePool) struct CropCommandTests {
    let directory = TemporaryDirectory()

    func thumb() throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: directory.url("out/photo-t.jpg")))
    }

    /// A grey 1200x600 photo with its subject near the right edge: the centre crop misses it,
    /// `attention` keeps it, and the re-run with the new position makes the variant again.
    @Test func attentionKeepsTheSubjectAndAChangedPositionRemakesTheVariant() throws {
        directory.write("src/photo.png", try SubjectImage.png(width: 1200, height: 600, subjectAt: 1060, 255))
        let centre = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--variant", "t=200x200,jpeg,q85,cover",
        ])
        #expect(centre.status == 0, "\(centre.stderr)")
        #expect(try VipsProbe.colouredPixels(thumb()) == 0)

        let attention = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--variant", "t=200x200,jpeg,q85,cover,attention",
            "--manifest", "-",
        ])
        #expect(attention.status == 0, "\(attention.stderr)")
        let record = try JSONSerialization.jsonObject(with: Data(attention.stdout.utf8)) as! [String: Any]
        #expect(record["status"] as? String == "done", "\(attention.stdout)")
        let info = try VipsProbe.info(thumb())
        #expect(info.width == 200 && info.height == 200)
        #expect(try VipsProbe.colouredPixels(thumb()) > 600, "the subject is in the attention crop")

        let again = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--variant", "t=200x200,jpeg,q85,cover,attention",
            "--manifest", "-",
        ])
        #expect(again.status == 0, "\(again.stderr)")
        let unchanged = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as! [String: Any]
        #expect(unchanged["status"] as? String == "skipped", "the same position finds its output: \(again.stdout)")
    }

    @Test func aPositionWithoutCoverIsRefusedBeforeAnythingRuns() throws {
        directory.write("src/photo.png", try SubjectImage.png(width: 300, height: 200, subjectAt: 10, 10, side: 20))
        let output = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--variant", "t=200x200,jpeg,q85,attention",
        ])
        #expect(output.status == 2)
        #expect(output.stderr.contains("'t=200x200,jpeg,q85,attention'") && output.stderr.contains("needs cover"), "\(output.stderr)")
        #expect(directory.files(under: "out").isEmpty)
    }
}

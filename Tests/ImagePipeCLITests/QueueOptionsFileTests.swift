// A focal point delivered beside an original in a queue directory (`NAME.options.json`): the real binary and libvips decide the crop by it.
import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeTestSupport
import ImagePipeVipsTestSupport
import Testing

@Suite(.offThePool, .serialized) struct QueueOptionsFileTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-queue-options")
    var queue: String { directory.url("queue") }

    func deliver(_ bytes: Data, as name: String) {
        InboxDelivery.deliver(bytes, to: queue + "/inbox", as: name)
    }

    func workOff() throws {
        let run = try CommandRunner.run([
            "watch", queue, "--dest", directory.url("out"), "--variant", "t=200x200,png,cover,attention", "--jobs", "1",
            "--exit-when-empty", "--status-interval", "0",
        ])
        #expect(run.status == 0, "\(run.stderr)")
    }

    func colouredPixels(_ output: String) throws -> Int {
        try VipsProbe.colouredPixels(Data(contentsOf: URL(fileURLWithPath: directory.url("out/" + output))))
    }

    /// One photo, its subject near the right edge (see SubjectImage), delivered three times: with a
    /// point on the subject, with one far from it (which wins over the variant's `attention`, which
    /// would find the subject), and with one that is no point; plus options whose original never comes.
    @Test func theDeliveredFocalPointDecidesTheCropAndABadOneFailsItsJobAlone() throws {
        let bytes = try SubjectImage.png(width: 1200, height: 600, subjectAt: 1060, 255)
        for (name, options) in [("near.png", "[0.92, 0.5]"), ("far.png", "[0.05, 0.5]"), ("bad.png", "[1.5, 0.5]")] {
            deliver(Data(#"{"focus": \#(options)}"#.utf8), as: name + ".options.json")
            deliver(bytes, as: name)
        }
        deliver(Data(#"{"focus": [0.5, 0.5]}"#.utf8), as: "lonely.png.options.json")
        // The worker exits: the options left in the inbox are no job.
        try workOff()

        #expect(try colouredPixels("near-t.png") > 600)
        #expect(try colouredPixels("far-t.png") == 0, "the delivered point, not attention, placed the crop")
        #expect(directory.files(under: "queue/done") == ["far.png", "far.png.json", "near.png", "near.png.json"], "done jobs need no options")
        #expect(directory.files(under: "queue/failed") == ["bad.png", "bad.png.error.json", "bad.png.options.json"])
        let record = try JSONDecoder().decode(
            FailureRecord.self, from: Data(contentsOf: URL(fileURLWithPath: queue + "/failed/bad.png.error.json")))
        #expect(record.errorCode == .invalidJobOptions, "\(record)")
        #expect(record.error.hasPrefix("bad.png.options.json: ") && record.error.contains("[1.5,0.5]"), "\(record.error)")
        #expect(directory.files(under: "queue/inbox") == ["lonely.png.options.json"])

        let status = try CommandRunner.run(["queue", "status", queue])
        let lines = status.stdout.split(separator: "\n").map(String.init)
        for expected in ["waiting\t0", "done\t2", "failed\t1", "options_without_original\t1"] {
            #expect(lines.contains(expected), "\(expected) in\n\(status.stdout)")
        }
        #expect(lines.contains { $0.hasPrefix("bad.png\tfailed\t") && $0.contains("invalid_job_options: bad.png.options.json") })

        // Put right where it failed, sent back, and done with its point.
        directory.write("queue/failed/bad.png.options.json", #"{"focus": [0.92, 0.5]}"#)
        let retry = try CommandRunner.run(["retry", queue, "bad.png"])
        #expect(retry.status == 0 && retry.stdout.contains("failed/bad.png -> inbox/bad.png"), "\(retry)")
        #expect(directory.files(under: "queue/inbox") == ["bad.png", "bad.png.options.json", "lonely.png.options.json"])
        try workOff()
        #expect(try colouredPixels("bad-t.png") > 600)
        #expect(directory.files(under: "queue/failed").isEmpty)
    }
}

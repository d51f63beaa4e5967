import Foundation
import ImagePipeTestSupport
import Testing

/// Stores and queues are picked from what the command line names in one place each (StoreKind,
/// QueueDrivers): a scheme neither knows is refused by name, never taken for another store or for a
/// directory.
@Suite(.offThePool) struct StoreAndQueueChoiceTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-choice")

    @Test func aDestinationOfAnUnknownSchemeIsRefusedNamingIt() throws {
        directory.write("src/a.png", Fixtures.data("images/formats/tiny.png"))
        let output = try CommandRunner.run(["batch", directory.url("src"), "--dest", "gs://bucket/photos"])
        #expect(output.status == 2, "\(output.stderr)")
        #expect(output.stderr.contains("unsupported --dest scheme 'gs://' in 'gs://bucket/photos'"), "\(output.stderr)")
    }

    @Test func aQueueOfAnUnknownSchemeIsRefusedWithoutItsPassword() throws {
        let url = "mysql://worker:hunter2@db.example.com/jobs"
        // --exit-when-empty: were the URL taken for a directory again, the worker would end, not wait.
        for command in [["watch", url, "--dest", directory.url("out"), "--exit-when-empty"], ["queue", "status", url]] {
            let output = try CommandRunner.run(command, in: directory.path)
            #expect(output.status == 2, "\(command): \(output.stderr)")
            #expect(output.stderr.contains("unsupported queue scheme 'mysql://'"), "\(command): \(output.stderr)")
            #expect(!output.stderr.contains("hunter2"))
            #expect(!FileManager.default.fileExists(atPath: directory.url("mysql:")), "no queue directory made of the URL")
        }
        let enqueue = try CommandRunner.run(["enqueue", directory.url("queue"), "a.jpg"])
        #expect(enqueue.status == 2 && enqueue.stderr.contains("imagepipe enqueue does not apply to a queue directory"), "\(enqueue.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("queue")), "no queue directory made for a refused enqueue")
    }
}

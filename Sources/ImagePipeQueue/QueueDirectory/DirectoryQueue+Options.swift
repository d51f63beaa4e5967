// Reading a claimed job's options file, and failing the job at its claim when they cannot be used.
import Foundation
import ImagePipe
import Logging

extension DirectoryQueue {
    /// The options of the job claimed as `name`, from its options file in the claim area; nil when
    /// it came without one.
    func readOptions(of name: String) throws(ImagePipeError) -> QueuedJobOptions? {
        let file = JobOptionsFile.name(of: name)
        return try JobOptionsFile.read(area.pathOf(file), named: file)
    }

    /// Fails a claimed job for good without running it: its options file cannot be used, and
    /// trying again could not help. It goes to `failed/` with its record (`invalid_job_options`,
    /// one attempt) and its options file beside it, to be put right and sent back with
    /// `imagepipe retry`, as a PostgreSQL job with unusable options is discarded at its claim.
    func refuse(_ name: String, _ error: ImagePipeError) {
        logger.error("refused", metadata: ["source": "\(name)", "error": "\(error.reason)"])
        let result = JobResult(source: name, status: .failed, error: error, attempts: 1)
        let record = FailureRecord(history: [AttemptRecord(result)], result: result)
        // The loop never sees this job: a worker that notifies sends its notice as one taken over.
        let notice = configuration.takesOverNotices ? JobNotice(event: .discarded, job: name, result: result) : nil
        let job = ClaimArea.Finish(
            name, into: directory.failed, record: record.encoded(), suffix: ".error.json", keepingOptions: true, notice: notice)
        let settled = settled(name, area.finish([job])[0])
        if settled == .recorded, let notice { takeOver([notice]) }
    }
}

// Reading a claimed job's options file; a job whose options cannot be used is claimed with its refusal, for the worker to settle.
import Foundation
import ImagePipe

extension DirectoryQueue {
    /// The options of the job claimed as `name`, from its options file in the claim area; nil when
    /// it came without one.
    ///
    /// - Throws: `invalid_job_options` naming the file: the job is claimed refused, and the worker
    ///   fails it for good with its record (one attempt) into `failed/`, its options file beside it
    ///   (``discard(_:failure:result:notice:)`` keeps it), to be put right and sent back with
    ///   `imagepipe retry`, as a PostgreSQL job with unusable options fails at its claim.
    func readOptions(of name: String) throws(ImagePipeError) -> QueuedJobOptions? {
        let file = JobOptionsFile.name(of: name)
        return try JobOptionsFile.read(area.pathOf(file), named: file)
    }
}

// Moving settled jobs out of the claim area (done/ or failed/) in rounds, and forgetting them.
import Foundation
import ImagePipe
import Logging
import Synchronization

extension DirectoryQueue {
    /// Moves a settled job out of the claim area (done/ or failed/) in the next round of finishing
    /// jobs, its notice kept before its record, and forgets it.
    func finish(_ job: ClaimArea.Finish) async -> Settlement {
        settled(job.relative, await finishing.submit(job))
    }

    /// How a job's move out went, the job forgotten: one whose original or record could not be
    /// moved stays in the claim area and returns to the inbox when this worker restarts. Its notice,
    /// if kept, stays too: the move may have failed after the record was written; whoever takes the
    /// area over sends it if the record is there, and drops it if not.
    func settled(_ name: String, _ outcome: Result<String, ImagePipeError>) -> Settlement {
        defer { forget(name) }
        guard case .failure(let error) = outcome else { return .recorded }
        logger.error(
            "cannot finish a job; it stays claimed until this worker restarts", metadata: ["source": "\(name)", "error": "\(error.reason)"])
        return .unrecorded
    }

    func forget(_ name: String) {
        let again = state.withLock { state -> QueueDirectory.Entry? in
            state.claimed.remove(name)
            state.histories[name] = nil
            return state.busy.removeValue(forKey: name)
        }
        // A second delivery under the same name waited for this one to leave the claim area.
        if let again { enqueue([again]) }
    }
}

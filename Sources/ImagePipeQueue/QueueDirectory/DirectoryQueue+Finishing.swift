// Moving a settled job out of the claim area (done/ or failed/) and forgetting it.
import Foundation
import ImagePipe
import Logging
import Synchronization

extension DirectoryQueue {
    /// Moves a settled job out of the claim area (done/ or failed/), its notice kept first, and
    /// forgets it; a job whose original cannot be moved stays in the claim area (its notice is
    /// dropped: no record tells of it) and returns to the inbox when this worker restarts.
    @discardableResult
    func moveOutAndForget(_ name: String, _ notice: JobNotice?, _ move: () throws(ImagePipeError) -> String) -> Settlement {
        defer { forget(name) }
        do {
            if let notice { try area.keep(notice, for: name) }
            _ = try move()
            return .recorded
        } catch {
            // Its notice stays: the move may have failed after the record was written. Whoever takes
            // the area over sends it if the record is there, and drops it if not.
            logger.error(
                "cannot finish a job; it stays claimed until this worker restarts", metadata: ["source": "\(name)", "error": "\(error.reason)"])
            return .unrecorded
        }
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

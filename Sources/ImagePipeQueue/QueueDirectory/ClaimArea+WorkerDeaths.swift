// A job that workers keep dying with: set aside in failed/ as worker_crashed when a dead worker's area is taken over.
import Foundation
import ImagePipe
import Logging

extension ClaimArea {
    /// Moves a job found in the abandoned area at `areaPath` (whose lock the caller holds) to
    /// `failed/` as `worker_crashed`: its tally says `maxAttempts` or more workers died holding it.
    /// Its record says how many, and lists each death it keeps as an attempt; its options go beside
    /// it, and `imagepipe retry` sends both back for a new start.
    ///
    /// The move is a job's usual move out (``finish(_:in:of:sync:)``): a crash midway leaves the job
    /// here, its death already counted, and the next take-over sets it aside again, completing the
    /// same entry in `failed/`. With `notifying`, its `failed` notice is kept in this area before
    /// the record, as a worker keeps one, for the caller to take over once the record is written.
    ///
    /// - Returns: whether it is in `failed/` now; the reason it is not is logged.
    static func setAside(
        _ relative: String, in areaPath: String, worker: String, tally: AttemptTally, of queue: QueueDirectory, maxAttempts: Int,
        notifying: Bool, logger: Logger
    ) -> Bool {
        let record = workerCrashedRecord(relative, worker: worker, tally: tally, maxAttempts: maxAttempts)
        do throws(ImagePipeError) {
            let job = Finish(
                relative, into: queue.failed, record: record.encoded(), suffix: ".error.json", keepingOptions: true,
                notice: notifying ? JobNotice(event: .failed, job: relative, result: record.result) : nil)
            _ = try finish([job], in: areaPath, of: queue)[0].get()
        } catch {
            logger.error(
                "cannot set aside a job workers died holding; it stays in the dead worker's claim area",
                metadata: ["source": "\(relative)", "area": "\(worker)", "error": "\(error.reason)"])
            return false
        }
        logger.error(
            "set aside in failed/: workers died holding this job",
            metadata: [
                "source": "\(relative)", "error_code": "\(ImagePipeError.Code.workerCrashed)",
                "worker_deaths": .stringConvertible(tally.workerDeaths), "max_attempts": .stringConvertible(maxAttempts),
            ])
        return true
    }

    /// The `failed/` record of a job set aside: the reason names how many workers died holding it and
    /// the last one; each death kept is an attempt of the history, the last one final.
    static func workerCrashedRecord(_ relative: String, worker: String, tally: AttemptTally, maxAttempts: Int) -> FailureRecord {
        let deaths = tally.workerDeaths
        let reason =
            "\(deaths) \(deaths == 1 ? "worker" : "workers") died holding this job, the last \(worker) "
            + "(--max-attempts \(maxAttempts)): it is set aside rather than given to another"
        let first = deaths - tally.deaths.count + 1
        let history = tally.deaths.enumerated().map { index, death in
            AttemptRecord(
                attempt: first + index, error: "the worker \(death.worker) died holding the job", errorCode: .workerCrashed,
                transient: first + index < deaths, at: death.at)
        }
        let result = JobResult(source: relative, status: .failed, error: ImagePipeError(.workerCrashed, reason), attempts: deaths)
        return FailureRecord(history: history, result: result)
    }
}

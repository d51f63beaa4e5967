// The worker state machine's vocabulary: its lifecycle and limits, the jobs it holds, the events it takes and the actions it returns.
public import ImagePipe

extension WorkerStateMachine {
    /// Where the loop is in its life.
    public enum Lifecycle: Sendable, Equatable {
        /// The queue is being opened.
        case opening
        /// Claiming and running jobs.
        case running
        /// A graceful shutdown: no new claims; jobs in flight finish, retries go back at once.
        case draining
        /// Stopping at once: jobs in flight go back; results being recorded, and a claim under way,
        /// are waited for a little.
        case stoppingNow
        /// Finished: every job is settled or given back.
        case closed
    }

    /// Why the loop stops at once.
    public enum StopReason: Sendable, Equatable {
        /// Asked for (a second signal).
        case requested
        /// The task was cancelled: the service group's graceful-shutdown deadline passed.
        case cancelled
    }

    /// The loop's settings, from its configuration and its pipeline's capacity.
    public struct Limits: Sendable {
        /// Jobs that may hold pipeline room at once (the pipeline's room).
        public var room: Int
        /// Jobs held at once in all.
        public var holdLimit: Int
        /// Attempts and backoff.
        public var retry: RetryPolicy
        /// The first pause of claiming when the storage is full.
        public var fullStoragePause: Duration
        /// How long an idle loop waits before it asks the queue again.
        public var pollInterval: Duration
        /// Stop once nothing is held and nothing waits in the queue.
        public var exitWhenEmpty: Bool
        /// How long a stop at once waits for results being recorded.
        public var settlingGrace: Duration

        /// Creates limits.
        public init(
            room: Int, holdLimit: Int, retry: RetryPolicy = .init(), fullStoragePause: Duration = .seconds(5),
            pollInterval: Duration = .seconds(1), exitWhenEmpty: Bool = false, settlingGrace: Duration = .seconds(2)
        ) {
            self.room = max(1, room)
            self.holdLimit = max(self.room, holdLimit)
            self.retry = retry
            self.fullStoragePause = fullStoragePause
            self.pollInterval = pollInterval
            self.exitWhenEmpty = exitWhenEmpty
            self.settlingGrace = settlingGrace
        }
    }

    /// What a held job is doing.
    public enum Phase: Sendable, Equatable {
        /// In the pipeline.
        case running
        /// Its result is being recorded, as decided.
        case settling(Decision)
        /// Waiting for its next attempt, held by this worker.
        case waitingRetry(until: Instant)
    }

    /// One job this worker holds.
    public struct Held: Sendable, Equatable {
        public var claimed: ClaimedJob
        public var phase: Phase
        /// Its outputs were handed to the store and only wait to be made durable: it holds no
        /// pipeline room, only its claim, until a failed result says otherwise.
        public var handedOff = false
        /// A heartbeat found the claim taken by another worker: its result will be dropped.
        public var lost = false
        /// Someone asked to cancel it: its work stops at its next safe point, and unless it got
        /// done first, it is recorded cancelled.
        public var cancelRequested = false

        /// Whether it counts against the pipeline's room: all but a job handed off whose result
        /// (if any) did not fail.
        var holdsRoom: Bool {
            if case .waitingRetry = phase { return true }
            return !handedOff
        }

        /// Whether its result is being recorded.
        var isSettling: Bool {
            if case .settling = phase { true } else { false }
        }
    }

    /// What to do with a finished attempt.
    public enum Decision: Sendable, Equatable {
        /// Record the result.
        case complete
        /// Try again after the delay.
        case retry(after: Duration)
        /// Record the failure for good.
        case discard
        /// Give the job back unfinished: it failed for a reason that may pass while the worker stops.
        case release
        /// Record it cancelled: someone asked, and it stopped before it was done.
        case cancel
    }

    /// How a settlement went.
    public enum Settled: Sendable, Equatable {
        /// The outcome is recorded (done, skipped or failed for good).
        case recorded
        /// A completed job is recorded among the discarded ones (see ``Settlement/recordedDiscarded``).
        case recordedDiscarded
        /// The queue keeps the job and hands it out again after the delay, to any worker.
        case requeued
        /// This worker keeps the job and runs it again after the delay (a queue directory).
        case keptForRetry(after: Duration)
        /// Given back unfinished.
        case released
        /// The claim was no longer this worker's: nothing was recorded.
        case leaseLost
        /// Nothing could be recorded (the queue logged why); the job runs again once its claim lapses.
        case unrecorded
    }

    /// Something that happened.
    public enum Event: Sendable {
        /// The queue is open.
        case opened
        /// The queue has new work.
        case wake
        /// The pipeline has room again: a look, which says nothing about the queue.
        case roomReturned
        /// A time asked for with ``Action/wakeAt(_:)`` has come.
        case tick(Instant)
        /// A claim for `asked` jobs came back with these (each holding a pipeline place).
        case claimed([ClaimedJob], asked: Int)
        /// Retries handed over to run again found no pipeline place after all.
        case rerunDeferred([String])
        /// A job's outputs were handed to the store.
        case handedOff(String)
        /// A job's attempt ended.
        case finished(String, JobResult)
        /// A job withdrawn while it waited for its next stage ended without a result.
        case withdrawn(String)
        /// A settlement ended.
        case settled(String, Settled)
        /// Leases are due for renewal.
        case heartbeatDue
        /// A heartbeat found these claims taken by other workers.
        case leaseLost(Set<String>)
        /// A heartbeat found that someone asked to cancel these jobs.
        case cancelRequested(Set<String>)
        /// The queue said what is left in it (nil: unknown).
        case emptyChecked(QueueRemainder?)
        /// A graceful shutdown began.
        case gracefulShutdown
        /// Stop at once.
        case stopNow(StopReason)
    }

    /// Why jobs are given back.
    public enum ReleaseReason: Sendable, Equatable {
        /// A graceful shutdown gives back the jobs waiting for a retry.
        case waitingRetries
        /// Stopping at once gives back the jobs in flight.
        case unfinished(StopReason)
        /// Jobs claimed while stopping at once: given back with their pipeline places.
        case claimedWhileStopping
        /// A retry this worker would hold came back while it stops.
        case retryWhileStopping
        /// A graceful shutdown withdrew the job before it started its next stage.
        case withdrawn
    }

    /// Something worth one log line.
    public enum Note: Sendable, Equatable {
        /// Claiming pauses: the storage is full (`storage_full`) or cannot be reached (`storage_unavailable`).
        case paused(Duration, code: ImagePipeError.Code, error: String)
        /// Claiming resumed: the storage takes objects again.
        case resumed
        /// A heartbeat found this job's claim taken.
        case leaseLost(ClaimedJob)
        /// Someone asked to cancel this job: it stops at its next safe point.
        case cancelRequested(ClaimedJob)
        /// Nothing is held, due or possibly coming back: stopping (`exitWhenEmpty`); `later` jobs
        /// wait for a time past the horizon.
        case queueEmpty(later: Int)
        /// Nothing is held or due, but jobs other workers hold may come back (their claims have
        /// not shown to be alive yet): the worker waits for their leases before it stops.
        case awaitingOthers(Int)
        /// A graceful shutdown began.
        case draining
        /// A stop at once was asked for.
        case stoppingNow
    }

    /// What the loop must do.
    public enum Action: Sendable, Equatable {
        /// Reserve up to this many pipeline places, claim that many jobs, report ``Event/claimed(_:asked:)``.
        case claim(upTo: Int)
        /// Run claimed jobs in the places reserved for them.
        case submit([ClaimedJob])
        /// Run held retries again, each in a place reserved now; report those without one.
        case rerun([ClaimedJob])
        /// Settle an attempt, then report ``Event/settled(_:_:)``.
        case settle(ClaimedJob, Decision, JobResult)
        /// Give jobs back to the queue.
        case release([ClaimedJob], ReleaseReason)
        /// Renew these claims, then report the lost ones.
        case renew([ClaimedJob])
        /// Stop these jobs' work at their next safe point: their results are not wanted.
        case abandon([String])
        /// Give these jobs back if they have not started their next stage (reading or
        /// compressing); those that have run on. Each withdrawn one comes back as `withdrawn`.
        case withdraw([String])
        /// Ask the queue what is left (jobs due within this horizon, jobs that may come back),
        /// then report ``Event/emptyChecked(_:)``.
        case checkEmpty(dueWithin: Duration)
        /// Report ``Event/tick(_:)`` at this time unless something happens first.
        case wakeAt(Instant)
        /// Log this.
        case note(Note)
        /// Close the queue and return.
        case finish
    }
}

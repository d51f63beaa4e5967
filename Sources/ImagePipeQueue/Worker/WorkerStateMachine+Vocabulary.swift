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
        /// Every job is settled or given back; the notices still going out get the rest of the
        /// stop's time, and those still undelivered then are left to the queue's store.
        case notifying
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
        /// The pipeline's bounds (its room and hold limit), counted by their own rule
        /// (``Capacity/Limits/admits(working:held:)``).
        public var capacity: Capacity.Limits
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
        /// How many notices the notifier takes when the loop starts; nil when the worker does not
        /// notify (no notice is kept, none taken over).
        public var noticeRoom: Int?
        /// How long the notices still going out may take once every job is settled, counted from
        /// when a stop was asked for, or from the end when the loop ends by itself (`--shutdown-timeout`).
        public var noticeGrace: Duration

        /// Jobs that may hold pipeline room at once (the pipeline's room).
        public var room: Int { capacity.room }
        /// Jobs held at once in all.
        public var holdLimit: Int { capacity.holdLimit }

        /// Creates limits on the pipeline's capacity.
        public init(
            capacity: Capacity.Limits, retry: RetryPolicy = .init(), fullStoragePause: Duration = .seconds(5),
            pollInterval: Duration = .seconds(1), exitWhenEmpty: Bool = false, settlingGrace: Duration = .seconds(2),
            noticeRoom: Int? = nil, noticeGrace: Duration = .seconds(30)
        ) {
            self.capacity = capacity
            self.retry = retry
            self.fullStoragePause = fullStoragePause
            self.pollInterval = pollInterval
            self.exitWhenEmpty = exitWhenEmpty
            self.settlingGrace = settlingGrace
            self.noticeRoom = noticeRoom.map { max(0, $0) }
            self.noticeGrace = noticeGrace
        }

        /// Creates limits for a room and a hold limit of their own (a pipeline of one compression).
        public init(
            room: Int, holdLimit: Int, retry: RetryPolicy = .init(), fullStoragePause: Duration = .seconds(5),
            pollInterval: Duration = .seconds(1), exitWhenEmpty: Bool = false, settlingGrace: Duration = .seconds(2),
            noticeRoom: Int? = nil, noticeGrace: Duration = .seconds(30)
        ) {
            let room = max(1, room)
            self.init(
                capacity: Capacity.Limits(jobs: 1, uploads: 1, room: room, handedOff: max(0, holdLimit - room)), retry: retry,
                fullStoragePause: fullStoragePause, pollInterval: pollInterval, exitWhenEmpty: exitWhenEmpty,
                settlingGrace: settlingGrace, noticeRoom: noticeRoom, noticeGrace: noticeGrace)
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
        /// A job's outcome was recorded with this notice, which the queue keeps until it is forgotten.
        case noticeKept(JobNotice)
        /// The notifier took this notice (it had room, or its hand-over was withdrawn by a stop).
        case noticeAccepted(String)
        /// The notifier delivered this notice or gave it up for good, and has room for `room` now.
        case noticeSettled(String, room: Int)
        /// The store forgot the notices it was last told to (``Action/forgetNotices(_:)``).
        case noticesForgotten
        /// The queue's upkeep ran (it may have found notices of dead workers); the notifier has room for `noticeRoom`.
        case maintained(noticeRoom: Int)
        /// The store handed over these notices that stopped or dead workers left undelivered.
        case noticesTakenOver([JobNotice])
        /// The notifier had no room for these taken-over notices after all.
        case noticesRefused([String])
    }

    /// Why jobs are given back.
    public enum ReleaseReason: Sendable, Equatable {
        /// A graceful shutdown gives back the jobs waiting for a retry.
        case waitingRetries
        /// Stopping at once gives back the jobs in flight.
        case unfinished(StopReason)
        /// Jobs claimed while stopping at once: given back with their pipeline places.
        case claimedWhileStopping
        /// Jobs claimed by a claim that was under way when claiming paused: given back with their
        /// pipeline places.
        case claimedWhilePaused
        /// A retry this worker would hold came back while it stops.
        case retryWhileStopping
        /// A graceful shutdown withdrew the job before it started its next stage.
        case withdrawn

        /// Whether the jobs come straight from a claim, so the pipeline places reserved for them
        /// (the refused ones took none) go back with them.
        public var freshFromAClaim: Bool { self == .claimedWhileStopping || self == .claimedWhilePaused }
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
        /// The loop ends with this many notices undelivered: the queue keeps them for the next worker.
        case noticesLeft(Int)
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
        /// Hand this notice to the notifier, waiting for room, then report ``Event/noticeAccepted(_:)``;
        /// once it is delivered or given up, report ``Event/noticeSettled(_:room:)``.
        case sendNotice(JobNotice)
        /// Hand these taken-over notices to the notifier without waiting; report those it had no
        /// room for as ``Event/noticesRefused(_:)``, and each settled one as the others.
        case offerNotices([JobNotice])
        /// Ask the queue's store for at most this many notices stopped or dead workers left, then
        /// report ``Event/noticesTakenOver(_:)``.
        case takeOverNotices(limit: Int)
        /// Tell the store these notices are delivered or given up, in one call: it forgets them;
        /// then report ``Event/noticesForgotten``. One at a time: those settled meanwhile go in the next.
        case forgetNotices([String])
        /// Tell the store this worker is not sending these now: another worker, or this one at a
        /// later upkeep, may take them over.
        case leaveNotices([String])
        /// Hold the notices this worker is sending with the store for this long (the rest of a stop).
        case holdNotices(for: Duration)
        /// Log this.
        case note(Note)
        /// Close the queue and return.
        case finish
    }
}

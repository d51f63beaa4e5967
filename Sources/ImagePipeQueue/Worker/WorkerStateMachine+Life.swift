// The worker state machine's life as one enum: each part of it carries the state that applies there, and nothing else does.
import ImagePipe

extension WorkerStateMachine {
    /// Where the loop is in its life, with what only that part of it knows: how claims go while it
    /// runs, why and since when it drains, when a stop at once began, until when the last notices
    /// may go out.
    enum Life {
        /// The queue is being opened; with a notifier, the notices dead workers left are taken over
        /// before the first claim, so they go out first.
        case opening(takingOverNotices: Bool)
        /// Claiming and running jobs.
        case running(Running)
        /// No new claims; jobs in flight finish, retries go back at once.
        case draining(Draining)
        /// Jobs in flight went back; results being recorded, and a claim under way, are waited for a little.
        case stoppingNow(StoppingNow)
        /// Every job is settled or given back; the notices still going out get until `until`.
        case notifying(until: Instant)
        /// Finished.
        case closed

        /// The part of the life, without its state.
        var lifecycle: Lifecycle {
            switch self {
            case .opening: .opening
            case .running: .running
            case .draining: .draining
            case .stoppingNow: .stoppingNow
            case .notifying: .notifying
            case .closed: .closed
            }
        }

        /// When the claim under way started, if one is.
        var claimStartedAt: Instant? {
            switch self {
            case .running(let running): running.polling.claimSince
            case .draining(let draining): draining.claimSince
            case .stoppingNow(let stopping): stopping.claimSince
            case .opening, .notifying, .closed: nil
            }
        }
    }

    /// What a running loop knows of its queue and its store.
    struct Running {
        var polling = Polling.mayHaveMore
        /// Claiming pauses while the storage is full or cannot be reached.
        var fullStorage: FullStorage?
        /// Where the check for an empty queue stands (`exitWhenEmpty`).
        var emptyCheck = EmptyCheck()

        /// Whether claiming is paused at `now`.
        func isPaused(at now: Instant) -> Bool { fullStorage.map { now < $0.until } ?? false }
    }

    /// Whether the queue is worth asking now.
    enum Polling: Equatable {
        /// It may have more to give: claim when there is room.
        case mayHaveMore
        /// A claim is under way; `woken` when the queue said it had new work meanwhile: that claim
        /// may have looked before the work was there, so its coming back short says nothing.
        case claiming(since: Instant, woken: Bool)
        /// A claim came back short: asked again when the queue says it has new work, or a poll
        /// interval after.
        case shortClaim(at: Instant)

        var claimSince: Instant? {
            if case .claiming(let since, _) = self { since } else { nil }
        }
    }

    /// A pause of claiming, lengthened by each such failure in a row.
    struct FullStorage: Equatable {
        var streak: Int
        var until: Instant
    }

    /// The check for an empty queue: asked at most once per poll interval.
    struct EmptyCheck: Equatable {
        /// When it was last asked.
        var lastAsked: Instant?
        /// Whether an answer is awaited.
        var asking = false
        /// Whether the wait for jobs other workers hold was said (once).
        var awaitingOthers = false
    }

    /// Why a loop drains, and since when a stop was asked for.
    struct Draining {
        enum Reason: Equatable {
            /// A graceful shutdown: jobs a claim brings now go back at once, as those claimed and
            /// not started do. The notices still going out get the stop's time from `since`.
            case stopRequested(since: Instant)
            /// The queue is worked off (`exitWhenEmpty`): the notices get the stop's time from the end.
            case queueEmpty
        }

        var reason: Reason
        /// The claim under way when draining began, waited for.
        var claimSince: Instant?

        var stopRequestedAt: Instant? {
            if case .stopRequested(let since) = reason { since } else { nil }
        }
    }

    /// A stop at once.
    struct StoppingNow {
        /// When it began: settlements and a claim under way are waited for a grace from then.
        var since: Instant
        /// When a stop was first asked for (a graceful shutdown before it), for the notices' time.
        var stopRequestedAt: Instant
        var claimSince: Instant?
    }
}

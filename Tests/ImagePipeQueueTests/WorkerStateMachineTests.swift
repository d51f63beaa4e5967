import Foundation
import ImagePipe
import ImagePipeQueue
import Testing

/// The worker loop's decisions with plain values: events in, actions out, no I/O, no clock but the
/// instants handed in.
@Suite struct WorkerStateMachineTests {
    typealias Machine = WorkerStateMachine
    let t0 = ContinuousClock.now

    func machine(
        room: Int = 4, holdLimit: Int = 12, retry: RetryPolicy = .init(maxAttempts: 3, baseDelay: .seconds(10), maxDelay: .seconds(10)),
        exitWhenEmpty: Bool = false
    ) -> Machine {
        Machine(
            limits: .init(
                room: room, holdLimit: holdLimit, retry: retry, fullStoragePause: .seconds(5), pollInterval: .seconds(1),
                exitWhenEmpty: exitWhenEmpty),
            now: t0)
    }

    func job(_ id: String, attempt: Int = 1) -> ClaimedJob {
        ClaimedJob(id: id, job: Job(path: "/queue/" + id, relativePath: id, attempt: attempt))
    }

    func jobs(_ ids: ClosedRange<Int>) -> [ClaimedJob] { ids.map { job("\($0)") } }

    func done(_ id: String) -> JobResult { JobResult(source: id, status: .done) }

    func failed(_ id: String, _ code: ImagePipeError.Code, _ reason: String = "it failed") -> JobResult {
        JobResult(source: id, status: .failed, error: ImagePipeError(code, reason))
    }

    /// The claim among `actions`, if there is one.
    func claim(_ actions: [Machine.Action]) -> Int? {
        for case .claim(let count) in actions { return count }
        return nil
    }

    func wakeAt(_ actions: [Machine.Action]) -> ContinuousClock.Instant? {
        for case .wakeAt(let instant) in actions { return instant }
        return nil
    }

    /// Opens the machine and hands it the claimed jobs, as the loop does.
    func running(_ machine: inout Machine, claiming ids: ClosedRange<Int>?, available: Int = 100) {
        let opened = machine.handle(.opened, now: t0, available: available)
        guard let ids, let count = claim(opened) else { return }
        let claimed = Array(jobs(ids).prefix(count))
        _ = machine.handle(.claimed(claimed, asked: count), now: t0, available: available - claimed.count)
    }

    // MARK: - Claiming

    @Test func anOpenedLoopClaimsWhatItsRoomAndThePipelineAllow() {
        var wide = machine()
        #expect(claim(wide.handle(.opened, now: t0, available: 100)) == 4)
        var narrow = machine()
        #expect(claim(narrow.handle(.opened, now: t0, available: 2)) == 2, "a pipeline shared with another worker has less")
        var none = machine()
        #expect(claim(none.handle(.opened, now: t0, available: 0)) == nil)
        #expect(claim(none.handle(.roomReturned, now: t0, available: 3)) == 3, "room given back wakes the loop, which claims then")
    }

    @Test func claimedJobsAreSubmittedAndOneClaimRunsAtATime() {
        var machine = machine()
        #expect(claim(machine.handle(.opened, now: t0, available: 100)) == 4)
        #expect(claim(machine.handle(.wake, now: t0, available: 100)) == nil, "a claim is in flight")
        let actions = machine.handle(.claimed(jobs(1...4), asked: 4), now: t0, available: 96)
        #expect(actions.contains(.submit(jobs(1...4))))
        #expect(machine.held.count == 4 && machine.inFlight == 4)
    }

    @Test func claimsRefillInBatchesOfHalfTheRoom() {
        var machine = machine(room: 4)
        running(&machine, claiming: 1...4)
        _ = machine.handle(.finished("1", done("1")), now: t0, available: 100)
        #expect(claim(machine.handle(.settled("1", .recorded), now: t0, available: 100)) == nil, "still more than half the room working")
        _ = machine.handle(.finished("2", done("2")), now: t0, available: 100)
        // Two settled: two working, half the room: the free places are claimed at once.
        #expect(claim(machine.handle(.settled("2", .recorded), now: t0, available: 100)) == 2)
        #expect(machine.done == 2)
    }

    /// Answers every claim among `actions` (and those that follow) with new jobs, handed off at once
    /// when `handingOff`, until the machine claims no more.
    func answerClaims(_ machine: inout Machine, _ actions: [Machine.Action], next: inout Int, handingOff: Bool) {
        var pending = actions
        while let count = claim(pending) {
            let claimed = jobs(next...(next + count - 1))
            next += count
            pending = machine.handle(.claimed(claimed, asked: count), now: t0, available: 100)
            guard handingOff else { continue }
            for job in claimed { pending += machine.handle(.handedOff(job.id), now: t0, available: 100) }
        }
    }

    @Test func handedOffJobsCountOnlyAgainstTheHoldLimit() {
        var machine = machine(room: 4, holdLimit: 12)
        var next = 1
        // Every job claimed is handed off at once: its outputs wait for the store's fsyncs.
        answerClaims(&machine, machine.handle(.opened, now: t0, available: 100), next: &next, handingOff: true)
        #expect(machine.held.count == 12, "exactly the hold limit, three times the room")
        #expect(machine.room(now: t0) == 0)
        #expect(claim(machine.handle(.wake, now: t0, available: 100)) == nil)
        // One fails after its hand-off (its fsync): it counts against the room again at once.
        let failing = machine.handle(.finished("1", failed("1", .storageUnavailable)), now: t0, available: 100)
        #expect(failing.contains { if case .settle(_, .retry, _) = $0 { true } else { false } })
        #expect(machine.held["1"]?.handedOff == false)
    }

    @Test func duringAnOutageTheWorkerHoldsNoMoreRetriesThanItsRoom() {
        var machine = machine(room: 4, holdLimit: 12, retry: .init(maxAttempts: 5, baseDelay: .seconds(60), maxDelay: .seconds(60)))
        var next = 1
        var pending = machine.handle(.opened, now: t0, available: 100)
        // Every job fails for a reason that may pass and is kept for a retry a minute later.
        for _ in 0..<20 {
            guard let count = claim(pending) else { break }
            let claimed = jobs(next...(next + count - 1))
            next += count
            pending = machine.handle(.claimed(claimed, asked: count), now: t0, available: 100)
            for job in claimed {
                let settle = machine.handle(.finished(job.id, failed(job.id, .storageUnavailable)), now: t0, available: 100)
                guard case .settle(_, .retry(let delay), _)? = settle.first(where: { if case .settle = $0 { true } else { false } }) else {
                    Issue.record("a transient failure is retried: \(settle)")
                    return
                }
                pending += machine.handle(.settled(job.id, .keptForRetry(after: delay)), now: t0, available: 100)
            }
            pending += machine.handle(.wake, now: t0, available: 100)
        }
        #expect(machine.retrying == 4 && machine.held.count == 4, "no more retries held than the room")
        #expect(next == 5 && claim(machine.handle(.wake, now: t0, available: 100)) == nil)
    }

    @Test func dueRetriesThatFindNoRoomWaitForItWithoutMakingTheLoopSpin() {
        var machine = machine(room: 4, holdLimit: 12, retry: .init(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(1)))
        running(&machine, claiming: 1...4)
        for id in ["1", "2", "3", "4"] {
            _ = machine.handle(.finished(id, failed(id, .storageUnavailable)), now: t0, available: 100)
            _ = machine.handle(.settled(id, .keptForRetry(after: .seconds(1))), now: t0, available: 100)
        }
        let later = t0 + .seconds(5)
        // The retries are due, but the pipeline (busy with another worker's jobs) admits one.
        let actions = machine.handle(.tick(later), now: later, available: 1)
        #expect(actions.contains(.rerun([job("1", attempt: 2)])))
        let next = try! #require(wakeAt(actions))
        #expect(next > later, "the due retries' past times do not set the next look: that would spin")
        // Room comes back: the next is run.
        #expect(machine.handle(.wake, now: later, available: 1).contains(.rerun([job("2", attempt: 2)])))
    }

    @Test func aRerunThatFindsNoPlaceAfterAllWaitsAgain() {
        var machine = machine()
        running(&machine, claiming: 1...1)
        _ = machine.handle(.finished("1", failed("1", .storageUnavailable)), now: t0, available: 100)
        _ = machine.handle(.settled("1", .keptForRetry(after: .seconds(1))), now: t0, available: 100)
        let later = t0 + .seconds(2)
        #expect(machine.handle(.tick(later), now: later, available: 1).contains(.rerun([job("1", attempt: 2)])))
        _ = machine.handle(.rerunDeferred(["1"]), now: later, available: 0)
        #expect(machine.retrying == 1 && machine.held["1"]?.claimed.job.attempt == 1)
        #expect(machine.handle(.wake, now: later, available: 1).contains(.rerun([job("1", attempt: 2)])))
    }

    @Test func aShortClaimIsNotRepeatedUntilTheQueueHasNewsOrThePollIntervalPassed() {
        var machine = machine()
        #expect(claim(machine.handle(.opened, now: t0, available: 100)) == 4)
        let short = machine.handle(.claimed(jobs(1...1), asked: 4), now: t0, available: 100)
        #expect(claim(short) == nil && wakeAt(short) == t0 + .seconds(1))
        #expect(claim(machine.handle(.handedOff("1"), now: t0, available: 100)) == nil)
        #expect(claim(machine.handle(.tick(t0 + .milliseconds(500)), now: t0 + .milliseconds(500), available: 100)) == nil)
        #expect(claim(machine.handle(.tick(t0 + .seconds(1)), now: t0 + .seconds(1), available: 100)) == 4, "the poll interval passed")
        _ = machine.handle(.claimed([], asked: 4), now: t0 + .seconds(1), available: 100)
        #expect(claim(machine.handle(.wake, now: t0 + .seconds(1), available: 100)) == 4, "the queue says it has new work")
    }

    // MARK: - Results

    @Test func eachResultLeadsToItsSettlement() {
        var machine = machine()
        running(&machine, claiming: 1...4)
        #expect(machine.handle(.finished("1", done("1")), now: t0, available: 100).contains(.settle(job("1"), .complete, done("1"))))
        let corrupt = failed("2", .corruptImage)
        #expect(machine.handle(.finished("2", corrupt), now: t0, available: 100).contains(.settle(job("2"), .discard, corrupt)))
        // A store that refuses is put right outside the job: retried like an outage.
        let refused = failed("3", .storageRejected)
        #expect(
            machine.handle(.finished("3", refused), now: t0, available: 100).contains { if case .settle(_, .retry, _) = $0 { true } else { false } })
        _ = machine.handle(.settled("1", .recorded), now: t0, available: 100)
        _ = machine.handle(.settled("2", .recorded), now: t0, available: 100)
        #expect(machine.done == 1 && machine.failed == 1)
    }

    @Test func theLastAttemptIsDiscarded() {
        var machine = machine(retry: .init(maxAttempts: 2, baseDelay: .seconds(1), maxDelay: .seconds(1)))
        _ = machine.handle(.opened, now: t0, available: 100)
        _ = machine.handle(.claimed([job("1", attempt: 2)], asked: 1), now: t0, available: 100)
        let result = failed("1", .storageUnavailable)
        #expect(machine.handle(.finished("1", result), now: t0, available: 100).contains(.settle(job("1", attempt: 2), .discard, result)))
    }

    @Test func aJobWhoseLeaseWasLostHasItsResultDropped() {
        var machine = machine()
        running(&machine, claiming: 1...2)
        let renew = machine.handle(.heartbeatDue, now: t0, available: 100)
        #expect(renew.contains(.renew(jobs(1...2))))
        let lost = machine.handle(.leaseLost(["1"]), now: t0, available: 100)
        #expect(lost.contains(.note(.leaseLost(job("1")))) && lost.contains(.abandon(["1"])), "its work stops at its next safe point")
        #expect(!machine.handle(.heartbeatDue, now: t0, available: 100).contains(.renew(jobs(1...2))), "a lost job is not renewed")
        let dropped = machine.handle(.finished("1", done("1")), now: t0, available: 100)
        #expect(!dropped.contains { if case .settle = $0 { true } else { false } })
        #expect(machine.held["1"] == nil && machine.held["2"] != nil)
        // A job being settled when the heartbeat answered was recorded in between: not lost.
        _ = machine.handle(.finished("2", done("2")), now: t0, available: 100)
        #expect(machine.handle(.leaseLost(["2"]), now: t0, available: 100).isEmpty == false)
        #expect(machine.held["2"]?.lost == false)
    }

    @Test func aJobAskedToCancelStopsAndIsRecordedCancelledUnlessItGotDoneFirst() {
        var machine = machine()
        running(&machine, claiming: 1...3)
        let asked = machine.handle(.cancelRequested(["1", "2", "9"]), now: t0, available: 100)
        #expect(asked.contains(.note(.cancelRequested(job("1")))) && asked.contains(.abandon(["1", "2"])), "\(asked)")
        #expect(machine.handle(.cancelRequested(["1"]), now: t0, available: 100).allSatisfy { if case .abandon = $0 { false } else { true } })
        #expect(machine.handle(.heartbeatDue, now: t0, available: 100).contains(.renew(jobs(1...3))), "its claim is still renewed")
        // Stopped at its safe point with a failure that would otherwise be retried: cancelled, not retried.
        let stopped = failed("1", .cancelled)
        #expect(machine.handle(.finished("1", stopped), now: t0, available: 100).contains(.settle(job("1"), .cancel, stopped)))
        let transient = failed("3", .storageUnavailable)
        if case .retry = machine.decide(transient, attempt: 1) {} else { Issue.record("a job not asked to cancel is retried") }
        // Done before it reached a safe point: its outputs are all stored, so it is done.
        #expect(machine.handle(.finished("2", done("2")), now: t0, available: 100).contains(.settle(job("2"), .complete, done("2"))))
        _ = machine.handle(.settled("1", .recorded), now: t0, available: 100)
        #expect(machine.cancelled == 1 && machine.failed == 0)
    }

    // MARK: - Stopping

    @Test func aGracefulShutdownReleasesTheRetriesAndWaitsForTheJobsInFlight() {
        var machine = machine()
        running(&machine, claiming: 1...3)
        _ = machine.handle(.finished("1", failed("1", .storageUnavailable)), now: t0, available: 100)
        _ = machine.handle(.settled("1", .keptForRetry(after: .seconds(10))), now: t0, available: 100)
        let shutdown = machine.handle(.gracefulShutdown, now: t0, available: 100)
        #expect(shutdown.contains(.note(.draining)) && shutdown.contains(.release([job("1")], .waitingRetries)))
        #expect(machine.lifecycle == .draining && claim(shutdown) == nil)
        // While stopping, a failure that may pass gives the job back.
        let transient = failed("2", .storageUnavailable)
        #expect(machine.handle(.finished("2", transient), now: t0, available: 100).contains(.settle(job("2"), .release, transient)))
        _ = machine.handle(.settled("2", .released), now: t0, available: 100)
        _ = machine.handle(.finished("3", done("3")), now: t0, available: 100)
        #expect(machine.handle(.settled("3", .recorded), now: t0, available: 100).last == .finish)
        #expect(machine.lifecycle == .closed)
    }

    @Test func aGracefulShutdownWithdrawsTheJobsNotStartedAndGivesBackThoseThatEndUnstarted() {
        var machine = machine()
        running(&machine, claiming: 1...4)
        _ = machine.handle(.handedOff("1"), now: t0, available: 100)
        _ = machine.handle(.leaseLost(["4"]), now: t0, available: 100)
        let shutdown = machine.handle(.gracefulShutdown, now: t0, available: 100)
        // Job 1 is storing and job 4 belongs to another worker now: only 2 and 3 may not have started.
        #expect(shutdown.contains(.withdraw(["2", "3"])), "\(shutdown)")
        // Job 2 had not started: it goes back, its attempt not counted by the queue.
        #expect(machine.handle(.withdrawn("2"), now: t0, available: 100) == [.release([job("2")], .withdrawn)])
        #expect(machine.held["2"] == nil)
        // Job 3 had started: it finishes and is recorded as usual.
        #expect(machine.handle(.finished("3", done("3")), now: t0, available: 100).contains(.settle(job("3"), .complete, done("3"))))
        // A withdrawn job whose lease was lost is only forgotten; one given back at once already, too.
        #expect(machine.handle(.withdrawn("4"), now: t0, available: 100).isEmpty)
        #expect(machine.handle(.withdrawn("2"), now: t0, available: 100).isEmpty)
        _ = machine.handle(.settled("3", .recorded), now: t0, available: 100)
        _ = machine.handle(.finished("1", done("1")), now: t0, available: 100)
        #expect(machine.handle(.settled("1", .recorded), now: t0, available: 100).last == .finish)
        #expect(machine.done == 2)
    }

    @Test func jobsAClaimBringsDuringAShutdownGoBackAndAJobAskedToCancelIsNotWithdrawn() {
        var machine = machine()
        running(&machine, claiming: 1...2)
        _ = machine.handle(.cancelRequested(["2"]), now: t0, available: 100)
        // A claim under way when the signal comes brings its jobs afterwards.
        let shutdown = machine.handle(.gracefulShutdown, now: t0, available: 100)
        #expect(shutdown.contains(.withdraw(["1"])), "job 2 reaches its safe point and is recorded cancelled: \(shutdown)")
        let late = machine.handle(.claimed(jobs(3...4), asked: 2), now: t0, available: 100)
        #expect(late.contains(.release(jobs(3...4), .claimedWhileStopping)), "\(late)")
        #expect(machine.held["3"] == nil && machine.held["4"] == nil)
    }

    @Test func aJobWithdrawnAfterAStopAtOnceIsNotGivenBackTwice() {
        var machine = machine()
        running(&machine, claiming: 1...2)
        _ = machine.handle(.gracefulShutdown, now: t0, available: 100)
        #expect(machine.handle(.stopNow(.requested), now: t0, available: 100).contains(.release(jobs(1...2), .unfinished(.requested))))
        #expect(!machine.handle(.withdrawn("1"), now: t0, available: 100).contains { if case .release = $0 { true } else { false } })
    }

    @Test func stoppingAtOnceGivesBackTheJobsInFlightAndWaitsALittleForThoseBeingRecorded() {
        var machine = machine()
        running(&machine, claiming: 1...3)
        _ = machine.handle(.finished("1", done("1")), now: t0, available: 100)
        let stop = machine.handle(.stopNow(.requested), now: t0, available: 100)
        #expect(stop.contains(.note(.stoppingNow)))
        #expect(stop.contains(.release(jobs(2...3), .unfinished(.requested))))
        #expect(wakeAt(stop) == t0 + .seconds(2) && !stop.contains(.finish), "job 1's record is waited for")
        // The jobs given back finish later: ignored.
        #expect(!machine.handle(.finished("2", done("2")), now: t0, available: 100).contains { if case .settle = $0 { true } else { false } })
        // The settlement never answers (a database gone): the grace passes.
        #expect(machine.handle(.tick(t0 + .seconds(2)), now: t0 + .seconds(2), available: 100) == [.finish])
    }

    @Test func theServiceGroupsCancellationIsAStopAtOnceForTheTimeout() {
        var machine = machine()
        running(&machine, claiming: 1...1)
        _ = machine.handle(.gracefulShutdown, now: t0, available: 100)
        let cancelled = machine.handle(.stopNow(.cancelled), now: t0, available: 100)
        #expect(cancelled == [.release([job("1")], .unfinished(.cancelled)), .finish])
    }

    @Test func jobsClaimedWhileStoppingAtOnceGoBackWithTheirPlaces() {
        var machine = machine()
        #expect(claim(machine.handle(.opened, now: t0, available: 100)) == 4)
        _ = machine.handle(.stopNow(.cancelled), now: t0, available: 100)
        #expect(machine.handle(.claimed(jobs(1...2), asked: 4), now: t0, available: 100).contains(.release(jobs(1...2), .claimedWhileStopping)))
    }

    @Test func aRetryDecidedBeforeTheShutdownIsGivenBackWhenItsSettlementEnds() {
        var machine = machine()
        running(&machine, claiming: 1...1)
        _ = machine.handle(.finished("1", failed("1", .storageUnavailable)), now: t0, available: 100)
        _ = machine.handle(.gracefulShutdown, now: t0, available: 100)
        let settled = machine.handle(.settled("1", .keptForRetry(after: .seconds(10))), now: t0, available: 100)
        #expect(settled == [.release([job("1")], .retryWhileStopping), .finish])
    }

    @Test func aStopBeforeTheQueueOpenedFinishesAtOnce() {
        var graceful = machine()
        #expect(graceful.handle(.gracefulShutdown, now: t0, available: 100) == [.note(.draining), .finish])
        var now = machine()
        #expect(now.handle(.stopNow(.cancelled), now: t0, available: 100) == [.finish])
    }

    // MARK: - Every event in every state

    /// Makers of machines in each lifecycle, holding a running job, a job being settled and a retry where they can.
    func machines() -> [(String, () -> Machine)] {
        func populated() -> Machine {
            var machine = machine()
            running(&machine, claiming: 1...3)
            _ = machine.handle(.finished("2", done("2")), now: t0, available: 100)
            _ = machine.handle(.finished("3", failed("3", .sourceChanged)), now: t0, available: 100)
            _ = machine.handle(.settled("3", .keptForRetry(after: .seconds(10))), now: t0, available: 100)
            return machine
        }
        func paused() -> Machine {
            var machine = populated()
            _ = machine.handle(.finished("1", failed("1", .storageFull)), now: t0, available: 100)
            return machine
        }
        func draining() -> Machine {
            var machine = populated()
            _ = machine.handle(.gracefulShutdown, now: t0, available: 100)
            return machine
        }
        func stopping() -> Machine {
            var machine = populated()
            _ = machine.handle(.stopNow(.requested), now: t0, available: 100)
            return machine
        }
        func closed() -> Machine {
            var machine = machine()
            _ = machine.handle(.stopNow(.cancelled), now: t0, available: 100)
            return machine
        }
        return [
            ("opening", { machine() }), ("running", populated), ("paused", paused), ("draining", draining), ("stopping now", stopping),
            ("closed", closed),
        ]
    }

    var events: [Machine.Event] {
        [
            .opened, .wake, .roomReturned, .tick(t0 + .seconds(1)), .claimed(jobs(7...8), asked: 2), .claimed([], asked: 2), .rerunDeferred(["3"]),
            .handedOff("1"), .withdrawn("1"), .finished("1", done("1")), .finished("1", failed("1", .storageUnavailable)), .finished("9", done("9")),
            .settled("2", .recorded), .settled("2", .unrecorded), .settled("9", .recorded), .heartbeatDue, .leaseLost(["1"]),
            .emptyChecked(QueueRemainder(due: 0)), .emptyChecked(QueueRemainder(due: 0, later: 2, unconfirmed: 1)), .gracefulShutdown,
            .stopNow(.requested), .stopNow(.cancelled),
        ]
    }

    @Test func everyEventInEveryStateKeepsTheRules() {
        for (state, make) in machines() {
            for event in events {
                var machine = make()
                let before = machine.lifecycle
                let actions = machine.handle(event, now: t0 + .seconds(1), available: 100)
                let context = "\(state), \(event)"
                // No claims, submissions or reruns unless running; claimed jobs are never lost.
                if before != .running && before != .opening || machine.lifecycle != .running {
                    #expect(claim(actions) == nil, "\(context)")
                    #expect(!actions.contains { if case .rerun = $0 { true } else { false } }, "\(context)")
                }
                // A paused machine claims nothing and gives back, for the pause, what a claim brings.
                if state == "paused" {
                    #expect(claim(actions) == nil, "\(context)")
                    if case .claimed(let claimed, _) = event, !claimed.isEmpty {
                        #expect(actions.contains(.release(claimed, .claimedWhilePaused)), "\(context): \(actions)")
                    }
                } else {
                    #expect(!actions.contains { if case .release(_, .claimedWhilePaused) = $0 { true } else { false } }, "\(context)")
                }
                if case .claimed(let claimed, _) = event, !claimed.isEmpty {
                    let handled =
                        actions.contains(.submit(claimed)) || actions.contains(.release(claimed, .claimedWhileStopping))
                        || actions.contains(.release(claimed, .claimedWhilePaused))
                    #expect(handled, "\(context): every claimed job is run or given back")
                }
                // The lifecycle only moves forward.
                let order: [Machine.Lifecycle] = [.opening, .running, .draining, .stoppingNow, .closed]
                #expect(order.firstIndex(of: machine.lifecycle)! >= order.firstIndex(of: before)!, "\(context)")
                // Finish comes once, last, and only when no job is running.
                if actions.contains(.finish) {
                    #expect(actions.last == .finish && before != .closed, "\(context)")
                    #expect(!machine.held.values.contains { $0.phase == .running }, "\(context): nothing left running")
                }
                // Held jobs never exceed the hold limit.
                #expect(machine.held.count <= machine.limits.holdLimit, "\(context)")
                // A closed machine does nothing but give back what reaches it.
                if before == .closed {
                    #expect(actions.allSatisfy { if case .release = $0 { true } else { false } }, "\(context): \(actions)")
                }
            }
        }
    }
}

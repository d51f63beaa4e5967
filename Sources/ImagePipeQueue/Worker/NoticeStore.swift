// Where a queue keeps the notices of recorded jobs until they are delivered: the one store a worker that notifies talks to.
public import ImagePipe

/// The notices a queue keeps with its jobs' records ("recorded, then notified", `--notify-url`):
/// a queue directory's outbox in each claim area, PostgreSQL's `imagepipe.notices` table.
///
/// A queue keeps a notice in the same step as the record it tells of (the `notice` a
/// ``JobQueue/complete(_:result:notice:)``, ``JobQueue/discard(_:failure:result:notice:)`` or
/// ``JobQueue/cancel(_:failure:result:notice:)`` is given), so a worker that dies right after leaves
/// it for the next. Everything after that is asked by the worker loop, as its state machine decides
/// (``WorkerStateMachine/Action``): forget a notice once delivered or given up, take over those of
/// workers that stopped or died, hold them through a stop, leave the rest for another worker.
///
/// Called from the loop's tasks on Swift's cooperative pool: a store whose work blocks runs it
/// through ``BlockingIO``.
public protocol NoticeStore: AnyObject, Sendable {
    /// At most `limit` notices that workers stopped or died with undelivered, now this worker's to
    /// send (each handed to one worker at a time).
    func takeOver(limit: Int) async -> [JobNotice]
    /// Forgets kept notices once they are delivered or given up for good. The loop calls it once at
    /// a time, with every notice settled since the last call; a store may forget later still.
    func forget(_ ids: [String]) async
    /// This worker is not sending these kept notices now (it stops with them undelivered, or its
    /// notifier had no room for them): another worker, or this one later, may take them over.
    func leave(_ ids: [String]) async
    /// Holds the kept notices this worker is sending for `duration` more (the rest of a stop), where
    /// a hold lapses unless renewed.
    func hold(for duration: Duration) async
}

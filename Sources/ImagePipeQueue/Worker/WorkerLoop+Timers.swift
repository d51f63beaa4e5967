// The loop's timers: the status line and queue upkeep end at graceful shutdown; heartbeats go on until the last job is settled.
import ImagePipe
import Logging
import ServiceLifecycle
import Synchronization

extension WorkerLoop {
    /// Starts the timers as tasks of the loop's group.
    func startTimers(_ group: inout DiscardingTaskGroup) {
        if configuration.statusInterval > .zero {
            group.addTask {
                try? await cancelWhenGracefulShutdown {
                    try await self.every(self.configuration.statusInterval) { await self.logStatus() }
                }
            }
        }
        group.addTask {
            try? await cancelWhenGracefulShutdown {
                try await self.every(self.queue.maintenanceInterval) {
                    await self.queue.maintain()
                    if let notifier = self.notifier { self.events.send(.maintained(noticeRoom: notifier.room)) }
                    self.snapshot.withLock { $0.statistics.upkeeps += 1 }
                }
            }
        }
        if let interval = queue.heartbeatInterval {
            // Until the loop's group is cancelled, after the last job is settled or given back.
            group.addTask { try? await self.every(interval) { self.events.send(.heartbeatDue) } }
        }
    }

    /// Runs `action` every `interval` on the loop's clock until cancelled.
    private func every(_ interval: Duration, _ action: @Sendable () async -> Void) async throws {
        while !Task.isCancelled {
            try await clock.sleep(for: interval)
            await action()
        }
    }

    /// Logs the status line: jobs waiting, in flight, retrying, done, failed, and the rate.
    func logStatus() async {
        let waiting = await queue.waitingCount()
        let statistics = self.statistics
        let now = clock.now
        let fields = status.withLock { $0.fields(waiting: waiting, statistics: statistics, at: now) }
        logger.info("status", metadata: fields)
    }
}

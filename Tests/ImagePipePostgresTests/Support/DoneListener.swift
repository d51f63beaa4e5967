import Foundation
@testable import ImagePipePostgres
import PostgresNIO
import Synchronization

/// Listens on `imagepipe_done` and keeps every job ID notified, in order.
final class DoneListener: Sendable {
    private final class IDs: Sendable {
        let value = Mutex<[Int]>([])
    }

    private let ids = IDs()
    private let task: Task<Void, Never>
    private let clientTask: Task<Void, Never>

    /// Starts listening; returns once the LISTEN is in place.
    init(_ location: PostgresLocation) async throws {
        let client = PostgresClient(configuration: try location.clientConfiguration())
        clientTask = Task { await client.run() }
        let (listening, ready) = AsyncStream<Void>.makeStream()
        let ids = self.ids
        task = Task {
            try? await client.withConnection { connection in
                try await connection.listen(on: "imagepipe_done") { notifications in
                    ready.yield()
                    for try await notification in notifications {
                        ids.value.withLock { $0.append(Int(notification.payload) ?? -1) }
                    }
                }
            }
        }
        for await _ in listening { break }
    }

    deinit {
        task.cancel()
        clientTask.cancel()
    }

    /// The IDs notified so far.
    var notified: [Int] { ids.value.withLock { $0 } }

    /// The IDs notified before now: a marker (ID 0, which no job has) is notified and waited for.
    /// PostgreSQL delivers notifications in the order their transactions committed, so nothing
    /// committed before the marker can still arrive after it.
    func notifiedSoFar(_ fixture: PostgresFixture) async throws -> [Int] {
        _ = try fixture.sql("SELECT pg_notify('imagepipe_done', '0')")
        _ = await fixture.eventually { self.notified.contains(0) }
        return notified.prefix { $0 != 0 }.map { $0 }
    }
}

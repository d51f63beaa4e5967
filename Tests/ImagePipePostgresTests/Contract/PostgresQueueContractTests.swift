// The queue contract on PostgreSQL: the server the tests start, each worker its own PostgresQueue.
import Foundation
import ImagePipe
import ImagePipePostgres
import ImagePipeQueue
import ImagePipeQueueContract
import ImagePipeTestSupport
import Testing

extension ContractQueue {
    /// A PostgreSQL queue on the server the tests start; each worker its own `PostgresQueue`.
    static let postgres = ContractQueue("PostgreSQL", cancelledPlace: "cancelled", countsDeathsAsAttempts: true) {
        let fixture = try PostgresFixture()
        return OpenedQueue(
            worker: { lease, notifies in
                try PostgresQueue(
                    location: fixture.location,
                    configuration: .init(lease: lease, pollInterval: .milliseconds(200), keepsNotices: notifies),
                    logger: .quiet)
            },
            driver: { PostgresDriver(location: fixture.location, logger: .quiet) },
            enqueue: { name, options in
                // As `imagepipe enqueue` adds it, making the schema on first use; options as a producer
                // calling `imagepipe.enqueue` gives them, unchecked.
                let path = fixture.directory.write("src/" + name, "bytes of \(name)")
                _ = try await QueueDatabase.run(fixture.location, logger: .quiet) { database throws(ImagePipeError) in
                    try await database.enqueue([path], unique: false)
                }
                if let options {
                    _ = try fixture.sql("UPDATE imagepipe.jobs SET options = '\(options)'::jsonb WHERE source = '\(path)'")
                }
            },
            places: {
                var places: [String: Int] = [:]
                for (state, count) in try fixture.states() {
                    let place = ["running": "held"][state] ?? state
                    places[place, default: 0] += count
                }
                // A held job is in no folder of a queue directory: only the other places are compared.
                places["held"] = nil
                return places
            },
            keepAlive: fixture.directory)
    }
}

/// Every rule of the queue contract, on PostgreSQL. Async and in-process: listed among the
/// Makefile's IN_PROCESS_SUITES.
@Suite(.requires(PostgresServer.tool))
struct PostgresQueueContractTests {
    @Test(arguments: QueueContract.rules)
    func holds(_ rule: QueueRule) async throws {
        try await rule.check(.postgres)
    }
}

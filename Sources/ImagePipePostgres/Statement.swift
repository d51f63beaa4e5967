// One statement of the queue's: SQL text parsed and planned each time, or prepared once per connection.
import Logging
import PostgresNIO

/// A statement and how its rows are decoded.
///
/// The statements of every job (claim, done) are prepared: PostgreSQL then parses and plans them
/// once per connection instead of once per call, which took a third of its CPU time per job. The
/// rest (upkeep, admin, migrations) run as text. Prepared statements need a session of their own,
/// as LISTEN does: a direct connection or a session pooler (see the README).
struct Statement<Row: Sendable>: Sendable {
    let run: @Sendable (PostgresClient, Logger) async throws -> [Row]

    /// SQL text with its bindings.
    static func text(_ query: PostgresQuery, _ decode: @escaping @Sendable (PostgresRow) throws -> Row) -> Statement {
        Statement { client, logger in
            var rows: [Row] = []
            for try await row in try await client.query(query, logger: logger) { rows.append(try decode(row)) }
            return rows
        }
    }

    /// A statement prepared on each connection the first time that connection runs it.
    static func prepared<Prepared: PostgresPreparedStatement>(_ statement: Prepared) -> Statement where Prepared.Row == Row {
        Statement { client, logger in
            var rows: [Row] = []
            for try await row in try await client.execute(statement, logger: logger) { rows.append(row) }
            return rows
        }
    }
}

// What went wrong talking to PostgreSQL: whether waiting helps, and a reason that holds no secret.
import Foundation
import ImagePipe
import PostgresNIO

/// A failed database call, classified.
///
/// PostgresNIO keeps the details out of its errors' descriptions (they may hold query data); this
/// picks out what an operator needs: the server's message and SQLSTATE, or that the connection failed.
struct DatabaseFailure: Error {
    /// Whether the connection failed or the server is going away or starting: waiting and
    /// reconnecting helps. A refused statement is not transient.
    let transient: Bool
    /// The configuration is wrong (bad password, no such database or role): retrying cannot help.
    let misconfigured: Bool
    /// No connection could be made at all (nothing listening, no route, a name that does not resolve):
    /// at the start of a command that does not wait for the database, the URL or the server's set-up is wrong.
    let unreachable: Bool
    /// For logs and errors.
    let reason: String

    init(_ error: any Error) {
        let error = Self.unwrapped(error)
        guard let error = error as? PSQLError else {
            transient = !(error is CancellationError)
            misconfigured = false
            unreachable = false
            reason = "\(error)"
            return
        }
        if error.code == .server, let info = error.serverInfo {
            let state = info[.sqlState] ?? ""
            let message = info[.message] ?? "server error"
            reason = "\(message) (SQLSTATE \(state))" + Self.hint(forState: state, role: Self.role(in: message))
            // 57P01-57P03: the server is shutting down or starting; 08: connection exceptions; 53300: too many connections.
            transient = state.hasPrefix("57P") || state.hasPrefix("08") || state == "53300"
            // 28: authorisation; 3D000: no such database; 42501: the role may not create the schema.
            misconfigured = state.hasPrefix("28") || state == "3D000" || state == "42501"
            unreachable = false
            return
        }
        unreachable = error.code == .connectionError
        if let setUp = Self.setUpReason(error.code) {
            transient = false
            misconfigured = true
            reason = setUp
            return
        }
        transient = true
        misconfigured = false
        reason =
            error.code == .connectionError ? Self.connectionReason(error.underlying) : "\(error.code)" + (error.underlying.map { ": \($0)" } ?? "")
    }

    /// What the driver's set-up errors mean and what to do about each; nil for the others. Its own
    /// names (`authMechanismRequiresPassword`) say nothing to someone setting up a queue for the
    /// first time, and a missing password is the first mistake there is to make.
    static func setUpReason(_ code: PSQLError.Code) -> String? {
        switch code {
        case .authMechanismRequiresPassword:
            "the server asks for a password and none was given: set PGPASSWORD, or put a line "
                + "HOST:PORT:DATABASE:ROLE:PASSWORD in ~/.pgpass (or the file PGPASSFILE names) readable by you alone, "
                + "or give it in the URL (postgres://ROLE:PASSWORD@HOST/DATABASE, which other users can see in the process list)"
        case .unsupportedAuthMechanism:
            "the server asks for an authentication method imagepipe does not speak (it speaks password, md5 and "
                + "scram-sha-256): give the role one of those in the server's pg_hba.conf"
        case .saslError:
            "SCRAM authentication failed: check the role and its password (in the URL, PGPASSWORD or ~/.pgpass)"
        case .sslUnsupported:
            "the server does not accept TLS, and the URL asks for it (sslmode=require or verify-full): "
                + "turn on ssl in the server's postgresql.conf, or use sslmode=prefer"
        default: nil
        }
    }

    /// A connection that failed, said as an operator reads it: NIO's description is a nest of
    /// wrapper types around the system's reason, which is what is kept.
    private static func connectionReason(_ underlying: (any Error)?) -> String {
        let text = underlying.map { "\($0)" } ?? ""
        let known = [
            "Connection refused", "Connection reset", "No route to host", "Network is unreachable", "timed out", "Name or service not known",
        ]
        guard let why = known.first(where: { text.lowercased().contains($0.lowercased()) }) else {
            return "cannot connect" + (text.isEmpty ? "" : ": \(text)")
        }
        return "cannot connect (\(why.lowercased())): is the server running, and listening at the URL's host and port?"
    }

    /// A transaction (the schema's migration) wraps what failed in it, and its description is a
    /// struct dump: the failure inside is what is classified and said.
    private static func unwrapped(_ error: any Error) -> any Error {
        guard let transaction = error as? PostgresTransactionError,
            let inner = transaction.beginError ?? transaction.closureError ?? transaction.commitError
        else { return error }
        return unwrapped(inner)
    }

    /// What to do about a setup error, after the server's own message (docs/queues.md, "Setting up
    /// PostgreSQL", has the statements).
    ///
    /// A wrong password and a missing role look alike from here (the server says `password
    /// authentication failed` for both, so as not to tell strangers which roles exist), and a role
    /// that exists is the likelier case after the set-up page: its fix comes first.
    static func hint(forState state: String, role: String? = nil) -> String {
        let role = role ?? "ROLE"
        return switch state {
        case "28000", "28P01":
            "; check the password in the URL, PGPASSWORD or ~/.pgpass. To give the role that password, as PostgreSQL's "
                + "superuser: psql -c \"ALTER ROLE \(role) PASSWORD '...'\" (or psql's \\password \(role)); "
                + "if the role does not exist: createuser --pwprompt \(role)"
        case "3D000": "; create it first: createdb --owner ROLE DATABASE"
        case "42501":
            "; the role needs to own the database, or GRANT CREATE ON DATABASE, the first time, to create the imagepipe schema"
        default: ""
        }
    }

    /// The role a server's authentication message names (`... for user "imagepipe"`), when it does.
    static func role(in message: String) -> String? {
        guard let start = message.range(of: "for user \""), let end = message[start.upperBound...].firstIndex(of: "\"") else { return nil }
        let role = message[start.upperBound..<end]
        // A name a shell and SQL take as written (SQL folds unquoted names to lower case); anything else stays ROLE, for the reader to fill in.
        guard !role.isEmpty, role.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else { return nil }
        return String(role)
    }

    /// The failure as imagepipe's error.
    var asError: ImagePipeError {
        ImagePipeError(misconfigured ? .configuration : .storageUnavailable, "PostgreSQL: \(reason)")
    }
}

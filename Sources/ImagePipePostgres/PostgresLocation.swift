// A PostgreSQL queue's address: postgres://USER@HOST:PORT/DB?queue=NAME&sslmode=MODE, printed without its password.
public import Foundation
public import ImagePipe
import PostgresNIO

/// Where a PostgreSQL queue lives, and which queue in it.
///
/// The password comes from the URL, else `PGPASSWORD`, else the password file (`PGPASSFILE` or
/// `~/.pgpass`), as libpq finds it. It is never part of ``description`` nor of any error, so the
/// location can be logged.
public struct PostgresLocation: Sendable, CustomStringConvertible {
    /// How the connection is encrypted.
    public enum SSLMode: String, Sendable, CaseIterable {
        /// Never.
        case disable
        /// When the server offers it, without checking its certificate (libpq's default).
        case prefer
        /// Always, without checking the certificate.
        case require
        /// Always, with the certificate checked against the system's roots and the host name.
        case verifyFull = "verify-full"
    }

    /// The role.
    public var user: String
    /// The server's host name or address, or a directory holding its Unix socket.
    public var host: String
    /// The server's port.
    public var port: Int
    /// The database.
    public var database: String
    /// The queue's name within the database (default `images`).
    public var queue: String
    /// Encryption.
    public var sslMode: SSLMode
    /// Never printed.
    let password: String?

    /// The default queue name.
    public static let defaultQueue = "images"

    /// Whether `text` is a PostgreSQL URL rather than a path.
    public static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Parses a URL; `environment` and `home` are the process's unless given (tests).
    ///
    /// - Throws: `configuration` naming what is wrong, never echoing the URL (it may hold a password).
    public init(
        parsing text: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        home: String = NSHomeDirectory()
    ) throws(ImagePipeError) {
        guard Self.isURL(text), let url = URLComponents(string: text) else {
            throw .configuration("not a PostgreSQL URL: expected postgres://USER@HOST:PORT/DATABASE?queue=NAME")
        }
        var parameters: [String: String] = [:]
        for item in url.queryItems ?? [] { parameters[item.name] = item.value ?? "" }
        for name in parameters.keys where !["queue", "sslmode", "host"].contains(name) {
            throw .configuration("unknown parameter '\(name)' in the PostgreSQL URL: only queue, sslmode and host are understood")
        }
        host = parameters["host"] ?? url.host.flatMap { $0.removingPercentEncoding } ?? "localhost"
        port = url.port ?? Int(environment["PGPORT"] ?? "") ?? 5432
        user = url.user.flatMap { $0.removingPercentEncoding } ?? environment["PGUSER"] ?? NSUserName()
        let path = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        database = path.isEmpty ? (environment["PGDATABASE"] ?? user) : path
        queue = parameters["queue"] ?? Self.defaultQueue
        guard queue.wholeMatch(of: /[A-Za-z0-9_.-]{1,63}/) != nil else {
            throw .configuration("the queue name must be 1 to 63 letters, digits, '_', '.' or '-'")
        }
        guard let mode = SSLMode(rawValue: parameters["sslmode"] ?? SSLMode.prefer.rawValue) else {
            throw .configuration("sslmode must be one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        sslMode = mode
        let database = self.database, host = self.host, port = self.port, user = self.user
        password =
            url.password.flatMap { $0.removingPercentEncoding } ?? environment["PGPASSWORD"]
            ?? PasswordFile(path: environment["PGPASSFILE"] ?? home + "/.pgpass")
            .password(host: host, port: port, database: database, user: user)
    }

    /// The URL without its password: safe for logs.
    public var description: String {
        let address = host.hasPrefix("/") ? "localhost/\(database)?host=\(host)&" : "\(host):\(port)/\(database)?"
        return "postgres://\(user)@\(address)queue=\(queue)" + (sslMode == .prefer ? "" : "&sslmode=\(sslMode.rawValue)")
    }

    /// The client settings for this location.
    func clientConfiguration() throws(ImagePipeError) -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if host.hasPrefix("/") {
            configuration = .init(unixSocketPath: host + "/.s.PGSQL.\(port)", username: user, password: password, database: database)
        } else {
            configuration = .init(host: host, port: port, username: user, password: password, database: database, tls: tls())
        }
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.maximumConnections = 6
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(10))
        return configuration
    }

    /// The settings of a single connection, for the first one: a pool would hide why it failed
    /// (a wrong password) behind its own retries.
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if host.hasPrefix("/") {
            configuration = .init(unixSocketPath: host + "/.s.PGSQL.\(port)", username: user, password: password, database: database)
        } else {
            let mode: PostgresConnection.Configuration.TLS =
                switch (sslMode, try tlsConfiguration().map(NIOSSLContext.init)) {
                case (.prefer, let context?): .prefer(context)
                case (.require, let context?), (.verifyFull, let context?): .require(context)
                default: .disable
                }
            configuration = .init(host: host, port: port, username: user, password: password, database: database, tls: mode)
        }
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }

    private func tls() -> PostgresClient.Configuration.TLS {
        switch (sslMode, tlsConfiguration()) {
        case (.prefer, let configuration?): .prefer(configuration)
        case (.require, let configuration?), (.verifyFull, let configuration?): .require(configuration)
        default: .disable
        }
    }

    /// TLS settings: the certificate checked only for verify-full; nil when TLS is off.
    private func tlsConfiguration() -> TLSConfiguration? {
        guard sslMode != .disable else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        if sslMode != .verifyFull { configuration.certificateVerification = .none }
        return configuration
    }
}

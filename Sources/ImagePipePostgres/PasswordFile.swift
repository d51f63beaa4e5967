// libpq's password file (~/.pgpass): host:port:database:user:password lines, `*` matching anything.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Finds a password in a libpq password file.
///
/// Like libpq, the file is ignored when others may read it (permissions wider than 0600), and the
/// first matching line wins; `\:` and `\\` stand for a colon and a backslash within a field.
struct PasswordFile {
    let path: String

    /// The password for a connection, or nil.
    func password(host: String, port: Int, database: String, user: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & 0o077 == 0,
            let text = try? String(contentsOfFile: path, encoding: .utf8)
        else { return nil }
        let wanted = [host.hasPrefix("/") ? "localhost" : host, String(port), database, user]
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) where !line.hasPrefix("#") {
            let fields = Self.fields(of: String(line))
            guard fields.count == 5 else { continue }
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// Splits a line at colons that are not escaped.
    static func fields(of line: String) -> [String] {
        var fields: [String] = [], current = "", escaped = false
        for character in line {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" {
                fields.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        fields.append(current)
        return fields
    }
}

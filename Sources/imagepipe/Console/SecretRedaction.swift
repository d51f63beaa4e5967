// The last guard before a log line is written: URL passwords and the secrets the environment holds are masked.
import Foundation
import Logging

/// Masks secrets in log text.
///
/// Secrets should never reach a log line in the first place (locations are described without
/// passwords, keys are never interpolated); this catches what slips through: a password in a URL's
/// user information (`postgres://user:PASSWORD@host`) and the values of the environment variables
/// that hold credentials, wherever they appear.
struct SecretRedaction: Sendable {
    /// What replaces a secret.
    static let mask = "***"

    /// Environment variables whose values are credentials.
    static let secretVariables = [
        "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "SUPABASE_KEY", "SUPABASE_SERVICE_ROLE_KEY", "PGPASSWORD", "IMAGEPIPE_NOTIFY_SECRET",
    ]

    /// The credential values to mask, longest first (so one that contains another is masked whole).
    private let secrets: [String]

    /// Reads the credentials to mask from `environment`; values shorter than 6 characters are left
    /// alone, as masking them would garble ordinary words.
    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        secrets = Self.secretVariables.compactMap { environment[$0] }.filter { $0.count >= 6 }.sorted { $0.count > $1.count }
    }

    /// `text` with every secret masked.
    func apply(_ text: String) -> String {
        var text = text
        if text.contains("://") { text = Self.maskURLPasswords(text) }
        for secret in secrets where text.contains(secret) {
            text = text.replacingOccurrences(of: secret, with: Self.mask)
        }
        return text
    }

    /// A metadata value with every secret masked; numbers and booleans are left as they are.
    func apply(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(apply(text))
        case .stringConvertible(let convertible):
            convertible is any Numeric || convertible is Bool ? value : .string(apply(convertible.description))
        case .dictionary(let dictionary): .dictionary(dictionary.mapValues(apply))
        case .array(let values): .array(values.map(apply))
        }
    }

    /// Replaces the password of every `scheme://user:password@` in `text`.
    static func maskURLPasswords(_ text: String) -> String {
        var output = ""
        var rest = Substring(text)
        while let separator = rest.range(of: "://") {
            output += rest[..<separator.upperBound]
            rest = rest[separator.upperBound...]
            // The authority ends at the first '/', '?', '#' or whitespace; user information ends at its last '@'.
            let authorityEnd = rest.firstIndex { "/?#".contains($0) || $0.isWhitespace } ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                output += authority[...colon] + mask
                rest = rest[at...]
            }
        }
        return output + rest
    }
}

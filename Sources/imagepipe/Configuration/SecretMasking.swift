// Hides secrets before configuration is printed: credential variables, and passwords inside URLs.
import Foundation

/// What `imagepipe config` may not print as it is.
enum SecretMasking {
    /// The environment variables imagepipe reads credentials and their settings from, in the order shown.
    static let credentialVariables = [
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
        "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3", "SUPABASE_URL", "SUPABASE_SERVICE_ROLE_KEY", "SUPABASE_KEY", "PGUSER", "PGPASSWORD", "PGPASSFILE",
        "IMAGEPIPE_NOTIFY_SECRET",
    ]

    /// Those whose value is itself a secret.
    static let secretVariables: Set<String> = [
        "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "SUPABASE_SERVICE_ROLE_KEY", "SUPABASE_KEY", "PGPASSWORD", "IMAGEPIPE_NOTIFY_SECRET",
    ]

    /// What a secret is shown as.
    static let mask = "********"

    /// `text` with the password of a URL's user information (`postgres://user:PASSWORD@host`) and
    /// any `password=` query parameter replaced by the mask.
    static func masked(_ text: String) -> String {
        guard let scheme = text.range(of: "://") else { return text }
        var result = String(text[..<scheme.upperBound])
        let rest = text[scheme.upperBound...]
        let authorityEnd = rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
            result += authority[...colon] + mask + authority[at...]
        } else {
            result += authority
        }
        result += maskedQueryPasswords(String(rest[authorityEnd...]))
        return result
    }

    /// `password=...` (and `sslpassword=...`) values in a query replaced by the mask.
    private static func maskedQueryPasswords(_ text: String) -> String {
        guard let query = text.firstIndex(of: "?") else { return text }
        let parameters = text[text.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false).map { parameter in
            guard let equals = parameter.firstIndex(of: "="), parameter[..<equals].lowercased().hasSuffix("password") else {
                return String(parameter)
            }
            return parameter[...equals] + mask
        }
        return text[...query] + parameters.joined(separator: "&")
    }
}

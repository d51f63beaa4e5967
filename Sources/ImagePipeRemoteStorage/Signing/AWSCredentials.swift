// An AWS access key pair (and session token) that never prints its secret parts.
import Foundation

/// The credentials requests are signed with.
///
/// The secret key and session token are kept out of `description`, `debugDescription` and
/// reflection, so interpolating or dumping a value that holds credentials cannot leak them.
public struct AWSCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The access key ID (an identifier, not a secret; it appears in every signed request).
    public let accessKeyID: String
    /// The secret access key.
    public let secretAccessKey: String
    /// The session token of temporary credentials.
    public let sessionToken: String?

    /// Creates credentials.
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken.flatMap { $0.isEmpty ? nil : $0 }
    }

    public var description: String {
        "AWSCredentials(accessKeyID: \(accessKeyID), secretAccessKey: <redacted>\(sessionToken == nil ? "" : ", sessionToken: <redacted>"))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["accessKeyID": accessKeyID, "secretAccessKey": "<redacted>"], displayStyle: .struct)
    }
}

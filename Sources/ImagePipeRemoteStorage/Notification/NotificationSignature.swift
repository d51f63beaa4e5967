// The X-Imagepipe-Signature header: HMAC-SHA256 over "TIMESTAMP.BODY" with the shared secret, as t=TIMESTAMP,v1=HEX.
public import Foundation
import ImagePipe

/// Signs a notification's body so its receiver can tell it came from this worker and was not
/// replayed long after: the timestamp is inside what is signed.
public struct NotificationSignature: Sendable {
    /// The header's name.
    public static let headerName = "X-Imagepipe-Signature"

    private let key: [UInt8]

    /// A signer with `secret` (the bytes of `IMAGEPIPE_NOTIFY_SECRET` as given).
    public init(secret: String) {
        key = Array(secret.utf8)
    }

    /// The header's value for `body` sent at `timestamp` (Unix seconds): `t=TIMESTAMP,v1=HEX`.
    public func header(body: Data, timestamp: Int) -> String {
        "t=\(timestamp),v1=" + digest(body: body, timestamp: timestamp).hexString
    }

    /// HMAC-SHA256 of `TIMESTAMP.BODY`, the exact bytes a receiver recomputes.
    public func digest(body: Data, timestamp: Int) -> [UInt8] {
        Digests.hmacSHA256(key: key, Array("\(timestamp).".utf8) + Array(body))
    }
}

// MD5, SHA-256 and HMAC-SHA256 through OpenSSL's libcrypto, for checksums and request signing.
import CLibCrypto
public import Foundation
import ImagePipe

/// The digests remote stores need, computed with libcrypto (already linked for libcurl's TLS).
public enum Digests {
    /// SHA-256 of `data`.
    public static func sha256(_ data: some ContiguousBytes) -> [UInt8] {
        SHA256Digest.hash(data).bytes
    }

    /// MD5 of `data`: only as the Content-MD5 integrity check S3 understands, never for security.
    public static func md5(_ data: some ContiguousBytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = data.withUnsafeBytes { buffer in
            EVP_Digest(buffer.baseAddress, buffer.count, &out, &length, EVP_md5(), nil)
        }
        precondition(ok == 1, "libcrypto could not compute MD5")
        return Array(out.prefix(Int(length)))
    }

    /// HMAC-SHA256 of `message` under `key`.
    public static func hmacSHA256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { keyBuffer in
            message.withUnsafeBytes { messageBuffer in
                HMAC(
                    EVP_sha256(), keyBuffer.baseAddress, Int32(keyBuffer.count),
                    messageBuffer.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBuffer.count, &out, &length)
            }
        }
        precondition(result != nil, "libcrypto could not compute HMAC-SHA256")
        return Array(out.prefix(Int(length)))
    }

    /// HMAC-SHA256 of a UTF-8 string under `key`.
    public static func hmacSHA256(key: [UInt8], _ message: String) -> [UInt8] {
        hmacSHA256(key: key, Array(message.utf8))
    }
}

// RFC 3986 percent-encoding as SigV4 and object URLs need it: one rule for signing and for the wire.
import Foundation

/// Percent-encoding where only the unreserved characters stay as they are.
///
/// Foundation's `addingPercentEncoding` keeps characters such as `+`, `(` and `!` that SigV4 wants
/// encoded, so the signed path and the path sent could disagree; one encoder used for both cannot.
public enum PercentEncoding {
    private static let hex = Array("0123456789ABCDEF".utf8)

    /// Encodes every byte of the UTF-8 form except `A-Z a-z 0-9 - . _ ~` (and `/` when `keepSlash`).
    public static func encode(_ text: String, keepSlash: Bool = false) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) || (keepSlash && byte == UInt8(ascii: "/")) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// An object key as a URL path: every segment encoded, the slashes kept.
    public static func encodePath(_ path: String) -> String {
        encode(path, keepSlash: true)
    }

    /// `base/KEY` for a `--public-base-url`, the key encoded as ``encodePath(_:)`` does: one rule for
    /// every destination, so an object's URL is the same whether a bucket or a served folder holds it.
    public static func url(base: String, key: String) -> String {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        return base + "/" + encodePath(key)
    }

    /// The text `%XX` escapes stand for, read as UTF-8; nil when an escape is malformed or the bytes
    /// are not UTF-8. Unlike Foundation's `removingPercentEncoding`, which drops a byte order mark at
    /// the start (`%EF%BB%BFa.jpg` came back as `a.jpg`, another object's key), every character is kept.
    public static func decode(_ text: String) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var rest = text.utf8[...]
        while let byte = rest.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = rest.popFirst().flatMap(hexValue), let low = rest.popFirst().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}

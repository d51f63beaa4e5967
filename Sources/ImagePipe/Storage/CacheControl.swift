// The Cache-Control an object is stored with: chosen by whether its key can ever hold other bytes, and read back to tell what caches were promised.
import Foundation

/// The Cache-Control values imagepipe stores with objects, and what one read back from a store says.
///
/// An object's URL is its key. A key made from the original's content (`{hash}`, `{sha256}`) can
/// never hold other bytes, so caches may keep it for good; a key made from the name holds the new
/// pictures of an edited photo, so caches must ask again before they show it.
public enum CacheControl {
    /// For keys that can never hold other bytes: kept a year, never asked for again.
    public static let immutable = "public, max-age=31536000, immutable"

    /// For keys that can hold other bytes (an edited photo under its name): caches keep the object
    /// but ask the store before each use (`no-cache` is "revalidate", not "do not store"), and the
    /// store answers `304 Not Modified` with no body while the ETag is unchanged. An edit shows on
    /// the next view; a lifetime above zero would let it show the old picture that long, which is
    /// what `--cache-control 'public, max-age=N'` is there for when that is acceptable.
    public static let revalidating = "public, no-cache"

    /// The value stored when `--cache-control` is not given: ``immutable`` for keys from the
    /// content, ``revalidating`` for keys that can change their bytes.
    public static func `default`(for template: KeyTemplate) -> String {
        template.usesHash ? immutable : revalidating
    }

    /// Whether `value` told caches they may keep the object for its whole lifetime without asking
    /// again (the `immutable` directive): replacing its bytes then leaves some visitors seeing the
    /// old picture, and nothing imagepipe can do reaches those caches.
    public static func isImmutable(_ value: String?) -> Bool {
        directives(value).contains { $0.name == "immutable" }
    }

    /// The `max-age` of `value` in seconds; 0 for `no-cache`, which asks caches to revalidate each
    /// time as `max-age=0` does (the one form Supabase's resumable uploads take); nil when it gives none.
    public static func maxAge(_ value: String?) -> Int? {
        let parsed = directives(value)
        if let maxAge = parsed.first(where: { $0.name == "max-age" })?.value.flatMap({ Int($0) }), maxAge >= 0 { return maxAge }
        return parsed.contains { $0.name == "no-cache" } ? 0 : nil
    }

    /// How long caches may keep an object stored with `value`, in words for a message.
    public static func lifetimeText(_ value: String?) -> String {
        guard let seconds = maxAge(value), seconds > 0 else { return "for as long as they keep it" }
        let day = 86_400
        if seconds >= 365 * day { return "for up to a year" }
        if seconds >= 2 * day { return "for up to \(seconds / day) days" }
        return "for up to \(seconds) s"
    }

    /// The directives of a value, names lowercased (`public`, `max-age=600`).
    private static func directives(_ value: String?) -> [(name: String, value: String?)] {
        guard let value else { return [] }
        return value.split(separator: ",").map { directive in
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            return ((parts.first ?? "").lowercased(), parts.count == 2 ? parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) : nil)
        }.filter { !$0.name.isEmpty }
    }
}

// How much of a store's listing one command holds: a broken or hostile store cannot make a listing go on for ever.
import ImagePipe

/// The most a listing of a folder of S3 or Supabase holds (objects, and Supabase's folders), and the
/// error past it. Each page is bounded by the size of an answer; this bounds their number, so a store
/// that never stops saying there is more (new continuation tokens, or full pages for ever) makes a
/// listing fail by name instead of growing until memory runs out. Ten million objects of a photo
/// library take about 2 GB to hold; a folder larger than that is listed by its parts.
public enum ListingBound {
    /// Entries one listing holds by default.
    public static let defaultMaxEntries = 10_000_000

    /// The longest key S3 and Supabase take, in UTF-8 bytes: no folder of a listing is longer.
    static let maxKeyBytes = 1024

    /// Throws when `count` entries are past `limit`.
    static func check(_ count: Int, limit: Int, listing: String) throws(ImagePipeError) {
        guard count > limit else { return }
        throw .configuration(
            "listing \(listing) stopped: it holds more than \(limit) entries, the most one listing takes; "
                + "give its folders (narrower prefixes) one at a time")
    }
}

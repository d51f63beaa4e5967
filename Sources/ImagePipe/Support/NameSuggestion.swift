// "Did you mean ...?": the known name closest to a misspelt one, shared by every message that names a choice.

/// The suggestion a message offers for a name that is not one of the known ones (a configuration key,
/// a preset, a subcommand): the closest known name within a few edits, or none when nothing is close,
/// so a message never suggests something unrelated.
public enum NameSuggestion {
    /// The known name within `limit` edits of `name` (fewest first, then the earliest in `known`).
    public static func closest(to name: String, among known: some Sequence<String>, limit: Int = 2) -> String? {
        known.map { ($0, editDistance(name, $0)) }.filter { $0.1 <= limit }.min { $0.1 < $1.1 }?.0
    }

    /// `"; did you mean 'x'?"` for the closest known name, or nothing: a suffix for an error message.
    public static func hint(for name: String, among known: some Sequence<String>, limit: Int = 2) -> String {
        closest(to: name, among: known, limit: limit).map { "; did you mean '\($0)'?" } ?? ""
    }

    /// Levenshtein distance: insertions, deletions and substitutions of characters.
    public static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}

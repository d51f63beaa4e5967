// A key with its folder's prefix taken off as bytes: a `/` and a combining mark after it are one Character.

extension String {
    /// The rest of the string after `prefix`, cut as UTF-8 bytes; the string itself when it does not
    /// start with those bytes. Cut by `Character`s, `web/` + U+0301 + `x.jpg` loses the mark with the
    /// slash and names another object (`x.jpg`).
    public func afterPrefixBytes(_ prefix: String) -> String {
        guard utf8.starts(with: prefix.utf8) else { return self }
        return String(decoding: utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
    }
}

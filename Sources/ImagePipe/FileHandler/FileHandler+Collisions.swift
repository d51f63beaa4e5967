// Key collisions within one batch, found before anything is read: two sources whose outputs would share keys.

extension FileHandler {
    /// Sources whose keys another source earlier in the batch already produces, by position in `jobs`.
    /// Two inputs can give the same relative path (`a/x.jpg` and `b/x.jpg` given as folders `a` and
    /// `b`), so sources are told apart by position, and such a clash names the other file's path.
    ///
    /// Keys that depend on the content hash cannot be known before reading, and two identical files
    /// writing identical objects are harmless, so such templates are not checked.
    public func keyCollisions(in jobs: [Job]) -> [Int: ImagePipeError] {
        guard !configuration.keyTemplate.usesHash else { return [:] }
        var owners: [String: Job] = [:]
        var collisions: [Int: ImagePipeError] = [:]
        for (index, job) in jobs.enumerated() {
            let values = KeyTemplate.Values(relativePath: job.relativePath, sha256: nil)
            let keys = configuration.variants.compactMap {
                try? configuration.keyTemplate.key(for: values, variant: $0.name, ext: $0.format.fileExtension)
            }
            if let clash = keys.first(where: { owners[$0] != nil }), let owner = owners[clash] {
                let other = owner.relativePath == job.relativePath ? "\(owner.path), given by another input" : "'\(owner.sourceName)'"
                collisions[index] = ImagePipeError(
                    .keyCollision,
                    "output key '\(clash)' is already produced by \(other); add {srcext} or {hash} to --key to keep both")
                continue
            }
            for key in keys { owners[key] = job }
        }
        return collisions
    }
}

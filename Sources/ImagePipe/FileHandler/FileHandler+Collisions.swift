// Key collisions within one batch, found before anything is read: two sources whose outputs would share keys.

extension FileHandler {
    /// Sources whose keys another source earlier in the batch already produces, by position in `jobs`.
    /// Two inputs can give the same relative path (`a/x.jpg` and `b/x.jpg` given as folders `a` and
    /// `b`), so sources are told apart by position, and such a clash names the other file's path.
    ///
    /// Keys that depend on the content hash cannot be known before reading, and two identical files
    /// writing identical objects are harmless, so such templates are not checked.
    ///
    /// Only sources named as images claim keys here: whether another file is an image is known
    /// once its first bytes are read (``ImageSignature``), and a sidecar (`IMG_1.xmp`) or a note must
    /// not take `IMG_1.jpg`'s keys. Such a file's clash is returned too; the caller hands it to its
    /// job (``Job/keyCollision``), which fails with it only if the file turns out to be an image.
    public func keyCollisions(in jobs: [Job]) -> [Int: ImagePipeError] {
        guard !configuration.keyTemplate.usesHash else { return [:] }
        var owners: [String: Job] = [:]
        var collisions: [Int: ImagePipeError] = [:]
        // Files named as images first, in order, so one named otherwise never owns a key before them.
        let named = jobs.indices.filter { ImageSignature.nameSaysImage(jobs[$0].relativePath) }
        let others = jobs.indices.filter { !ImageSignature.nameSaysImage(jobs[$0].relativePath) }
        for index in named + others {
            let job = jobs[index]
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
            // Only a file named as an image claims keys: another may turn out to be no image.
            if ImageSignature.nameSaysImage(job.relativePath) {
                for key in keys { owners[key] = job }
            }
        }
        return collisions
    }
}

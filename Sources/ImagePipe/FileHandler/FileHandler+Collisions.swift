// Key collisions within one batch, found before anything is read: two sources whose outputs would share keys.
import Foundation

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
    /// not take `IMG_1.jpg`'s keys. Every clash is returned; the caller hands it to its job
    /// (``Job/keyCollision``), which fails with it only if the file's bytes turn out to be an image.
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
                    "output key '\(clash)' is already produced by \(other); "
                        + Self.keepBothHint(
                            configuration.keyTemplate, owner: owner, job: job,
                            variant: configuration.variants.first {
                                (try? configuration.keyTemplate.key(for: values, variant: $0.name, ext: $0.format.fileExtension)) == clash
                            }))
                continue
            }
            // Only a file named as an image claims keys: another may turn out to be no image.
            if ImageSignature.nameSaysImage(job.relativePath) {
                for key in keys { owners[key] = job }
            }
        }
        return collisions
    }

    /// How to change `template` so both sources keep their outputs, as a template to copy and the
    /// keys it gives. The usual case is a phone export's `IMG_1.HEIC` beside `IMG_1.JPG`: the same
    /// name but for the extension, which `{srcext}` after `{stem}` tells apart. Sources that differ
    /// otherwise (the same path given by two inputs) are told apart by their content only.
    static func keepBothHint(_ template: KeyTemplate, owner: Job, job: Job, variant: VariantSpec?) -> String {
        let byContent = "key by content with {hash} (--key '{hash}/{variant}.{ext}')"
        let ownerValues = KeyTemplate.Values(relativePath: owner.relativePath, sha256: nil)
        let jobValues = KeyTemplate.Values(relativePath: job.relativePath, sha256: nil)
        let extensionTells = ownerValues.sourceExtension != jobValues.sourceExtension && !template.text.contains("{srcext}")
        guard extensionTells, let stem = template.text.range(of: "{stem}"),
            let suggested = try? KeyTemplate(template.text.replacingCharacters(in: stem, with: "{stem}-{srcext}")),
            let variant
        else {
            if extensionTells { return "to keep both, add {srcext} (the original's extension) to --key, or " + byContent }
            if ownerValues.dir != jobValues.dir && !template.text.contains("{dir}") {
                return "to keep both, add {dir} (the original's folder) to --key, or " + byContent
            }
            return "to keep both, " + byContent
        }
        let keys = [ownerValues, jobValues].compactMap { try? suggested.key(for: $0, variant: variant.name, ext: variant.format.fileExtension) }
        return "to keep both, put the original's extension in the key: --key '\(suggested.text)' gives "
            + keys.map { "'\($0)'" }.joined(separator: " and ") + " (a phone export holds IMG_1.HEIC beside IMG_1.JPG), or " + byContent
    }
}

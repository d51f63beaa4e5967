// Finds the sources of a batch's inputs in object storage: a folder (prefix) listed recursively, or one object.

extension SourceScanner {
    /// Adds the sources of one `s3://` or `supabase://` input.
    ///
    /// A URL not ending in `/` that names an existing object is that one source, going by its name
    /// alone (like an absolute file path). Otherwise it names a folder: every object under
    /// `KEY/`, going by its key relative to the folder, filtered as a local folder's files are
    /// (hidden names left out and counted, see ``SourceScanner/isHidden(_:)``; whether an object is
    /// an image is decided by its first bytes when it is read, whatever its key). Keys are taken as
    /// they are: `.` and `..` segments, empty segments, `%` and control characters included.
    /// A URL from a `--from` list is taken as one object without a lookup unless it ends in `/`; a
    /// missing one then fails as that source (`source_not_found`).
    ///
    /// - Throws: `configuration` when no repository reads the scheme, when the bucket cannot be
    ///   listed or the object looked up, and for a command-line URL that names neither an object nor
    ///   a folder holding any.
    func scanObjects(_ input: Input, into result: inout Result) throws(ImagePipeError) {
        let location = try ObjectLocation(parsing: input.path)
        guard let repository = sources[location.scheme] else {
            throw .configuration("source \(input.path): no repository for \(location.scheme):// sources is configured")
        }
        if !location.key.isEmpty, !location.key.hasSuffix("/") {
            let object: ListedObject?
            if input.listed {
                object = ListedObject(location: location)
            } else {
                do {
                    object = try repository.info(location)
                } catch {
                    throw .configuration("cannot look up source \(input.path): \(error.reason)")
                }
            }
            if let object {
                result.jobs.append(Job(object: object, relativePath: String(location.key.split(separator: "/").last ?? "")))
                return
            }
        }

        let folder = location.asFolder
        let objects = try repository.list(folder)
        if objects.isEmpty, !input.path.hasSuffix("/"), !location.key.isEmpty, !input.listed {
            throw .configuration("source \(input.path) does not exist: no such object, and no objects under \(folder)")
        }
        // A destination folder inside this one holds outputs, which are not read back as sources.
        let folderURL = folder.description
        let outputs = excluded.filter { $0.hasPrefix(folderURL) && $0.count > folderURL.count }
        var found: [Job] = []
        var hidden: [String] = []
        for object in objects {
            let url = object.location.description
            let relative = object.location.key.afterPrefixBytes(folder.key)
            // Keys ending in `/` are the empty markers consoles create for folders.
            guard !relative.isEmpty, !relative.hasSuffix("/"), !outputs.contains(where: { url.hasPrefix($0) }) else { continue }
            if Self.isHidden(relative) {
                hidden.append(url)
                continue
            }
            found.append(Job(object: object, relativePath: relative))
        }
        if found.isEmpty { result.emptyFolders.append(input.path) }
        result.jobs += found.sorted { $0.relativePath < $1.relativePath }
        result.hidden += hidden.sorted()
    }
}

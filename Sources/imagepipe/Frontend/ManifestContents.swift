// What a manifest holds, in one sentence: why `srcset` or `report` has no image to show from it.
import ImagePipe

/// Counts a manifest's records by what they are, to tell a user why nothing can be shown instead
/// of printing nothing and exiting 0.
struct ManifestContents {
    let results: [JobResult]
    /// The manifest's name as given.
    let name: String

    /// The error for a manifest with no image to show: what its records are, and what to do.
    var nothingToShow: ImagePipeError {
        guard !results.isEmpty else {
            return ImagePipeError(.configuration, "\(name) has no records: the batch that wrote it found no source, or has not written any yet")
        }
        var parts: [String] = []
        let failed = results.filter { $0.status == .failed }.count
        if failed > 0 { parts.append("\(failed) failed") }
        var skipped: [String: Int] = [:]
        for result in results where result.status == .skipped { skipped[result.skipCode?.rawValue ?? "skipped", default: 0] += 1 }
        for (code, count) in skipped.sorted(by: { $0.key < $1.key }) { parts.append("\(count) skipped (\(code))") }
        let done = results.filter { $0.status == .done }.count
        if done > 0 { parts.append("\(done) done without variants") }
        var reason = "\(name) has no image to show: of its \(results.count) records, " + parts.joined(separator: ", ")
        if results.contains(where: { $0.skipCode == .upToDate }) {
            // Outputs written before origins recorded the original's size and placeholder.
            reason +=
                ". Its up-to-date images' outputs do not record their original (they were made by an earlier "
                + "imagepipe): run the batch once with --force to record it"
        }
        return ImagePipeError(.configuration, reason)
    }
}

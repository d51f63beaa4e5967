// One line of `batch --dry-run`: a source, what would happen to it, and the keys it would write.
import ImagePipe

/// Describes an inspected job for people: `write`, `skip` or `fail`, the source, then the keys or the reason.
struct DryRunLine {
    let text: String

    init(_ inspected: JobContext) {
        let source = inspected.job.sourceName
        if inspected.hasEnded {
            let finished = inspected.result()
            switch finished.status {
            case .skipped:
                text = "skip   \(source): \(finished.reason ?? "")"
            default:
                text = "fail   \(source): \(finished.error ?? "") [\(finished.errorCode?.description ?? "")]"
            }
            return
        }
        let keys = inspected.outputs.map { output -> String in
            guard let existing = output.existing else { return output.key }
            return output.key + (inspected.origin?.isSameOriginal(as: existing.origin) == true ? " (in place)" : " (replaces another original's)")
        }
        text = "write  \(source) → " + keys.joined(separator: ", ")
    }
}

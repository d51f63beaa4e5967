// One line of `batch --dry-run`: a source, what would happen to it, and the keys it would write.
import ImagePipe

/// Describes an inspected job for people: `write`, `skip` or `fail`, the source, then the keys or the reason.
struct DryRunLine {
    /// What the run would do.
    enum Action: String, CaseIterable {
        case write, skip, fail
    }

    let action: Action
    let text: String

    init(_ inspected: JobContext) {
        let source = inspected.job.sourceName
        if inspected.hasEnded {
            let finished = inspected.result()
            switch finished.status {
            case .skipped:
                action = .skip
                text = "skip   \(source): \(finished.reason ?? "") [\(finished.skipCode?.rawValue ?? "")]"
            default:
                action = .fail
                text = "fail   \(source): \(finished.error ?? "") [\(finished.errorCode?.description ?? "")]"
            }
            return
        }
        action = .write
        let keys = inspected.outputs.map { output -> String in
            guard let existing = output.existing else { return output.key }
            return output.key + (inspected.origin?.isSameOriginal(as: existing.origin) == true ? " (in place)" : " (replaces another original's)")
        }
        let header = inspected.size.map { size in " (\(size) \(inspected.format?.rawValue ?? ""))" } ?? ""
        text = "write  \(source)\(header) → " + keys.joined(separator: ", ")
    }
}

extension DryRunLine.Action {
    /// The closing line of a dry run: how many sources each action would get.
    static func summary(_ counts: [DryRunLine.Action: Int]) -> String {
        "dry run: \(counts[.write, default: 0]) to write, \(counts[.skip, default: 0]) to skip, "
            + "\(counts[.fail, default: 0]) would fail; nothing was written"
    }
}

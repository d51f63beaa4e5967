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
        // A source that is written writes every one of its outputs: one already there is written
        // again, never left "in place", and the note says what it held.
        let keys = inspected.outputs.map { output -> String in
            guard let existing = output.existing else { return output.key }
            return output.key + " (" + Self.rewrite(output, existing: existing, origin: inspected.origin, source: source) + ")"
        }
        let header = inspected.size.map { size in " (\(size) \(inspected.format?.rawValue ?? ""))" } ?? ""
        text = "write  \(source)\(header) → " + keys.joined(separator: ", ")
    }

    /// What writing `output` replaces: this original's own output (written again, as with
    /// `--force`, or made with other settings), an earlier version of a source of the same name
    /// (an edited photo), or another original's (`--overwrite`); and whether that was served as
    /// immutable, which the run warns of.
    static func rewrite(_ output: JobContext.Output, existing: ExistingObject, origin: Origin?, source: String) -> String {
        let immutable = existing.wasServedImmutable ? ", served as immutable" : ""
        switch output.replacement(for: origin, source: source) {
        case .earlierVersion: return "replaces the output of its earlier version" + immutable
        case .anotherOriginal: return "replaces another original's" + immutable
        case nil:
            guard let origin else { return "replaces another original's" + immutable }
            return output.isInPlace(for: origin) ? "rewrites its own output" : "replaces its own output, made with other settings"
        }
    }
}

extension DryRunLine.Action {
    /// The closing line of a dry run: how many sources each action would get.
    static func summary(_ counts: [DryRunLine.Action: Int]) -> String {
        "dry run: \(counts[.write, default: 0]) to write, \(counts[.skip, default: 0]) to skip, "
            + "\(counts[.fail, default: 0]) would fail; nothing was written"
    }
}

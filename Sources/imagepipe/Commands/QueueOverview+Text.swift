// How `queue status` and `queue list` print a queue for people: one `KEY<TAB>VALUE` line per count, one tab-separated line per job.
import Foundation
import ImagePipe
import ImagePipeQueue

extension QueueOverview {
    /// `queue`, a line per state, `oldest_waiting_s`, `jobs_per_s`, `options_without_original` when a
    /// queue directory's inbox has options files waiting for their originals, then the running jobs and the
    /// latest failed ones after a blank line (see ``QueueOverview/Job/line``).
    var text: String {
        var lines = ["queue\t\(queue)"]
        for state in State.allCases { if let count = counts[state] { lines.append("\(state.rawValue)\t\(count)") } }
        lines.append("oldest_waiting_s\t\(oldestWaitingSeconds.map { String(format: "%.1f", $0) } ?? "-")")
        lines.append("jobs_per_s\t\(String(format: "%.2f", finishedPerSecond))")
        if let optionsWithoutOriginal, optionsWithoutOriginal > 0 { lines.append("options_without_original\t\(optionsWithoutOriginal)") }
        if !jobs.isEmpty { lines += [""] + jobs.map(\.line) }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension QueueOverview {
    /// For each state whose jobs are listed only in part (at most ten running and ten failed),
    /// how many of how many are shown and the `queue list` that shows them all; nil when all are.
    func notShownNotes(queue argument: String) -> String? {
        var notes = ""
        for state in [State.running, .failed] {
            let shown = jobs.count { $0.state == state }
            guard let total = counts[state], total > shown else { continue }
            let which = state == .running ? "longest-running first" : "the latest"
            let limit = total > QueueOverview.listLimit ? " --limit \(total)" : ""
            notes +=
                "imagepipe: \(shown) of \(total) \(state.rawValue) jobs shown (\(which)); every one: "
                + "imagepipe queue list \(Self.shellWord(argument)) --state \(state.rawValue)\(limit)\n"
        }
        return notes.isEmpty ? nil : notes
    }

    /// How many jobs of each state `queue list` shows unless told otherwise (its `--limit`).
    static let listLimit = 100

    /// A word as a shell takes it back: quoted unless it holds only characters no shell reads otherwise.
    static func shellWord(_ word: String) -> String {
        let plain = word.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "/._-:@,+=".unicodeScalars.contains(scalar))
        }
        return plain && !word.isEmpty ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

extension QueueOverview.Job {
    /// `ID  STATE  AGE  SOURCE  DETAIL`, tab-separated: the age is how long it has waited, run or
    /// been finished; the detail says what matters in its state (who runs it, why it failed).
    var line: String {
        let age = ageSeconds.map(Self.age) ?? "-"
        return [id, state.rawValue, age, Self.oneLine(source), Self.oneLine(detail)].joined(separator: "\t")
    }

    /// What matters about the job in its state.
    var detail: String {
        var parts: [String] = []
        if let priority, priority != 0 { parts.append("priority \(priority)") }
        if let dueInSeconds { parts.append("due in \(Self.age(dueInSeconds))") }
        switch state {
        case .running:
            if let attempts { parts.append("attempt \(attempts)") }
            if let owner { parts.append("worker \(owner)") }
            if cancelRequested == true { parts.append("cancel requested") }
        case .failed, .cancelled:
            if let attempts, attempts > 0 { parts.append("after \(attempts) attempt\(attempts == 1 ? "" : "s")") }
        case .waiting, .done:
            break
        }
        if let error { parts.append(errorCode.map { "\($0): \(error)" } ?? error) }
        return parts.isEmpty ? "-" : parts.joined(separator: ", ")
    }

    /// `12.3 s`, `4.5 min`, `3.2 h`, `2.0 d`.
    static func age(_ seconds: Double) -> String {
        switch seconds {
        case ..<60: String(format: "%.1f s", seconds)
        case ..<3600: String(format: "%.1f min", seconds / 60)
        case ..<86_400: String(format: "%.1f h", seconds / 3600)
        default: String(format: "%.1f d", seconds / 86_400)
        }
    }

    /// Tabs and line breaks inside a field would break the columns.
    private static func oneLine(_ text: String) -> String {
        String(text.map { $0 == "\t" || $0.isNewline ? " " : $0 })
    }
}

// The image helper processes a running worker started, found and read through /proc as an operator would.
public import Foundation

/// A worker's image helpers, seen from outside through `/proc`.
public enum ImageHelpers {
    /// A job to kill its helper in: an AVIF encode of a 1800x1200 photo at effort 8, about 18 s of
    /// CPU. A test finds the helper working, then kills it; the job must still be running then,
    /// even on a machine so busy that the test's own polling lags by seconds (an 11 s job once
    /// ended between the two, and the kill hit an idle helper).
    public static let longJob = (fixture: "images/exif-orientation/Landscape_1.jpg", variant: "slow=1800x1800,avif,q50,effort=8")

    /// The helpers `parent` started: its children whose command line is `imagepipe image-helper …`,
    /// the zygote that forks them left out.
    public static func of(_ parent: pid_t) -> [pid_t] {
        children(of: parent).filter { !commandLine($0).contains("--zygote") }
    }

    /// The zygote of `parent`'s helpers: its child `imagepipe image-helper --zygote …`, if it runs.
    public static func zygote(of parent: pid_t) -> pid_t? {
        children(of: parent).first { commandLine($0).contains("--zygote") }
    }

    private static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.filter { pid in
            guard let stat = statFields(pid), stat.count > 1, Int32(stat[1]) == parent else { return false }
            return commandLine(pid).dropFirst().first == "image-helper"
        }.sorted()
    }

    /// Where a library is mapped in its address space (the start of its first mapping), if it is:
    /// the same in a process and its fork, chosen afresh (ASLR) in every process started from a file.
    public static func address(of library: String, in pid: pid_t) -> String? {
        guard let file = FileHandle(forReadingAtPath: "/proc/\(pid)/maps"), let data = try? file.readToEnd() else { return nil }
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.contains(library) }
        return line?.split(separator: "-").first.map(String.init)
    }

    /// Its command line, word by word.
    public static func commandLine(_ pid: pid_t) -> [String] {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return [] }
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `/proc/PID/status` as name → value (`Seccomp` → `2`).
    public static func status(_ pid: pid_t) -> [String: String] {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return [:] }
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            fields[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }

    /// Whether it has ended: gone, or a zombie its parent has not reaped yet.
    public static func hasEnded(_ pid: pid_t) -> Bool {
        let state = status(pid)["State"]
        return state == nil || state!.hasPrefix("Z")
    }

    /// Its environment, one `NAME=value` each.
    public static func environment(_ pid: pid_t) -> [String] {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return [] }
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Each of its threads as `name:state:wchan`, to say where a process that should have moved is waiting.
    public static func threadStates(_ pid: pid_t) -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.sorted().map { task in
            let base = "/proc/\(pid)/task/\(task)"
            let name = (try? String(contentsOfFile: base + "/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines) ?? "?"
            let state = status(pid: base)["State"] ?? "?"
            let wchan = (try? String(contentsOfFile: base + "/wchan", encoding: .utf8)) ?? "?"
            return "\(name):\(state):\(wchan)"
        }
    }

    private static func status(pid path: String) -> [String: String] {
        guard let text = try? String(contentsOfFile: path + "/status", encoding: .utf8) else { return [:] }
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return fields
    }

    /// The files of the shared libraries it has mapped, each once.
    public static func libraries(_ pid: pid_t) -> Set<String> {
        // Read to its end: a /proc file says it is empty, and a read of its announced size stops short.
        guard let file = FileHandle(forReadingAtPath: "/proc/\(pid)/maps"), let data = try? file.readToEnd() else { return [] }
        let text = String(decoding: data, as: UTF8.self)
        return Set(
            text.split(separator: "\n").compactMap { line in
                guard let path = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(5).first, path.contains(".so") else {
                    return nil
                }
                return String(path)
            })
    }

    /// The numbers of its open descriptors.
    public static func descriptors(_ pid: pid_t) -> [Int] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap { Int($0) }.sorted()
    }

    /// The CPU time it used so far, in clock ticks (user and system).
    public static func cpuTicks(_ pid: pid_t) -> Int? {
        guard let fields = statFields(pid), fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }

    /// A helper of `parent` that is working on a job: one that used `ticks` of CPU (a tick is 10 ms)
    /// since it was first seen and is still using more. A helper's start takes a few ticks, and an
    /// idle one waits on its channel and uses none, so only a job gets that far. Nil if none did
    /// within `seconds`.
    public static func busy(of parent: pid_t, ticks: Int = 25, excluding: Set<pid_t> = [], seconds: Double = 120) -> pid_t? {
        let deadline = Date().addingTimeInterval(seconds)
        var first: [pid_t: Int] = [:]
        var last: [pid_t: Int] = [:]
        while Date() < deadline {
            for helper in of(parent) where !excluding.contains(helper) {
                guard let now = cpuTicks(helper) else { continue }
                if let start = first[helper], let before = last[helper], now > before, now - start >= ticks { return helper }
                if first[helper] == nil { first[helper] = now }
                last[helper] = now
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return nil
    }

    /// `/proc/PID/stat`'s fields after the command name (which may hold spaces), from the state on:
    /// index 1 is the parent's pid, 11 and 12 the user and system time.
    private static func statFields(_ pid: pid_t) -> [String]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        return text[text.index(after: close)...].split(separator: " ").map(String.init)
    }
}

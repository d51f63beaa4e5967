// --log-format: text for people, or one JSON object per line for log collectors.
import ArgumentParser

/// How log lines are written to standard error.
///
/// Text is the default, on a terminal and off it: a worker's journal read by `journalctl` or grep
/// keeps its lines as they were until JSON is asked for.
enum LogFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// `TIME LEVEL message key=value ...`.
    case text
    /// `{"time":...,"level":...,"message":...,"label":...,"key":value,...}`.
    case json
}

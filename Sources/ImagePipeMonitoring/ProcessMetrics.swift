// Resident memory, open file descriptors and threads of this process, read from /proc/self when scraped.
public import CoreMetrics
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The process gauges, set from `/proc/self` each time ``update()`` runs (at every scrape, so an
/// idle worker costs nothing between scrapes).
public struct ProcessMetrics: Sendable {
    /// What `/proc/self` says now.
    public struct Reading: Sendable, Equatable {
        /// VmRSS in bytes.
        public var residentBytes: Int
        /// Entries of /proc/self/fd, without the one reading them.
        public var openDescriptors: Int
        /// Threads of the process.
        public var threads: Int
    }

    private let resident: Gauge
    private let descriptors: Gauge
    private let threads: Gauge

    /// Creates the gauges; `factory` is the process's metrics backend unless a test gives its own.
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        resident = Gauge(label: MetricCatalogue.residentMemory.name, factory: factory)
        descriptors = Gauge(label: MetricCatalogue.openFileDescriptors.name, factory: factory)
        threads = Gauge(label: MetricCatalogue.threads.name, factory: factory)
    }

    /// Reads `/proc/self` and sets the gauges (left as they were when it cannot be read).
    public func update() {
        guard let reading = Self.read() else { return }
        resident.record(reading.residentBytes)
        descriptors.record(reading.openDescriptors)
        threads.record(reading.threads)
    }

    /// The process's figures now, or nil where there is no `/proc` (not Linux).
    public static func read() -> Reading? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        var rssKiB = 0, threads = 0
        for line in status.split(separator: "\n") {
            // "VmRSS:	  123456 kB", "Threads:	12"
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, let value = Int(fields[1]) else { continue }
            switch fields[0] {
            case "VmRSS:": rssKiB = value
            case "Threads:": threads = value
            default: break
            }
        }
        guard let descriptors = countDescriptors() else { return nil }
        return Reading(residentBytes: rssKiB * 1024, openDescriptors: descriptors, threads: threads)
    }

    /// Entries of /proc/self/fd, less the descriptor the listing itself holds open.
    private static func countDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { name in
                name[0] == UInt8(ascii: ".") && (name[1] == 0 || (name[1] == UInt8(ascii: ".") && name[2] == 0))
            }
            if !isDot { count += 1 }
        }
        return count - 1
    }
}

// inotify on inbox/ and every subdirectory, read through a Dispatch source: delivered names as they land.
import Dispatch
import Foundation
import ImagePipe
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Reports files arriving in the inbox, recursively, as soon as the kernel sees them.
///
/// A file counts as arrived when it is renamed in (`IN_MOVED_TO`), closed after writing
/// (`IN_CLOSE_WRITE`) or created by a link (`IN_CREATE`); the worker still checks that no writer
/// has it open before claiming it. New subdirectories are watched as they appear and scanned, since
/// files can land in them before the watch exists. When the kernel's event queue overflows, the
/// watcher asks for a full rescan.
final class InboxWatcher: Sendable {
    /// What the watcher reports.
    enum Event: Sendable, Equatable {
        /// A file may have been delivered at this path relative to the inbox.
        case delivered(QueueDirectory.Entry)
        /// Events were lost; scan the whole inbox.
        case rescan
    }

    private let inbox: String
    private let queue = DispatchQueue(label: "imagepipe.inbox-watcher")
    private let handler: @Sendable (Event) -> Void
    private let state = Mutex(State())

    private struct State: ~Copyable {
        var directories: [Int32: RawPath] = [:]
        var stopped = false
    }

    private let descriptor: Int32
    // Dispatch sources are thread-safe; the protocol existential is just not marked Sendable.
    nonisolated(unsafe) private let source: any DispatchSourceRead

    private static let directoryMask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF)

    /// Creates a watcher for `inbox` calling `handler` on its own serial queue.
    init(inbox: String, handler: @escaping @Sendable (Event) -> Void) throws(ImagePipeError) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else {
            throw .configuration("cannot watch \(inbox) with inotify: \(String(cString: strerror(errno)))")
        }
        self.inbox = inbox
        self.handler = handler
        self.descriptor = fd
        self.source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        // Resumed at once: a Dispatch source released while suspended is a crash, and with no
        // watches yet there is nothing to read.
        source.setEventHandler { [weak self] in self?.drain(fd) }
        source.setCancelHandler { close(fd) }
        source.resume()
    }

    deinit { stop() }

    /// Starts watching the inbox and the subdirectories it has now.
    func start() {
        queue.sync { _ = watchTree(RawPath(bytes: [])) }
    }

    /// Stops watching.
    func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        if first { source.cancel() }
    }

    /// Adds watches for `relative` and its subdirectories; returns what else is found in them.
    private func watchTree(_ relative: RawPath) -> [QueueDirectory.Entry] {
        var files: [QueueDirectory.Entry] = []
        var stack = [relative]
        while let directory = stack.popLast() {
            let path = directory.bytes.isEmpty ? RawPath(inbox) : RawPath(inbox).appending(directory)
            let wd = path.withCString { inotify_add_watch(descriptor, $0, Self.directoryMask | UInt32(IN_ONLYDIR)) }
            if wd >= 0 { state.withLock { $0.directories[wd] = directory } }
            guard let entries = try? DirectoryListing.entries(of: path) else { continue }
            for entry in entries where !entry.isHidden {
                let child = directory.appending(entry.name)
                if entry.isDirectory {
                    stack.append(child)
                } else {
                    files.append(QueueDirectory.Entry(raw: child))
                }
            }
        }
        return files
    }

    /// Reads every pending event.
    private func drain(_ fd: Int32) {
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        while true {
            let count = read(fd, buffer, capacity)
            if count <= 0 { return }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = buffer + offset + MemoryLayout<inotify_event>.size
                // Raw bytes: a name need not be valid UTF-8.
                let name = RawPath(bytes: UnsafeRawBufferPointer(start: nameStart, count: Int(event.len)).prefix(while: { $0 != 0 }))
                handle(event, name: name)
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
        }
    }

    private func handle(_ event: inotify_event, name: RawPath) {
        let mask = event.mask
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
            handler(.rescan)
            return
        }
        if mask & UInt32(IN_IGNORED) != 0 {
            _ = state.withLock { $0.directories.removeValue(forKey: event.wd) }
            return
        }
        guard let directory = state.withLock({ $0.directories[event.wd] }), !name.bytes.isEmpty,
            name.bytes.first != UInt8(ascii: ".")
        else { return }
        let relative = directory.appending(name)
        if mask & UInt32(IN_ISDIR) != 0 {
            if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                for file in watchTree(relative) { handler(.delivered(file)) }
            }
            return
        }
        if mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) != 0 {
            handler(.delivered(QueueDirectory.Entry(raw: relative)))
        }
    }
}

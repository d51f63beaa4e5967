// One end of the socket between a worker and a helper: whole messages, with descriptors beside them.
import CSandbox
import Foundation

/// How a receive or a send on the channel ended, when it did not bring a message.
enum ChannelFailure: Error, Equatable {
    /// The other end was closed: the helper died or ended.
    case closed
    /// Nothing came before the deadline.
    case timedOut
    /// The message or its descriptors did not fit, or the socket failed (errno).
    case failed(Int32)
}

/// A message received: its bytes, and the descriptors that came with it (owned by the receiver).
struct ChannelMessage {
    var bytes: [UInt8]
    var descriptors: [Int32]

    /// Closes the descriptors nobody took.
    func closeDescriptors() {
        for descriptor in descriptors { close(descriptor) }
    }
}

/// One end of a SOCK_SEQPACKET pair. Used by one thread at a time: the pool hands a helper, with
/// its channel, to one job at once.
final class HelperChannel: @unchecked Sendable {
    let descriptor: Int32
    /// Replies and requests are small (a setup's variants a few kilobytes, a batch's sources or
    /// outputs inside 160 KiB); one buffer reused for every message saves an allocation each. Left
    /// uninitialised: a helper lives for one job, and zeroing a mebibyte would fault in 256 pages
    /// that only the messages it receives need (the kernel writes each before it is read).
    private var buffer = [UInt8](unsafeUninitializedCapacity: 1 << 20) { _, count in count = 1 << 20 }
    /// The most descriptors a message may carry (the C side's own bound).
    static let maxDescriptors = 64

    init(taking descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// A connected pair: the worker's end and the helper's.
    static func pair() throws(ChannelFailure) -> (worker: HelperChannel, helper: Int32) {
        var fds: [Int32] = [-1, -1]
        guard ips_channel_pair(&fds) == 0 else { throw .failed(errno) }
        return (HelperChannel(taking: fds[0]), fds[1])
    }

    /// Sends a message, waiting at most `timeout` (nil: as long as it takes) for room: a peer that
    /// stopped reading costs the sender its deadline, not its thread.
    func send(_ bytes: [UInt8], descriptors: [Int32] = [], timeout: Duration? = nil) throws(ChannelFailure) {
        let milliseconds = Self.milliseconds(timeout)
        let sent = bytes.withUnsafeBytes { raw in
            descriptors.withUnsafeBufferPointer { fds in
                ips_send(descriptor, raw.baseAddress, raw.count, fds.baseAddress, Int32(fds.count), milliseconds)
            }
        }
        guard sent < 0 else { return }
        let error = errno
        if error == ETIMEDOUT { throw .timedOut }
        throw error == EPIPE || error == ECONNRESET ? .closed : .failed(error)
    }

    /// Whether the peer closed its end or sent something: a helper idle in the pool sends nothing, so
    /// either means it died, or is not to be trusted with a job.
    var peerClosedOrSpoke: Bool {
        var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&waiting, 1, 0) != 0
    }

    /// Whether the peer sent a message not yet read (not merely closed its end): one poll and one
    /// peek, no wait.
    var hasMessageWaiting: Bool {
        guard peerClosedOrSpoke else { return false }
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    /// A timeout as poll takes it: -1 for none, rounded up so a positive one never becomes 0.
    static func milliseconds(_ timeout: Duration?) -> Int32 {
        guard let timeout else { return -1 }
        let (seconds, attoseconds) = timeout.components
        guard seconds >= 0 else { return 0 }
        let total = seconds.multipliedReportingOverflow(by: 1000)
        guard !total.overflow else { return Int32.max }
        return Int32(clamping: total.partialValue + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    /// The next message, waiting at most `timeout` (nil: as long as it takes).
    func receive(timeout: Duration? = nil) throws(ChannelFailure) -> ChannelMessage {
        var fds = [Int32](repeating: -1, count: Self.maxDescriptors)
        var count: Int32 = 0
        let milliseconds = Self.milliseconds(timeout)
        let got = buffer.withUnsafeMutableBytes { raw in
            ips_receive(descriptor, raw.baseAddress, raw.count, &fds, Int32(fds.count), &count, milliseconds)
        }
        if got < 0 {
            let error = errno
            if error == ETIMEDOUT { throw .timedOut }
            throw error == ECONNRESET ? .closed : .failed(error)
        }
        if got == 0 { throw .closed }
        return ChannelMessage(bytes: Array(buffer[0..<got]), descriptors: Array(fds[0..<Int(count)]))
    }
}

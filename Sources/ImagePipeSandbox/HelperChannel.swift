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
    /// Replies and requests are small (a setup's variants are the largest, a few kilobytes); one
    /// buffer reused for every message saves an allocation each.
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)
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

    func send(_ bytes: [UInt8], descriptors: [Int32] = []) throws(ChannelFailure) {
        let sent = bytes.withUnsafeBytes { raw in
            descriptors.withUnsafeBufferPointer { fds in
                ips_send(descriptor, raw.baseAddress, raw.count, fds.baseAddress, Int32(fds.count))
            }
        }
        guard sent < 0 else { return }
        throw errno == EPIPE || errno == ECONNRESET ? .closed : .failed(errno)
    }

    /// The next message, waiting at most `timeout` (nil: as long as it takes).
    func receive(timeout: Duration? = nil) throws(ChannelFailure) -> ChannelMessage {
        var fds = [Int32](repeating: -1, count: Self.maxDescriptors)
        var count: Int32 = 0
        let milliseconds: Int32 =
            timeout.map { Int32(clamping: max(0, Int(($0.components.seconds * 1000) + $0.components.attoseconds / 1_000_000_000_000_000))) } ?? -1
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

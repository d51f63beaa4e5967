// A thread-safe HTTP client over a pool of libcurl easy handles, so connections are reused across uploads.
import CCurlShim
import CLibCurl
import Foundation
import Synchronization

/// Runs HTTP requests through libcurl from any number of threads.
///
/// Each request borrows an easy handle from a pool and gives it back afterwards; a handle keeps its
/// connection open, so a steady stream of uploads runs over as many connections as there are
/// concurrent uploads rather than one per request. TLS certificates and host names are verified.
public final class CurlHTTPClient: Sendable {
    /// Timeouts and limits.
    public struct Configuration: Sendable {
        /// How long establishing a connection (TCP and TLS) may take.
        public var connectTimeout: Duration
        /// How long a transfer may move less than ``stallBytesPerSecond`` before it is abandoned
        /// (whole seconds; libcurl's granularity).
        public var stallTimeout: Duration
        /// The speed below which a transfer counts as stalled.
        public var stallBytesPerSecond: Int
        /// Idle handles (and their open connections) kept for reuse.
        public var maxIdleHandles: Int
        /// The User-Agent header.
        public var userAgent: String
        /// The largest response body read; uploads only get short answers.
        public var maxResponseBytes: Int
        /// How long a whole request may take, or nil for no limit (uploads: a large one may take long
        /// while it moves; the stall timeout catches one that does not).
        public var totalTimeout: Duration?

        /// Creates a configuration; the defaults suit uploads over the internet.
        public init(
            connectTimeout: Duration = .seconds(10), stallTimeout: Duration = .seconds(30),
            stallBytesPerSecond: Int = 1, maxIdleHandles: Int = 32,
            userAgent: String = "imagepipe/0.2", maxResponseBytes: Int = 4 << 20, totalTimeout: Duration? = nil
        ) {
            self.totalTimeout = totalTimeout
            self.connectTimeout = connectTimeout
            self.stallTimeout = stallTimeout
            self.stallBytesPerSecond = stallBytesPerSecond
            self.maxIdleHandles = maxIdleHandles
            self.userAgent = userAgent
            self.maxResponseBytes = maxResponseBytes
        }
    }

    /// Counters, for logs and for tests that check connection reuse.
    public struct Statistics: Sendable, Equatable {
        /// Requests that got an HTTP answer or failed in transport.
        public var requests = 0
        /// New connections opened (TCP connects).
        public var connections = 0

        /// Creates counters.
        public init(requests: Int = 0, connections: Int = 0) {
            self.requests = requests
            self.connections = connections
        }
    }

    /// The configuration.
    public let configuration: Configuration
    private let idle = Mutex<[CurlEasyHandle]>([])
    private let counters = Mutex(Statistics())

    /// libcurl's global state must be set up once before any thread makes a handle.
    private static let globalInit: Void = {
        let code = ipc_global_init()
        precondition(code == CURLE_OK, "libcurl failed to initialise: \(String(cString: curl_easy_strerror(code)))")
    }()

    /// Creates a client.
    public init(configuration: Configuration = .init()) {
        _ = Self.globalInit
        self.configuration = configuration
    }

    /// Sends a request and waits for the whole answer.
    ///
    /// - Throws: ``TransportError`` when no complete HTTP answer arrived. Any status code, 4xx and
    ///   5xx included, is a response, not an error.
    public func perform(_ request: HTTPRequest) throws(TransportError) -> HTTPResponse {
        let handle = idle.withLock { $0.popLast() } ?? CurlEasyHandle()
        do {
            let (response, connects) = try handle.perform(request, configuration)
            counters.withLock {
                $0.requests += 1
                $0.connections += connects
            }
            idle.withLock { handles in
                if handles.count < configuration.maxIdleHandles { handles.append(handle) }
            }
            return response
        } catch {
            // The handle's connection is suspect after a failed transfer: let it close with the handle.
            counters.withLock { $0.requests += 1 }
            throw error
        }
    }

    /// Requests and connections so far.
    public var statistics: Statistics { counters.withLock { $0 } }
}

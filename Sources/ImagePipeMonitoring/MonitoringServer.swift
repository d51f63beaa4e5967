// The HTTP server of the monitoring endpoints: SwiftNIO's HTTP/1.1 codec on a thread of its own, run as a service.
public import ImagePipe
public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
public import ServiceLifecycle

/// Serves ``MonitoringEndpoints`` over HTTP/1.1.
///
/// It binds in ``start(at:endpoints:logger:)``, so a port in use stops the command before any work
/// starts, and answers on one event-loop thread of its own: neither a busy compression pool nor the
/// PostgreSQL client's event loops can delay a scrape or a health probe. As a service it serves until
/// a graceful shutdown reaches it; placed first in a ServiceGroup, that is after the worker has
/// drained (services stop in reverse order), so `/readyz` answers 503 throughout the drain.
public final class MonitoringServer: Service, Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let logger: Logger
    /// Where it listens (the port the system chose when 0 was asked for).
    public let address: MonitoringAddress

    private init(group: MultiThreadedEventLoopGroup, channel: any Channel, address: MonitoringAddress, logger: Logger) {
        self.group = group
        self.channel = channel
        self.address = address
        self.logger = logger
    }

    /// Binds `address` and starts answering.
    ///
    /// - Throws: `configuration` when the address cannot be bound (in use, not this host's).
    /// Awaited, never waited for: a command's `run()` is async, and a NIO `wait()` there would hold
    /// one of the cooperative pool's threads (one per core) until the socket is bound.
    public static func start(
        at address: MonitoringAddress, endpoints: MonitoringEndpoints, logger: Logger
    ) async throws(ImagePipeError) -> MonitoringServer {
        // Starting the group waits for its thread to run: a blocking call, so not on the pool.
        let group = await BlockingIO.run { MultiThreadedEventLoopGroup(numberOfThreads: 1) }
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(MonitoringHandler(endpoints: endpoints))
                }
            }
        do {
            let channel = try await bootstrap.bind(host: address.host, port: address.port).get()
            let bound = try MonitoringAddress(parsing: channel.localAddress.map(Self.describe) ?? address.description)
            let server = MonitoringServer(group: group, channel: channel, address: bound, logger: logger)
            logger.info("serving /metrics, /healthz and /readyz", metadata: ["address": "\(bound)"])
            return server
        } catch let error as ImagePipeError {
            try? await group.shutdownGracefully()
            throw error
        } catch {
            try? await group.shutdownGracefully()
            throw .configuration(
                "cannot listen on \(address), the metrics address set by --metrics-address (or IMAGEPIPE_METRICS_ADDRESS, "
                    + "or metrics-address in the --config file): \(Self.reason(of: error))")
        }
    }

    /// Why a bind failed, in words a user can act on rather than the socket call's name and errno.
    static func reason(of error: any Error) -> String {
        guard let ioError = error as? IOError else { return "\(error)" }
        switch ioError.errnoCode {
        case EADDRINUSE: return "the address is already in use (another worker or program listens there); choose another port"
        case EADDRNOTAVAIL: return "the address is not one of this host's"
        case EACCES: return "permission denied (ports below 1024 need privileges); choose a port above 1024"
        default: return String(cString: strerror(ioError.errnoCode))
        }
    }

    /// Serves until a graceful shutdown or cancellation, then closes the port.
    public func run() async throws {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                try? await channel.closeFuture.get()
            } onGracefulShutdown: {
                self.channel.close(promise: nil)
            }
        } onCancel: {
            self.channel.close(promise: nil)
        }
        try? await group.shutdownGracefully()
    }

    private static func describe(_ address: SocketAddress) -> String {
        let host = address.ipAddress ?? "0.0.0.0"
        let port = address.port ?? 0
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

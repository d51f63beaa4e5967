// One connection's requests to the monitoring endpoints, answered on the event loop (every answer is ready at once).
import NIOCore
import NIOHTTP1

/// Answers each complete request with ``MonitoringEndpoints``: GET and HEAD only, bodies ignored,
/// keep-alive as the client asks (Prometheus keeps its scrape connection open).
final class MonitoringHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let endpoints: MonitoringEndpoints
    private var request: HTTPRequestHead?

    init(endpoints: MonitoringEndpoints) {
        self.endpoints = endpoints
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
        case .body:
            break
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let response: MonitoringEndpoints.Response
        if head.method == .GET || head.method == .HEAD {
            let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            response = endpoints.respond(to: path)
        } else {
            response = .init(status: 405, contentType: "text/plain; charset=utf-8", body: Array("only GET and HEAD\n".utf8))
        }
        let keepAlive = head.isKeepAlive
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: response.contentType)
        headers.add(name: "Content-Length", value: String(response.body.count))
        headers.add(name: "Cache-Control", value: "no-store")
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        if response.status == 405 { headers.add(name: "Allow", value: "GET, HEAD") }
        context.write(
            wrapOutboundOut(
                .head(
                    HTTPResponseHead(
                        version: head.version, status: .init(statusCode: response.status),
                        headers: headers))), promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: response.body)))), promise: nil)
        }
        guard !keepAlive else {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            return
        }
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        let channel = context.channel
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
    }
}

// One libcurl easy handle: sets a request up, runs it, and collects the answer.
import CCurlShim
import CLibCurl
import Foundation
import ImagePipe

/// A libcurl easy handle and the transfer state its callbacks fill.
///
/// libcurl keeps a connection cache per easy handle, so running many requests on the same handle
/// reuses its open connection. A handle must only be used by one thread at a time, which
/// ``CurlHTTPClient``'s pool guarantees; that is why it can be handed between threads.
final class CurlEasyHandle: @unchecked Sendable {
    private let raw: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>

    init() {
        guard let raw = curl_easy_init() else { fatalError("libcurl could not create an easy handle") }
        self.raw = raw
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_easy_cleanup(raw)
        errorBuffer.deallocate()
    }

    /// Runs one request to completion on this thread.
    func perform(_ request: HTTPRequest, _ configuration: CurlHTTPClient.Configuration) throws(TransportError) -> (HTTPResponse, newConnections: Int)
    {
        // Reset clears the previous request's options but keeps the connection cache, which is the point of pooling.
        curl_easy_reset(raw)
        errorBuffer[0] = 0
        let state = TransferState(
            bodyLimit: request.maxResponseBytes ?? configuration.maxResponseBytes,
            checksDeclaredLength: request.method != "HEAD")

        var list: UnsafeMutablePointer<curl_slist>?
        for header in request.headers {
            list = curl_slist_append(list, "\(header.name): \(header.value)")
        }
        // 100-continue costs a round trip on every upload and some proxies mishandle it.
        list = curl_slist_append(list, "Expect:")
        if request.header("Content-Type") == nil {
            // Otherwise libcurl labels every body as a form post.
            list = curl_slist_append(list, "Content-Type:")
        }
        defer { curl_slist_free_all(list) }

        let code: CURLcode = try withExtendedLifetime(state) { () throws(TransportError) -> CURLcode in
            let context = Unmanaged.passUnretained(state).toOpaque()
            try Self.require(ipc_setopt_string(raw, CURLOPT_URL, request.url), "CURLOPT_URL")
            // The path goes out as written: libcurl would otherwise squash `.` and `..` segments,
            // and an object key such as `orig/a/../x.jpg` would name another object (or bucket).
            try Self.require(ipc_setopt_long(raw, CURLOPT_PATH_AS_IS, 1), "CURLOPT_PATH_AS_IS")
            try Self.require(ipc_setopt_slist(raw, CURLOPT_HTTPHEADER, list), "CURLOPT_HTTPHEADER")
            try Self.require(ipc_setopt_pointer(raw, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer)), "CURLOPT_ERRORBUFFER")
            // Timeouts through signals would break in a multithreaded process.
            try Self.require(ipc_setopt_long(raw, CURLOPT_NOSIGNAL, 1), "CURLOPT_NOSIGNAL")
            try Self.require(
                ipc_setopt_long(raw, CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout.milliseconds)), "CURLOPT_CONNECTTIMEOUT_MS")
            // A whole request's limit, when the caller has one (a notification); 0 is none, as for uploads.
            try Self.require(
                ipc_setopt_long(raw, CURLOPT_TIMEOUT_MS, Int(configuration.totalTimeout?.milliseconds ?? 0)), "CURLOPT_TIMEOUT_MS")
            // A transfer moving less than the limit for the whole window is stalled: give up on it.
            try Self.require(ipc_setopt_long(raw, CURLOPT_LOW_SPEED_LIMIT, configuration.stallBytesPerSecond), "CURLOPT_LOW_SPEED_LIMIT")
            try Self.require(
                ipc_setopt_long(raw, CURLOPT_LOW_SPEED_TIME, max(1, Int(configuration.stallTimeout.timeInterval))), "CURLOPT_LOW_SPEED_TIME")
            try Self.require(ipc_setopt_long(raw, CURLOPT_SSL_VERIFYPEER, 1), "CURLOPT_SSL_VERIFYPEER")
            try Self.require(ipc_setopt_long(raw, CURLOPT_SSL_VERIFYHOST, 2), "CURLOPT_SSL_VERIFYHOST")
            try Self.require(ipc_setopt_string(raw, CURLOPT_PROTOCOLS_STR, "http,https"), "CURLOPT_PROTOCOLS_STR")
            try Self.require(ipc_setopt_long(raw, CURLOPT_TCP_KEEPALIVE, 1), "CURLOPT_TCP_KEEPALIVE")
            try Self.require(ipc_setopt_string(raw, CURLOPT_USERAGENT, configuration.userAgent), "CURLOPT_USERAGENT")
            try Self.require(ipc_setopt_write_callback(raw, CURLOPT_WRITEFUNCTION, Self.receiveBody), "CURLOPT_WRITEFUNCTION")
            try Self.require(ipc_setopt_pointer(raw, CURLOPT_WRITEDATA, context), "CURLOPT_WRITEDATA")
            try Self.require(ipc_setopt_write_callback(raw, CURLOPT_HEADERFUNCTION, Self.receiveHeader), "CURLOPT_HEADERFUNCTION")
            try Self.require(ipc_setopt_pointer(raw, CURLOPT_HEADERDATA, context), "CURLOPT_HEADERDATA")

            return try request.body.withUnsafeBytes { buffer in
                Result { () throws(TransportError) -> CURLcode in
                    switch request.method {
                    case "HEAD":
                        try Self.require(ipc_setopt_long(raw, CURLOPT_NOBODY, 1), "CURLOPT_NOBODY")
                    case "GET" where buffer.isEmpty:
                        try Self.require(ipc_setopt_long(raw, CURLOPT_HTTPGET, 1), "CURLOPT_HTTPGET")
                    case "DELETE" where buffer.isEmpty:
                        try Self.require(ipc_setopt_string(raw, CURLOPT_CUSTOMREQUEST, request.method), "CURLOPT_CUSTOMREQUEST")
                    default:
                        // The body goes from the caller's buffer; libcurl rewinds it by itself when it must
                        // resend on a fresh connection, which a streaming read callback would have to handle.
                        let pointer = buffer.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) } ?? Self.emptyBody
                        try Self.require(ipc_setopt_off(raw, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(buffer.count)), "CURLOPT_POSTFIELDSIZE_LARGE")
                        try Self.require(ipc_setopt_pointer(raw, CURLOPT_POSTFIELDS, pointer), "CURLOPT_POSTFIELDS")
                        if request.method != "POST" {
                            try Self.require(ipc_setopt_string(raw, CURLOPT_CUSTOMREQUEST, request.method), "CURLOPT_CUSTOMREQUEST")
                        }
                    }
                    BlockingIO.mayBlock("curl \(request.method)")
                    return curl_easy_perform(raw)
                }
            }.get()
        }

        var connects = 0
        ipc_getinfo_long(raw, CURLINFO_NUM_CONNECTS, &connects)
        guard code == CURLE_OK else {
            if state.refused { throw .tooLarge(declaredLength: state.declaredLength, limit: state.bodyLimit) }
            let detail = String(cString: errorBuffer)
            let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            throw TransportError(code: Int(code.rawValue), message: message)
        }
        var status = 0
        ipc_getinfo_long(raw, CURLINFO_RESPONSE_CODE, &status)
        return (HTTPResponse(status: status, headers: state.headers, body: state.body), connects)
    }

    /// A non-null pointer for empty bodies: a null POSTFIELDS would make libcurl look for a read callback.
    nonisolated(unsafe) private static let emptyBody = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    private static let receiveBody: curl_write_callback = { data, size, count, context in
        let state = Unmanaged<TransferState>.fromOpaque(context!).takeUnretainedValue()
        let length = size * count
        guard let data, length > 0 else { return length }
        // Beyond what the request accepts (small XML or JSON for uploads, the size limit for a
        // source): stop reading it.
        guard state.body.count + length <= state.bodyLimit else {
            state.refused = true
            return 0
        }
        data.withMemoryRebound(to: UInt8.self, capacity: length) { state.body.append($0, count: length) }
        return length
    }

    private static let receiveHeader: curl_write_callback = { data, size, count, context in
        let state = Unmanaged<TransferState>.fromOpaque(context!).takeUnretainedValue()
        let length = size * count
        guard let data, length > 0 else { return length }
        let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }.trimmingCharacters(in: .whitespacesAndNewlines)
        if line.hasPrefix("HTTP/") {
            // A new status line (after 100 Continue): only the final response's headers count.
            state.headers.removeAll()
        } else if let colon = line.firstIndex(of: ":") {
            let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            state.headers.append((name, value))
            if state.checksDeclaredLength, name.caseInsensitiveCompare("Content-Length") == .orderedSame, let length = Int(value) {
                state.declaredLength = length
                // Refused from its declared length, before any of the body is read.
                guard length <= state.bodyLimit else {
                    state.refused = true
                    return 0
                }
                state.body.reserveCapacity(length)
            }
        }
        return length
    }

    /// Fails, naming the option, when libcurl refuses it (a protocol or TLS setting this libcurl was
    /// built without, a value out of range): a request must never go out with a setting silently dropped.
    private static func require(_ code: CURLcode, _ option: String) throws(TransportError) {
        guard code != CURLE_OK else { return }
        throw TransportError(code: Int(code.rawValue), message: "libcurl refused \(option): \(String(cString: curl_easy_strerror(code)))")
    }
}

/// What the callbacks of one transfer collect. Only touched by the thread running the transfer.
private final class TransferState {
    var body = Data()
    var headers: [(name: String, value: String)] = []
    let bodyLimit: Int
    /// Whether a Content-Length is checked against the limit (not for HEAD, whose answer has no body).
    let checksDeclaredLength: Bool
    var declaredLength: Int?
    /// Whether the answer was abandoned for its length.
    var refused = false

    init(bodyLimit: Int, checksDeclaredLength: Bool) {
        self.bodyLimit = bodyLimit
        self.checksDeclaredLength = checksDeclaredLength
    }
}

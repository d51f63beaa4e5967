// The HOST:PORT of --metrics-address, parsed and checked before anything starts.
public import ImagePipe

/// Where the monitoring endpoints listen: `127.0.0.1:9464`, `[::1]:9464`, `:9464` (every interface).
public struct MonitoringAddress: Sendable, Equatable, CustomStringConvertible {
    /// The address to bind (`0.0.0.0` when none was given).
    public let host: String
    /// The port; 0 lets the system choose one (logged once bound).
    public let port: Int

    /// Parses `HOST:PORT`; an IPv6 host goes in brackets.
    ///
    /// - Throws: `configuration` naming the text and what is wrong.
    public init(parsing text: String) throws(ImagePipeError) {
        let invalid = ImagePipeError.configuration(
            "--metrics-address '\(text)' is not HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464, :9464 for every interface)")
        guard let colon = text.lastIndex(of: ":") else { throw invalid }
        var host = String(text[..<colon])
        guard let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { throw invalid }
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { throw invalid }
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            throw invalid
        }
        self.host = host.isEmpty ? "0.0.0.0" : host
        self.port = port
    }

    /// `HOST:PORT`, with brackets around an IPv6 host.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

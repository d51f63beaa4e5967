// A second "host" on this machine: a network namespace joined to this one by a veth pair, whose link can be cut.
import Foundation
import ImagePipeTestSupport

/// A network namespace with one veth link to the test's own namespace, on a /24 of its own.
///
/// A process started in it (``launcher``) reaches this namespace only over that link, at
/// ``hostAddress``; ``cut()`` takes the link down as a pulled cable would (packets vanish, no reset),
/// ``restore()`` brings it back. Removed, with its link, when the value goes away.
final class NetworkNamespace: Sendable {
    let name: String
    /// This namespace's end of the link, as seen from the other host.
    let hostAddress: String
    private let hostInterface: String

    private static let ip = RequiredTool.ip.path ?? "/usr/sbin/ip"

    init() throws {
        let tag = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let subnet = "10.\(Int.random(in: 100...250)).\(Int.random(in: 1...250))"
        name = "imagepipe-" + tag
        hostInterface = "iph" + tag
        hostAddress = subnet + ".1"
        let other = "ipw" + tag
        try Self.ip(["netns", "add", name])
        do {
            try Self.ip(["link", "add", hostInterface, "type", "veth", "peer", "name", other])
            try Self.ip(["link", "set", other, "netns", name])
            try Self.ip(["addr", "add", hostAddress + "/24", "dev", hostInterface])
            try Self.ip(["link", "set", hostInterface, "up"])
            try Self.ip(["-n", name, "addr", "add", subnet + ".2/24", "dev", other])
            try Self.ip(["-n", name, "link", "set", other, "up"])
            try Self.ip(["-n", name, "link", "set", "lo", "up"])
        } catch {
            _ = try? Self.ip(["netns", "del", name])
            throw error
        }
    }

    deinit {
        _ = try? Self.ip(["link", "del", hostInterface])
        _ = try? Self.ip(["netns", "del", name])
    }

    /// What runs a program inside the namespace.
    var launcher: [String] { [Self.ip, "netns", "exec", name] }

    /// Takes the link down: the other host's packets are dropped from now on.
    func cut() throws { try Self.ip(["link", "set", hostInterface, "down"]) }

    /// Brings the link back up.
    func restore() throws { try Self.ip(["link", "set", hostInterface, "up"]) }

    @discardableResult
    private static func ip(_ arguments: [String]) throws -> String {
        let output = try CommandRunner.run(executable: ip, arguments)
        guard output.status == 0 else {
            throw NamespaceError(message: "ip \(arguments.joined(separator: " ")) failed: \(output.stderr)")
        }
        return output.stdout
    }

    struct NamespaceError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}

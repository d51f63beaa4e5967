// Who the image helpers run as when their worker runs as root: never root themselves.
public import Foundation

/// The user and group a root worker's zygote and image helpers switch to before they touch anything.
///
/// A worker run as root (containers, `make demo`, many servers) would otherwise give its helpers
/// root's capabilities, confined by the filter and Landlock alone: one that an exploit took over
/// could use whatever those leave open with root's rights. So the helpers give up every privilege
/// first, switching to an unprivileged user: the one `--helper-user` names, else the Debian package's
/// `imagepipe` system user where it exists, else `nobody` (with `nogroup`). A worker that is not
/// root keeps its user for its helpers, which only clear any capability it was given.
public struct HelperIdentity: Sendable, Codable, Equatable, CustomStringConvertible {
    /// The user's name, or its number when it has none.
    public var user: String
    public var uid: UInt32
    public var gid: UInt32

    public init(user: String, uid: UInt32, gid: UInt32) {
        self.user = user
        self.uid = uid
        self.gid = gid
    }

    public var description: String { "\(user) (\(uid):\(gid))" }

    /// The users tried, in order, when `--helper-user` is not given.
    public static let defaultUsers = ["imagepipe", "nobody"]

    /// The identity a worker's helpers switch to: nil when this process holds no privilege (the
    /// helpers keep its user; `option` is still checked), else the user `option` names (`NAME`,
    /// `UID` or `UID:GID`), or the first of ``defaultUsers`` that exists, or 65534:65534 where
    /// neither does.
    ///
    /// - Throws: a message when `option` names no user, or names root.
    public static func resolve(_ option: String?, privileged: Bool = Sandbox.holdsPrivilege) throws(Refusal) -> HelperIdentity? {
        guard privileged || option != nil else { return nil }
        // Checked whoever runs it, so that a mistake in a configuration shows before it runs as root.
        let identity: HelperIdentity
        if let option {
            identity = try named(option)
        } else {
            identity = defaultUsers.lazy.compactMap(lookUp(name:)).first ?? HelperIdentity(user: "65534", uid: 65534, gid: 65534)
        }
        guard identity.uid != 0, identity.gid != 0 else {
            throw Refusal(
                message: "--helper-user must name a user other than root: '\(option ?? identity.user)' is uid \(identity.uid) gid \(identity.gid)")
        }
        // A process without privilege cannot switch users: its helpers keep its own.
        return privileged ? identity : nil
    }

    /// Why an identity cannot be used.
    public struct Refusal: Error, Sendable {
        public let message: String
    }

    /// A user by name, by number, or a number pair; its primary group unless one is given.
    static func named(_ option: String) throws(Refusal) -> HelperIdentity {
        let parts = option.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 2, let first = parts.first, !first.isEmpty else {
            throw Refusal(message: "--helper-user takes NAME, UID or UID:GID, not '\(option)'")
        }
        var identity: HelperIdentity
        if let uid = UInt32(first) {
            identity = lookUp(uid: uid) ?? HelperIdentity(user: first, uid: uid, gid: uid)
        } else if let found = lookUp(name: first) {
            identity = found
        } else {
            throw Refusal(message: "--helper-user names '\(first)', which is no user on this system")
        }
        if parts.count == 2 {
            guard let gid = UInt32(parts[1]) else { throw Refusal(message: "--helper-user's group must be a number, not '\(parts[1])'") }
            identity.gid = gid
        }
        return identity
    }

    static func lookUp(name: String) -> HelperIdentity? {
        entry { getpwnam_r(name, &$0, $1, $2, &$3) }
    }

    static func lookUp(uid: UInt32) -> HelperIdentity? {
        entry { getpwuid_r(uid, &$0, $1, $2, &$3) }
    }

    /// A passwd entry read with a reentrant call (NSS answers in the buffer given).
    private static func entry(
        _ call: (inout passwd, UnsafeMutablePointer<CChar>, Int, inout UnsafeMutablePointer<passwd>?) -> Int32
    ) -> HelperIdentity? {
        var record = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        let status = buffer.withUnsafeMutableBufferPointer { call(&record, $0.baseAddress!, $0.count, &found) }
        guard status == 0, found != nil, let name = record.pw_name else { return nil }
        return HelperIdentity(user: String(cString: name), uid: record.pw_uid, gid: record.pw_gid)
    }
}

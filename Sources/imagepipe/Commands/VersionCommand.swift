// `imagepipe version`: the version, and with --verbose the image libraries linked and the sandbox this kernel allows.
import ArgumentParser
import CSandbox
import Foundation
import ImagePipe
import ImagePipeSandbox
import ImagePipeVips

/// Prints imagepipe's version; with `--verbose`, the version of each image library a helper decodes
/// with, as loaded here (and, on Debian, the package and the security update it came from), and
/// what the sandbox does on this kernel.
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "Print imagepipe's version; with --verbose, the image libraries it decodes with and what the sandbox does on this kernel.")

    @Flag(name: .long, help: "Also the image libraries as loaded (file, version, Debian package) and the sandbox this kernel allows.")
    var verbose = false

    @Option(
        name: .customLong("helper-user"),
        help: ArgumentHelp("The user image helpers would run as, as batch and watch take it.", valueName: "user"))
    var helperUser: String?

    /// The libraries a helper decodes and encodes with (their file names' beginnings): libvips and the
    /// codecs under it, whose security updates matter.
    static let imageLibraries = [
        "libvips.", "libheif.", "libde265.", "libdav1d.", "libaom.", "libavif.", "libjpeg.", "libpng16.", "libspng.", "libtiff.",
        "libwebp.", "libwebpdemux.", "libwebpmux.", "libsharpyuv.", "libgif.", "libcgif.", "libexif.", "liblcms2.", "libjxl.",
        "libjxl_threads.", "libhwy.", "libimagequant.", "liborc-0.4.", "libexpat.", "libz.",
    ]

    func run() throws {
        print("imagepipe \(ImagePipeCommand.configuration.version)")
        guard verbose else { return }
        // Started as a helper starts it: the same libraries and modules load.
        do {
            try Vips.configure(threadsPerImage: 1)
        } catch {
            throw ImagePipeError.configuration(error.reason)
        }
        let files = Vips.loadedLibraries.filter { file in
            Self.imageLibraries.contains { (file as NSString).lastPathComponent.hasPrefix($0) }
        }
        let packages = Self.debianPackages(of: files)
        print("image libraries (as a helper loads them):")
        for file in files {
            let real =
                (try? FileManager.default.destinationOfSymbolicLink(atPath: file)).map {
                    $0.hasPrefix("/") ? $0 : ((file as NSString).deletingLastPathComponent as NSString).appendingPathComponent($0)
                } ?? file
            let name = (real as NSString).lastPathComponent
            let base = name.components(separatedBy: ".so").first ?? name
            let package = packages[file].map { "Debian \($0)" } ?? "not from a Debian package"
            print("  \(base)\(base == "libvips" ? " " + Vips.version : ""): \(package), \(real)")
        }
        let support = ips_sandbox_support()
        print("sandbox on this kernel:")
        print(
            "  seccomp: "
                + (support.seccomp_filters != 0 ? "filters that trap and refuse (an allow-list of \(support.allowed_calls) calls)" : "not available"))
        print("  Landlock: " + (support.landlock_abi > 0 ? "ABI \(support.landlock_abi)" : "not available (seccomp alone)"))
        let identity: HelperIdentity?
        do {
            identity = try HelperIdentity.resolve(helperUser)
        } catch {
            throw ImagePipeError.configuration(error.message)
        }
        if let identity {
            print("  image helpers run as: \(identity), no capability (this process holds privilege)")
        } else {
            print("  image helpers run as: this user (uid \(getuid())), no capability")
        }
    }

    /// The Debian package and version of each file, as dpkg knows them; none where dpkg does not.
    static func debianPackages(of files: [String]) -> [String: String] {
        guard !files.isEmpty, let owners = output("dpkg-query", ["-S"] + files.flatMap { [$0, usrMerged($0)] }) else { return [:] }
        // "libheif1:amd64: /usr/lib/x86_64-linux-gnu/libheif.so.1.15.1"
        var packageOf: [String: String] = [:]
        for line in owners.split(separator: "\n") {
            guard let separator = line.range(of: ": ") else { continue }
            let package = String(line[..<separator.lowerBound])
            let path = String(line[separator.upperBound...])
            if let file = files.first(where: { $0 == path || usrMerged($0) == path }) { packageOf[file] = package }
        }
        let names = Set(packageOf.values).sorted()
        guard !names.isEmpty, let versions = output("dpkg-query", ["-W", "-f", "${binary:Package} ${Version}\n"] + names) else { return [:] }
        var versionOf: [String: String] = [:]
        for line in versions.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2 { versionOf[String(parts[0])] = String(parts[1]) }
        }
        return packageOf.mapValues { package in
            let name = package.components(separatedBy: ":")[0]
            return "\(name) \(versionOf[package] ?? versionOf[name] ?? "?")"
        }
    }

    /// `/lib/x86_64-linux-gnu/libz.so.1` as dpkg may know it on a merged /usr, and the other way round.
    static func usrMerged(_ path: String) -> String {
        path.hasPrefix("/usr/") ? String(path.dropFirst(4)) : "/usr" + path
    }

    /// What a program printed (its errors ignored: dpkg-query names what it knows, and says so of the rest).
    static func output(_ program: String, _ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [program] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}

// The hostile libvips module the tests run inside real image helpers, built from module/ with the system's compiler.
import Foundation
import ImagePipeTestSupport
import Testing

/// A `VIPSHOME` of the tests' own: `module/hostile-module.c` installed as the JPEG XL module (one of
/// the two modules imagepipe loads, by name), Debian's HEIC module beside it, and a module that must
/// never be loaded (`module/extra-module.c`). A worker started with `VIPSHOME` set to it runs the
/// hostile code in its zygote as libvips starts, and in every helper as libvips picks a loader.
enum HostileModule {
    /// The VIPSHOME folder, built once per test process; the reason when it cannot be.
    static let home: Result<String, Failure> = build()

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private static func build() -> Result<String, Failure> {
        let sources = Fixtures.repository + "/Tests/ImagePipeHostileHelperTests/module"
        let home = FileManager.default.temporaryDirectory.path + "/imagepipe-hostile-vipshome-\(getpid())"
        // libvips looks for its modules in <VIPSHOME>/<its library folder's name>/vips-modules-MAJOR.MINOR
        // (Debian's: x86_64-linux-gnu).
        guard let version = CommandRunner.output(of: "pkg-config", ["--modversion", "vips"]),
            let libdir = CommandRunner.output(of: "pkg-config", ["--variable=libdir", "vips"])
        else {
            return .failure(Failure(description: "pkg-config does not know vips: make deps installs libvips-dev"))
        }
        let series = version.split(separator: ".").prefix(2).joined(separator: ".")
        let modules = "\(home)/\((libdir as NSString).lastPathComponent)/vips-modules-\(series)"
        try? FileManager.default.createDirectory(atPath: modules, withIntermediateDirectories: true)
        let compile: [(source: String, output: String, package: String)] = [
            ("hostile-module.c", "vips-jxl.so", "vips"), ("extra-module.c", "vips-extra.so", "gmodule-2.0"),
        ]
        for (source, output, package) in compile {
            let script =
                "exec cc -O1 -shared -fPIC $(pkg-config --cflags \(package)) '\(sources)/\(source)' -o '\(modules)/\(output)' $(pkg-config --libs \(package))"
            guard let run = try? CommandRunner.run(executable: "/bin/sh", ["-c", script]), run.status == 0 else {
                return .failure(Failure(description: "cannot build \(source): the tests need cc and libvips-dev"))
            }
        }
        // The real HEIC module, from the folder libvips loads its own from.
        let heif = "\(libdir)/vips-modules-\(series)/vips-heif.so"
        try? FileManager.default.removeItem(atPath: "\(modules)/vips-heif.so")
        guard (try? FileManager.default.createSymbolicLink(atPath: "\(modules)/vips-heif.so", withDestinationPath: heif)) != nil else {
            return .failure(Failure(description: "cannot link \(heif)"))
        }
        return .success(home)
    }

    /// The environment a worker runs with the hostile module in.
    static func environment() throws -> [String: String] {
        ["VIPSHOME": try home.get()]
    }

    /// A JPEG whose first segment is a comment asking the module for `action` (and `argument`):
    /// `fixture`'s bytes with `IMAGEPIPE-HOSTILE:action[:argument]` after its start marker.
    static func image(_ action: String, _ argument: String? = nil, fixture: String = "images/formats/landscape.jpg") -> Data {
        let image = Fixtures.data(fixture)
        let text = Data(("IMAGEPIPE-HOSTILE:" + action + (argument.map { ":" + $0 } ?? "")).utf8)
        let segment = Data([0xFF, 0xFE, UInt8((text.count + 2) >> 8), UInt8((text.count + 2) & 0xFF)]) + text
        return image.prefix(2) + segment + image.dropFirst(2)
    }

    /// What the module wrote in the log of a worker (each line the worker logged as its helpers'
    /// output that starts with `hostile KIND:`), with the helper's pid.
    static func lines(_ kind: String, in log: String) -> [(pid: String, text: String)] {
        log.split(separator: "\n").compactMap { line -> (String, String)? in
            guard line.contains("image helper output"), let start = line.range(of: "line=\"hostile \(kind): ") else { return nil }
            let text = String(line[start.upperBound...].prefix { $0 != "\"" })
            let pid = line.range(of: "helper_pid=").map { String(line[$0.upperBound...].prefix { $0.isNumber }) } ?? ""
            return (pid, text)
        }
    }

    /// The `key=value` fields of a line the module wrote.
    static func fields(_ text: String) -> [String: String] {
        Dictionary(
            text.split(separator: " ").compactMap { field -> (String, String)? in
                let parts = field.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            }, uniquingKeysWith: { first, _ in first })
    }
}

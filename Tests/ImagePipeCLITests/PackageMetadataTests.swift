// The Debian package's metadata and the manual, checked on a package made from the built binary by the Makefile's own steps.
import Foundation
import ImagePipeTestSupport
import Testing

extension RequiredTool {
    static let dpkgShlibdeps = RequiredTool("dpkg-shlibdeps", at: "/usr/bin/dpkg-shlibdeps", package: "dpkg-dev")
    static let groff = RequiredTool("groff", at: "/usr/bin/groff", package: "groff-base")
    static let make = RequiredTool("make", at: "/usr/bin/make", package: "make")
}

/// What someone adopting imagepipe looks at first: a licence, a package with a real maintainer, a
/// copyright file, a manual, and dependencies that bring every library the binary needs.
///
/// `make deb-package` packages the test build's binary exactly as `make deb` packages the static
/// release build (which takes too long to build here); the Swift libraries of the debug build, which
/// no Debian package has, are the only ones left out of its dependencies.
@Suite(.offThePool) struct PackageMetadataTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-package")
    let repository = Fixtures.repository

    @Test func theLicenceIsApache2AtTheTopLevel() throws {
        let licence = try String(contentsOfFile: repository + "/LICENSE", encoding: .utf8)
        #expect(licence.contains("Apache License") && licence.contains("Version 2.0, January 2004"))
        let copyright = try String(contentsOfFile: repository + "/deploy/debian/copyright", encoding: .utf8)
        #expect(copyright.hasPrefix("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"))
        #expect(copyright.contains("Files: *\nCopyright: The imagepipe authors\nLicense: Apache-2.0\n"), "\(copyright)")
    }

    @Test(.requires(.groff)) func theManualNamesEveryCommandAndGroffHasNothingToWarnAbout() throws {
        let manual = repository + "/deploy/imagepipe.1"
        let text = try String(contentsOfFile: manual, encoding: .utf8)
        let help = try CommandRunner.run(["--help"])
        let commands =
            help.stdout.components(separatedBy: "SUBCOMMANDS:").last?.split(separator: "\n").compactMap { line in
                // `  name   what it does`; wrapped descriptions are indented further.
                line.wholeMatch(of: #/  ([a-z]+)  +\S.*/#).map { String($0.output.1) }
            } ?? []
        #expect(commands.count >= 9, "\(help.stdout)")
        for command in commands where command != "help" {
            #expect(text.contains(".B \(command)\n"), "the manual has a paragraph for \(command)")
        }
        let check = try CommandRunner.run(executable: RequiredTool.groff.located(), ["-man", "-Tutf8", "-ww", "-z", manual])
        #expect(check.status == 0 && check.stderr.isEmpty, "\(check.stderr)")
    }

    @Test(.requires(.dpkgShlibdeps, .make))
    func thePackageHasAMaintainerItsCopyrightAManualAndEveryLinkedLibrarysPackage() throws {
        let output = directory.url("deb")
        let make = try CommandRunner.run(
            executable: RequiredTool.make.located(),
            [
                "-C", repository, "--no-print-directory", "deb-package", "DEB_BIN=\(CommandRunner.binary)", "DEB_DIR=\(output)",
                "DEB_SHLIBDEPS_FLAGS=--ignore-missing-info", "DPKG_DEB_FLAGS=-Znone",
            ])
        #expect(make.status == 0, "\(make.stdout.suffix(3000)) \(make.stderr.suffix(3000))")
        let package = try #require(
            try FileManager.default.contentsOfDirectory(atPath: output).first { $0.hasSuffix(".deb") }.map { output + "/" + $0 })
        func field(_ name: String) throws -> String {
            try CommandRunner.run(executable: "/usr/bin/dpkg-deb", ["--field", package, name]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try field("Maintainer") == "imagepipe maintainers <maintainers@imagepipe.invalid>")
        let contents = try CommandRunner.run(executable: "/usr/bin/dpkg-deb", ["--contents", package]).stdout
        for path in ["./usr/share/doc/imagepipe/copyright", "./usr/share/man/man1/imagepipe.1.gz", "./usr/bin/imagepipe"] {
            #expect(contents.contains(" \(path)\n"), "\(path) in\n\(contents)")
        }
        // The manual is the committed one, gzipped.
        let manual = try CommandRunner.run(executable: "/bin/sh", ["-c", "gzip -dc \(output)/root/usr/share/man/man1/imagepipe.1.gz"])
        #expect(manual.stdout == (try String(contentsOfFile: repository + "/deploy/imagepipe.1", encoding: .utf8)))

        // Every library the binary names (DT_NEEDED) that a Debian package has: that package is a dependency.
        let depends = Set(
            try field("Depends").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).prefix { $0 != " " && $0 != ":" } }.map(
                String.init))
        let needed = try CommandRunner.run(executable: "/bin/sh", ["-c", "objdump -p \(CommandRunner.binary) | awk '/NEEDED/ { print $2 }'"])
            .stdout.split(separator: "\n").map(String.init)
        let resolved = try CommandRunner.run(executable: "/usr/bin/ldd", [CommandRunner.binary]).stdout
        #expect(needed.contains("libjpeg.so.62") && needed.contains("libvips.so.42"), "\(needed)")
        let lines = resolved.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        for library in needed {
            // `libvips.so.42 => /lib/.../libvips.so.42 (0x...)`, or the loader's `/lib64/ld-linux-x86-64.so.2 (0x...)`.
            let path = try #require(
                lines.compactMap { line -> String? in
                    let fields = line.split(separator: " ").map(String.init)
                    if fields.first == library, fields.count > 2, fields[1] == "=>" { return fields[2] }
                    return fields.first.flatMap { $0.hasSuffix("/" + library) ? $0 : nil }
                }.first, "\(library) in \(resolved)")
            // The file as dpkg knows it: through links, and under /usr where /lib is a link to it.
            let owner = try CommandRunner.run(
                executable: "/bin/sh", ["-c", "dpkg -S \"$1\" 2>/dev/null || dpkg -S \"$(realpath \"$1\")\"", "sh", path])
            guard owner.status == 0, let name = owner.stdout.split(separator: ":").first.map(String.init) else {
                // Only the debug build's Swift runtime comes from outside Debian; the static release links it in.
                #expect(
                    library.hasPrefix("libswift") || library.contains("Foundation") || library.hasPrefix("libdispatch")
                        || library.hasPrefix("libBlocksRuntime") || library.hasPrefix("libTesting"),
                    "\(library) (\(path)) belongs to no package")
                continue
            }
            #expect(depends.contains(name), "\(library) comes from \(name), which Depends lacks: \(depends.sorted())")
        }
        #expect(depends.contains("passwd"), "postinst runs useradd")

        // Each image library at least at its security update (deploy/debian/decoder-minimums), also
        // those libvips loads rather than imagepipe itself.
        let line = try field("Depends")
        let floors = try String(contentsOfFile: repository + "/deploy/debian/decoder-minimums", encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(floors.count >= 6 && floors.contains { $0.first == "libde265-0" } && floors.contains { $0.first == "libvips42" })
        for floor in floors where floor.count >= 2 {
            #expect(line.contains("\(floor[0]) (>= \(floor[1]))"), "\(floor[0]) \(floor[1]) in \(line)")
        }
    }
}

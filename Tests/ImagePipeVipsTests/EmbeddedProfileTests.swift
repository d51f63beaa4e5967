// Embedded ICC profiles: converted to sRGB unless they are sRGB, checked against an independent colour engine.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

@Suite struct EmbeddedProfileTests {
    /// Profiles written by the script below, and whether imagepipe should take each for sRGB.
    static let profiles: [(name: String, isSRGB: Bool)] = [
        ("srgb-parametric", true),  // LittleCMS' own sRGB: parametric tone curves
        ("srgb-table", true),  // sRGB's curve as a 1024-entry table, as most cameras' profiles have it
        ("srgb-gamma22", false),  // sRGB's primaries with a plain 2.2 gamma
        ("srgb-red-shifted", false),  // sRGB's curves with a redder red
    ]

    /// Builds each profile from LittleCMS' sRGB (through Pillow), embeds it in landscape.jpg as
    /// one APP2 segment, and converts that JPEG to sRGB with LittleCMS, saved as a PNG.
    static let script = """
        import io, struct, sys
        from PIL import Image, ImageCms
        out, photo = sys.argv[1], sys.argv[2]
        base = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()

        def rebuilt(replace):
            count = struct.unpack(">I", base[128:132])[0]
            tags = [struct.unpack(">4sII", base[132 + 12 * i:144 + 12 * i]) for i in range(count)]
            data = {sig: replace.get(sig, base[offset:offset + size]) for sig, offset, size in tags}
            body, table, offset = b"", b"", 132 + 12 * count
            for sig, _, _ in tags:
                chunk = data[sig] + b"\\0" * (-len(data[sig]) % 4)
                table += struct.pack(">4sII", sig, offset + len(body), len(data[sig]))
                body += chunk
            profile = bytearray(base[:128] + struct.pack(">I", count) + table + body)
            profile[0:4] = struct.pack(">I", len(profile))
            profile[84:100] = bytes(16)  # the profile ID no longer matches; zero means none
            return bytes(profile)

        def srgb(x):
            return x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4

        table = b"curv" + bytes(4) + struct.pack(">I", 1024) + b"".join(
            struct.pack(">H", round(srgb(i / 1023) * 65535)) for i in range(1024))
        gamma = b"curv" + bytes(4) + struct.pack(">IH", 1, 0x0233)
        red = b"XYZ " + bytes(4) + struct.pack(">iii", round(0.4800 * 65536), round(0.2300 * 65536), round(0.0139 * 65536))
        profiles = {
            "srgb-parametric": base,
            "srgb-table": rebuilt({b"rTRC": table, b"gTRC": table, b"bTRC": table}),
            "srgb-gamma22": rebuilt({b"rTRC": gamma, b"gTRC": gamma, b"bTRC": gamma}),
            "srgb-red-shifted": rebuilt({b"rXYZ": red}),
        }
        jpeg = open(photo, "rb").read()
        for name, profile in profiles.items():
            payload = b"ICC_PROFILE\\0\\x01\\x01" + profile
            with open(f"{out}/{name}.jpg", "wb") as f:
                f.write(jpeg[:2] + b"\\xff\\xe2" + struct.pack(">H", len(payload) + 2) + payload + jpeg[2:])
            image = Image.open(f"{out}/{name}.jpg")
            ImageCms.profileToProfile(image, ImageCms.ImageCmsProfile(io.BytesIO(profile)), ImageCms.createProfile("sRGB"),
                renderingIntent=ImageCms.Intent.RELATIVE_COLORIMETRIC, outputMode="RGB").save(f"{out}/{name}.png")
        """

    @Test func eachProfileIsConvertedFromOrRecognisedAsSRGB() throws {
        let directory = TemporaryDirectory()
        _ = try PythonOracle.run(Self.script, [directory.path, Fixtures.path("images/formats/landscape.jpg")])
        let lossless = [Fixtures.variant("c=4000x4000,png")]
        let jpeg = [Fixtures.variant("photo=4000x4000,jpeg,q80")]
        let raw = try VipsProbe.decode(Fixtures.data("images/formats/landscape.jpg"))
        for (name, isSRGB) in Self.profiles {
            let source = try Data(contentsOf: URL(fileURLWithPath: "\(directory.path)/\(name).jpg"))
            let oracle = try VipsProbe.decode(Data(contentsOf: URL(fileURLWithPath: "\(directory.path)/\(name).png")))
            let output = try VipsProbe.decode(Fixtures.compress(bytes: source, lossless).variants[0].data)
            // Whether converted or recognised as sRGB and left alone, the colours are LittleCMS' conversion's.
            let difference = try #require(output.meanAbsoluteDifference(to: oracle))
            #expect(difference < 0.3, "\(name): differs from the conversion by \(difference)")
            // The profiles that are not sRGB change the colours enough for the check to see it.
            let conversion = try #require(raw.meanAbsoluteDifference(to: oracle))
            #expect(isSRGB ? conversion < 0.3 : conversion > 1, "\(name): the conversion moves colours by \(conversion)")
            // An sRGB-tagged JPEG that needs no resizing takes the direct path; the others go through libvips.
            let direct = Fixtures.compressor.compressDirectly(
                SourceImage(name: name, content: .bytes(source)), variants: jpeg, limits: .default, memory: .unlimited)
            #expect((direct != nil) == isSRGB, "\(name)")
        }
    }

    /// Profiles no colour engine can read: bytes that are no profile, and a profile header
    /// (RGB, `acsp`) whose tag table runs past its end, as a truncated file would have it.
    static let unreadableProfiles: [(name: String, bytes: [UInt8])] = {
        let noise = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        var header = [UInt8](repeating: 0, count: 132)
        header[0..<4] = [0, 0, 0x01, 0x00]  // claims 256 bytes
        header[8..<12] = [0x02, 0x10, 0, 0]
        header[12..<16] = ArraySlice("mntr".utf8)
        header[16..<20] = ArraySlice("RGB ".utf8)
        header[20..<24] = ArraySlice("XYZ ".utf8)
        header[36..<40] = ArraySlice("acsp".utf8)
        header[128..<132] = [0, 0, 0, 40]  // 40 tags, and no room for them
        return [("noise", noise), ("truncated", header)]
    }()

    @Test(arguments: unreadableProfiles.map(\.name))
    func aProfileThatCannotBeReadLeavesTheColoursAsTheyAre(_ name: String) throws {
        // An APP2 segment labelled as an ICC profile that cannot be read (mangled, or cut short, as
        // some editors write them): the image is made, its values taken as sRGB.
        let profile = try #require(Self.unreadableProfiles.first { $0.name == name }).bytes
        let jpeg = Fixtures.data("images/formats/landscape.jpg")
        let payload = [UInt8]("ICC_PROFILE".utf8) + [0, 1, 1] + profile
        let length = payload.count + 2
        let source = jpeg.prefix(2) + Data([0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)] + payload) + jpeg.dropFirst(2)
        let result = try Fixtures.compress(bytes: source, [Fixtures.variant("c=4000x4000,png")])
        let output = try VipsProbe.decode(result.variants[0].data)
        let raw = try VipsProbe.decode(jpeg)
        let difference = try #require(output.meanAbsoluteDifference(to: raw))
        #expect(difference < 0.01, "\(name): the values are kept as they are (\(difference))")
        let resized = try Fixtures.compress(bytes: source, [Fixtures.variant("small=200x200,jpeg,q80")])
        #expect(resized.variants.count == 1, "\(name): a resized variant is made too")
    }
}

// The watermark as variant options and settings: parsed, written into the fingerprint, and placed on an output.
import ImagePipe
import Testing

@Suite struct WatermarkSpecTests {
    let watermark = Watermark(logoSHA256: String(repeating: "ab", count: 32))

    @Test func aVariantTakesTheWatermarkLeavesItOutOrSetsItsSize() throws {
        let standard = try VariantSpec(parsing: "m=1024x1024,webp,q78")
        let none = try VariantSpec(parsing: "t=320x320,webp,q70,cover,nowatermark")
        let small = try VariantSpec(parsing: "m=1024x1024,webp,q78,Watermark=0.1")
        #expect(standard.watermarkChoice == .standard && none.watermarkChoice == .off && small.watermarkChoice == .size(0.1))
        for spec in [standard, none, small] {
            #expect(try VariantSpec(parsing: spec.specString) == spec, "\(spec.specString)")
        }
        #expect(none.specString == "t=320x320,webp,q70,cover,nowatermark")
        #expect(small.specString == "m=1024x1024,webp,q78,watermark=0.1")

        #expect(standard.applying(watermark).watermark == watermark)
        #expect(none.applying(watermark).watermark == nil)
        #expect(small.applying(watermark).watermark?.size == 0.1)
        #expect(small.applying(nil).watermark == nil, "a size with no --watermark draws nothing (the command refuses it)")
    }

    /// The fingerprint is what decides a re-run: the logo and its settings are in it, the variant's
    /// own watermark option is not (only what it gives), so a variant without a watermark keeps the
    /// fingerprint outputs made before watermarks existed have.
    @Test func theFingerprintHoldsTheWatermarkAVariantGets() throws {
        let plain = try VariantSpec(parsing: "t=320x320,webp,q70,cover")
        #expect(plain.fingerprint == "t=320x320,webp,q70,cover")
        #expect(try VariantSpec(parsing: "t=320x320,webp,q70,cover,nowatermark").applying(watermark).fingerprint == plain.fingerprint)

        let marked = plain.applying(watermark).fingerprint
        #expect(marked == "t=320x320,webp,q70,cover,watermark=sha256:\(watermark.logoSHA256):southeast:margin=auto:opacity=0.6:size=0.2")
        #expect(try VariantSpec(parsing: "t=320x320,webp,q70,cover,watermark=0.2").applying(watermark).fingerprint == marked)
        var changes: [Watermark] = []
        for change in [
            { (w: inout Watermark) in w.logoSHA256 = String(repeating: "cd", count: 32) }, { $0.position = .north }, { $0.margin = 4 },
            { $0.opacity = 0.5 }, { $0.size = 0.25 },
        ] {
            var changed = watermark
            change(&changed)
            changes.append(changed)
        }
        let fingerprints = Set(changes.map { plain.applying($0).fingerprint } + [marked])
        #expect(fingerprints.count == changes.count + 1, "every setting changes the fingerprint")
    }

    @Test(arguments: [
        ("t=10x10,jpeg,q80,watermark=0", "above 0"), ("t=10x10,jpeg,q80,watermark=1.5", "at most 1"),
        ("t=10x10,jpeg,q80,watermark=big", "fraction"), ("t=10x10,jpeg,q80,nowatermark,watermark=0.1", "one of"),
    ])
    func badWatermarkOptionsAreRefusedWithTheirReason(_ text: String, _ reason: String) {
        do {
            _ = try VariantSpec(parsing: text)
            Issue.record("\(text) must be refused")
        } catch {
            #expect(error.code == .configuration && error.reason.contains(text) && error.reason.contains(reason), "\(error)")
        }
    }

    @Test func badSettingsAreRefused() {
        for bad in [
            Watermark(logoSHA256: "", position: .attention), Watermark(logoSHA256: "", margin: -1), Watermark(logoSHA256: "", opacity: 1.2),
            Watermark(logoSHA256: "", size: 0),
        ] {
            #expect(throws: ImagePipeError.self) { try bad.check() }
        }
    }

    /// Scaled to its share of the width, never enlarged, never past the margins; anchored where
    /// its position says.
    @Test func theLogoIsPlacedAndSizedOnEachOutput() throws {
        let output = PixelSize(width: 1000, height: 500)
        // A fifth of 1000 px: 200x100 from 400x200; the margin 2% of 500 px.
        let corner = try #require(watermark.placement(on: output, logo: PixelSize(width: 400, height: 200)))
        #expect(corner.size == PixelSize(width: 200, height: 100) && corner.left == 1000 - 10 - 200 && corner.top == 500 - 10 - 100)
        // Never enlarged.
        #expect(watermark.placement(on: output, logo: PixelSize(width: 50, height: 20))?.size == PixelSize(width: 50, height: 20))
        // Never taller than fits: a tall logo at the full width is held to the height within the margins.
        var whole = watermark
        whole.size = 1
        whole.margin = 0
        whole.position = .northwest
        let tall = try #require(whole.placement(on: PixelSize(width: 100, height: 50), logo: PixelSize(width: 100, height: 200)))
        #expect(tall.size == PixelSize(width: 25, height: 50) && tall.left == 0 && tall.top == 0)
        var centred = watermark
        centred.position = .centre
        centred.margin = 0
        let middle = try #require(centred.placement(on: output, logo: PixelSize(width: 100, height: 50)))
        #expect(middle.left == 450 && middle.top == 225)
        // Margins that leave no room: nothing drawn.
        var wide = watermark
        wide.margin = 30
        #expect(wide.placement(on: PixelSize(width: 60, height: 200), logo: PixelSize(width: 10, height: 10)) == nil)
    }
}

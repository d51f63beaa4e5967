import ImagePipe
import Testing

@Suite struct VariantSpecTests {
    @Test func parsesTheDocumentedForm() throws {
        let spec = try VariantSpec(parsing: "photo=1600x1200,jpeg,q80")
        #expect(spec == VariantSpec(name: "photo", width: 1600, height: 1200, fit: .inside, format: .jpeg, quality: 80))
        let thumb = try VariantSpec(parsing: "sq=320x320,WEBP,q70,cover")
        #expect(thumb.fit == .cover && thumb.format == .webp && thumb.quality == 70)
        #expect(try VariantSpec(parsing: "a=10x10,jpg,q1").format == .jpeg)
        #expect(try VariantSpec(parsing: "a=10x10,avif,q50").format.fileExtension == "avif")
    }

    @Test func oneSideMayBeLeftOpenAsWithVipsthumbnail() throws {
        let wide = try VariantSpec(parsing: "w=1600x,jpeg,q80")
        #expect(wide.width == 1600 && wide.height == VariantSpec.unbounded && wide.fit == .inside)
        let tall = try VariantSpec(parsing: "t=x1200,webp,q70,inside")
        #expect(tall.width == VariantSpec.unbounded && tall.height == 1200)
        // The open side never limits: a 4000x1000 panorama fits 1600 wide, a 1000x4000 one 1200 high.
        #expect(ResizePlan.outputSize(source: PixelSize(width: 4000, height: 1000), variant: wide) == PixelSize(width: 1600, height: 400))
        #expect(ResizePlan.outputSize(source: PixelSize(width: 1000, height: 4000), variant: wide) == PixelSize(width: 1000, height: 4000))
        #expect(ResizePlan.outputSize(source: PixelSize(width: 1000, height: 4000), variant: tall) == PixelSize(width: 300, height: 1200))
    }

    @Test(arguments: ["w=1600x,jpeg,q80,cover", "t=x1200,png,cover"])
    func coverNeedsBothSides(_ text: String) {
        do {
            _ = try VariantSpec(parsing: text)
            Issue.record("\(text) must be refused")
        } catch {
            #expect(error.code == .configuration && error.reason.contains("cover") && error.reason.contains("both"), "\(error)")
        }
    }

    @Test func pngNeedsNoQuality() throws {
        #expect(
            try VariantSpec(parsing: "thumb=320x320,png")
                == VariantSpec(name: "thumb", width: 320, height: 320, format: .png, quality: VariantSpec.pngQuality))
        #expect(try VariantSpec(parsing: "thumb=320x320,png,cover").fit == .cover)
        #expect(try VariantSpec(parsing: "thumb=320x320,PNG,q9").quality == 9)
    }

    @Test func roundTripsThroughItsSpecString() throws {
        let others = try [
            "a=1600x,jpeg,q80", "b=x1200,avif,q40", "c=320x320,png", "d=320x320,png,q7,cover", "e=x5,png,inside",
            "f=100000x1,webp,q100,cover",
        ].map { (text) throws(ImagePipeError) in try VariantSpec(parsing: text) }
        for spec in Preset.web + others {
            #expect(try VariantSpec(parsing: spec.specString) == spec, "\(spec.specString)")
        }
        #expect(
            others.map(\.specString) == [
                "a=1600x,jpeg,q80", "b=x1200,avif,q40", "c=320x320,png", "d=320x320,png,q7,cover",
                "e=x5,png", "f=100000x1,webp,q100,cover",
            ])
    }

    @Test(arguments: [
        "photo", "=10x10,jpeg,q80", "a b=10x10,jpeg,q80", "a=10,jpeg,q80", "a=0x10,jpeg,q80", "a=10x10,bmp,q80",
        "a=10x10,jpeg,80", "a=10x10,jpeg,q0", "a=10x10,jpeg,q101", "a=10x10,jpeg,q80,fill", "a=10x10,jpeg",
        "a=10x10,jpeg,q80,cover,x", "a=x,png", "a=10x0,png", "a=0x,png", "a=x100001,png", "a=10x10,webp,cover",
        "a=10x10,png,cover,inside", "a=10x10,png,q0",
    ])
    func rejectsMalformedSpecs(_ text: String) {
        #expect(throws: ImagePipeError.self) { try VariantSpec(parsing: text) }
        do { _ = try VariantSpec(parsing: text) } catch { #expect(error.code == .configuration && error.reason.contains(text)) }
    }

    @Test func webPresetIsExactlyTheDocumentedOne() {
        #expect(
            Preset.web.map(\.specString) == [
                "large=2048x2048,jpeg,q82", "medium=1024x1024,webp,q78", "thumb=320x320,webp,q70,cover",
            ])
    }

    @Test func duplicateNamesAreRejected() throws {
        let spec = try VariantSpec(parsing: "a=10x10,png,q1")
        #expect(throws: ImagePipeError.self) { try Preset.validate([spec, spec]) }
        #expect(throws: ImagePipeError.self) { try Preset.validate([]) }
    }
}

@Suite struct VariantSpecOptionTests {
    @Test func autoQualityTakesADefaultOrAGivenTarget() throws {
        let plain = try VariantSpec(parsing: "photo=1600x1600,jpeg,auto")
        #expect(plain.autoTarget == VariantSpec.defaultAutoTarget && plain.isAuto)
        #expect(plain.quality == VariantSpec.autoStart(for: .jpeg, target: VariantSpec.defaultAutoTarget))
        #expect(try VariantSpec(parsing: "m=1024x,webp,AUTO:62.5").autoTarget == 62.5)
        // The target is written out, so the stored fingerprint changes if the default ever does.
        #expect(plain.specString == "photo=1600x1600,jpeg,auto:70")
        #expect(try VariantSpec(parsing: "m=1024x,webp,auto:62.5,inside").specString == "m=1024x,webp,auto:62.5")
    }

    @Test func encoderOptionsParseInAnyOrderAndPrintInOne() throws {
        let jpeg = try VariantSpec(parsing: "hero=2400x1200,jpeg,q80,cover,444,progressive")
        #expect(jpeg.options == EncoderOptions(progressive: true, fullChroma: true) && jpeg.fit == .cover)
        #expect(jpeg.specString == "hero=2400x1200,jpeg,q80,progressive,444,cover")
        let webp = try VariantSpec(parsing: "w=800x,webp,auto:65,effort=6,smart_subsample")
        #expect(webp.options == EncoderOptions(effort: 6, smartSubsample: true) && webp.isAuto)
        #expect(webp.specString == "w=800x,webp,auto:65,smart_subsample,effort=6")
        #expect(try VariantSpec(parsing: "a=x600,avif,q50,effort=0").options.effort(for: .avif) == 0)
        #expect(try VariantSpec(parsing: "a=x600,avif,q50").options.effort(for: .avif) == EncoderOptions.defaultEffort(for: .avif))
        let large = PixelSize(width: 800, height: 600), small = PixelSize(width: 150, height: 100)
        #expect(try VariantSpec(parsing: "b=100x100,jpeg,q70,baseline").options.isProgressive(for: large) == false)
        #expect(try VariantSpec(parsing: "b=100x100,jpeg,q70,progressive").options.isProgressive(for: small))
        // Left out: progressive from 256 px on the longer side, baseline below.
        let unsaid = try VariantSpec(parsing: "b=100x100,jpeg,q70").options
        #expect(unsaid.isProgressive(for: large) && unsaid.isProgressive(for: PixelSize(width: 100, height: 256)))
        #expect(!unsaid.isProgressive(for: small) && !unsaid.isProgressive(for: PixelSize(width: 255, height: 200)))
    }

    @Test func losslessWebPNeedsNoQualityLikePNG() throws {
        let spec = try VariantSpec(parsing: "icon=64x64,webp,lossless")
        #expect(spec.options.lossless && !spec.hasQuality && spec.specString == "icon=64x64,webp,lossless")
    }

    @Test func everyFormOfSpecRoundTripsThroughItsSpecString() throws {
        let texts = [
            "a=1600x,jpeg,auto", "b=x1200,avif,auto:80,444,effort=5", "c=320x320,webp,q60,smart_subsample,cover",
            "d=64x64,webp,q90,lossless", "e=10x10,jpeg,q1,baseline,444", "f=5x5,webp,lossless,effort=0,cover",
        ]
        for spec in try texts.map({ (text) throws(ImagePipeError) in try VariantSpec(parsing: text) }) + Preset.webAuto {
            #expect(try VariantSpec(parsing: spec.specString) == spec, "\(spec.specString)")
        }
    }

    @Test(arguments: [
        "a=10x10,png,auto", "a=10x10,webp,lossless,auto", "a=10x10,jpeg,auto:0", "a=10x10,jpeg,auto:101", "a=10x10,jpeg,auto:x",
        "a=10x10,jpeg,autox", "a=10x10,webp,q80,444", "a=10x10,png,progressive", "a=10x10,webp,q80,progressive",
        "a=10x10,jpeg,q80,effort=3", "a=10x10,webp,q80,effort=7", "a=10x10,avif,q80,effort=10", "a=10x10,avif,q80,effort=",
        "a=10x10,jpeg,q80,progressive,baseline", "a=10x10,jpeg,q80,444,444", "a=10x10,webp,q80,effort=1,effort=2",
        "a=10x10,avif,q80,lossless", "a=10x10,jpeg,q80,cover,inside", "a=10x10,jpeg,progressive",
    ])
    func rejectsOptionsThatDoNotApply(_ text: String) {
        do {
            _ = try VariantSpec(parsing: text)
            Issue.record("\(text) must be refused")
        } catch {
            #expect(error.code == .configuration && error.reason.contains(text), "\(error)")
        }
    }

    @Test func webAutoIsTheWebPresetWithEveryQualityChosen() {
        #expect(
            Preset.webAuto.map(\.specString) == [
                "large=2048x2048,jpeg,auto:67.5", "medium=1024x1024,webp,auto:59.5", "thumb=320x320,webp,auto:54.5,cover",
            ])
        #expect(zip(Preset.web, Preset.webAuto).allSatisfy { $0.name == $1.name && $0.box == $1.box && $0.format == $1.format && $0.fit == $1.fit })
        #expect(Preset.named("web-auto") == Preset.webAuto && Preset.named("web") == Preset.web && Preset.named("x") == nil)
    }
}

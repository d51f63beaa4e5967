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
        #expect(try VariantSpec(parsing: "thumb=320x320,png") == VariantSpec(name: "thumb", width: 320, height: 320, format: .png, quality: VariantSpec.pngQuality))
        #expect(try VariantSpec(parsing: "thumb=320x320,png,cover").fit == .cover)
        #expect(try VariantSpec(parsing: "thumb=320x320,PNG,q9").quality == 9)
    }

    @Test func roundTripsThroughItsSpecString() throws {
        let others = try ["a=1600x,jpeg,q80", "b=x1200,avif,q40", "c=320x320,png", "d=320x320,png,q7,cover", "e=x5,png,inside",
                          "f=100000x1,webp,q100,cover"].map { (text) throws(ImagePipeError) in try VariantSpec(parsing: text) }
        for spec in Preset.web + others {
            #expect(try VariantSpec(parsing: spec.specString) == spec, "\(spec.specString)")
        }
        #expect(others.map(\.specString) == ["a=1600x,jpeg,q80", "b=x1200,avif,q40", "c=320x320,png", "d=320x320,png,q7,cover",
                                             "e=x5,png", "f=100000x1,webp,q100,cover"])
    }

    @Test(arguments: [
        "photo", "=10x10,jpeg,q80", "a b=10x10,jpeg,q80", "a=10,jpeg,q80", "a=0x10,jpeg,q80", "a=10x10,gif,q80",
        "a=10x10,jpeg,80", "a=10x10,jpeg,q0", "a=10x10,jpeg,q101", "a=10x10,jpeg,q80,fill", "a=10x10,jpeg",
        "a=10x10,jpeg,q80,cover,x", "a=x,png", "a=10x0,png", "a=0x,png", "a=x100001,png", "a=10x10,webp,cover",
        "a=10x10,png,cover,inside", "a=10x10,png,q0",
    ])
    func rejectsMalformedSpecs(_ text: String) {
        #expect(throws: ImagePipeError.self) { try VariantSpec(parsing: text) }
        do { _ = try VariantSpec(parsing: text) } catch { #expect(error.code == .configuration && error.reason.contains(text)) }
    }

    @Test func webPresetIsExactlyTheDocumentedOne() {
        #expect(Preset.web.map(\.specString) == [
            "large=2048x2048,jpeg,q82", "medium=1024x1024,webp,q78", "thumb=320x320,webp,q70,cover",
        ])
    }

    @Test func duplicateNamesAreRejected() throws {
        let spec = try VariantSpec(parsing: "a=10x10,png,q1")
        #expect(throws: ImagePipeError.self) { try Preset.validate([spec, spec]) }
        #expect(throws: ImagePipeError.self) { try Preset.validate([]) }
    }
}

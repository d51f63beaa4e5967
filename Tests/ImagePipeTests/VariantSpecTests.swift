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

    @Test func roundTripsThroughItsSpecString() throws {
        for spec in Preset.web {
            #expect(try VariantSpec(parsing: spec.specString) == spec)
        }
    }

    @Test(arguments: [
        "photo", "=10x10,jpeg,q80", "a b=10x10,jpeg,q80", "a=10,jpeg,q80", "a=0x10,jpeg,q80", "a=10x10,gif,q80",
        "a=10x10,jpeg,80", "a=10x10,jpeg,q0", "a=10x10,jpeg,q101", "a=10x10,jpeg,q80,fill", "a=10x10,jpeg",
        "a=10x10,jpeg,q80,cover,x",
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

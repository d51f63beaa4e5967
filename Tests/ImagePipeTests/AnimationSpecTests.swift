// The variant options animated sources add (`still`, format `gif`) and the fingerprints that decide re-runs.
import ImagePipe
import Testing

@Suite struct AnimationSpecTests {
    /// The `web` preset's fingerprints are the ones its outputs have recorded since before
    /// animation: a re-run finds every output of a still source in place.
    @Test func webPresetFingerprintsAreUnchanged() {
        #expect(Preset.web.map(\.fingerprint) == ["large=2048x2048,jpeg,q82", "medium=1024x1024,webp,q78", "thumb=320x320,webp,q70,cover"])
        #expect(Preset.web.map { $0.fingerprint(animated: false) } == Preset.web.map(\.fingerprint))
        #expect(Preset.web[1].fingerprint(animated: true) == "medium=1024x1024,webp,q78,animated")
    }

    /// `still` is written back in the spec but leaves the fingerprint alone: a still variant's
    /// outputs are what the same spec made before.
    @Test func stillIsParsedAndLeavesTheFingerprint() throws {
        let still = try VariantSpec(parsing: "thumb=320x320,webp,q70,cover,still")
        #expect(still.still && still.specString == "thumb=320x320,webp,q70,cover,still")
        #expect(still.fingerprint == Preset.web[2].fingerprint)
        #expect(try VariantSpec(parsing: still.specString) == still)
        #expect(!still.animates(focus: nil) && Preset.web[2].animates(focus: nil))
        #expect(throws: ImagePipeError.self) { try VariantSpec(parsing: "a=10x10,webp,q70,still,still") }
    }

    /// Which variants of an animated source move: WebP and GIF, not `still`, and not a smart crop
    /// unless a focal point places it.
    @Test func whichVariantsMove() throws {
        func moves(_ text: String, focus: FocalPoint? = nil) throws -> Bool { try VariantSpec(parsing: text).animates(focus: focus) }
        #expect(try moves("a=100x100,webp,q70") && moves("a=100x,gif") && moves("a=100x100,webp,q70,cover,north"))
        #expect(try !moves("a=100x100,jpeg,q70") && !moves("a=100x100,avif,q50") && !moves("a=100x100,png"))
        #expect(try !moves("a=100x100,webp,q70,cover,attention"))
        #expect(try moves("a=100x100,webp,q70,cover,attention", focus: FocalPoint(x: 0.2, y: 0.3)))
    }

    /// GIF is named like PNG: no quality, none to choose.
    @Test func gifIsAFormatWithoutQuality() throws {
        let gif = try VariantSpec(parsing: "g=400x,gif")
        #expect(gif.format == .gif && !gif.hasQuality && gif.format.fileExtension == "gif" && gif.format.contentType == "image/gif")
        #expect(gif.specString == "g=400x,gif")
        #expect(throws: ImagePipeError.self) { try VariantSpec(parsing: "g=400x,gif,auto") }
        #expect(throws: ImagePipeError.self) { try VariantSpec(parsing: "g=400x,gif,effort=3") }
    }
}

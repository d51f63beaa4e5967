// Cover crops placed by position and by focal point, on images made so the right crop is known.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

/// A 1200x600 grey field with the subject near its right edge (x 1060–1150), and a 600x1200 one
/// with it near the bottom (y 1060–1150). Into 200x200 each is scaled to 400x200 (200x400), so a
/// centre crop keeps source x (y) 300–900 only and never holds the subject.
@Suite struct CropPositionTests {
    static let wide = try! SubjectImage.png(width: 1200, height: 600, subjectAt: 1060, 255)
    static let tall = try! SubjectImage.png(width: 600, height: 1200, subjectAt: 255, 1060)

    func coloured(_ source: Data, _ spec: String, focus: FocalPoint? = nil) throws -> Int {
        let variant = Fixtures.variant(spec)
        let result = try Fixtures.compressor.compress(
            SourceImage(name: "subject.png", content: .bytes(source), focus: focus), variants: [variant], limits: .default)
        let info = try VipsProbe.info(result.output(variant.name).data)
        #expect(PixelSize(width: info.width, height: info.height) == PixelSize(width: 200, height: 200), "\(spec)")
        return try VipsProbe.colouredPixels(result.output(variant.name).data)
    }

    @Test func attentionAndEntropyFindTheSubjectTheCentreCropMisses() throws {
        #expect(try coloured(Self.wide, "t=200x200,png,cover") == 0)
        #expect(try coloured(Self.wide, "t=200x200,png,cover,centre") == 0)
        // The subject is 30x30 once scaled; about 900 pixels.
        #expect(try coloured(Self.wide, "t=200x200,png,cover,attention") > 600)
        #expect(try coloured(Self.wide, "t=200x200,png,cover,entropy") > 600)
        #expect(try coloured(Self.tall, "t=200x200,jpeg,q90,cover,attention") > 600)
    }

    @Test func compassPointsAnchorTheCropToTheirEdge() throws {
        #expect(try coloured(Self.wide, "t=200x200,png,cover,east") > 600)
        #expect(try coloured(Self.wide, "t=200x200,png,cover,southeast") > 600)
        #expect(try coloured(Self.wide, "t=200x200,png,cover,west") == 0)
        #expect(try coloured(Self.wide, "t=200x200,png,cover,north") == 0, "north of a landscape is its centre across")
        #expect(try coloured(Self.tall, "t=200x200,png,cover,south") > 600)
        #expect(try coloured(Self.tall, "t=200x200,png,cover,southwest") > 600)
        #expect(try coloured(Self.tall, "t=200x200,png,cover,north") == 0)
        #expect(try coloured(Self.tall, "t=200x200,png,cover,east") == 0)
    }

    @Test func theFocalPointWinsOverThePosition() throws {
        // On the subject: kept even by a centre variant. Far from it: lost even by attention.
        #expect(try coloured(Self.wide, "t=200x200,png,cover", focus: FocalPoint(x: 0.92, y: 0.5)) > 600)
        #expect(try coloured(Self.wide, "t=200x200,png,cover,attention", focus: FocalPoint(x: 0.1, y: 0.5)) == 0)
        #expect(try coloured(Self.tall, "t=200x200,png,cover,north", focus: FocalPoint(x: 0.5, y: 1)) > 600)
    }

    /// Made from the one decode beside a larger variant, the crop is still placed.
    @Test func aPlacedCropFromTheSharedDecode() throws {
        let variants = ["large=1000x1000,jpeg,q80", "t=200x200,png,cover,attention", "c=200x200,png,cover"].map(Fixtures.variant)
        let result = try Fixtures.compress(bytes: Self.wide, variants)
        #expect(result.output("large").encoding.size == PixelSize(width: 1000, height: 500))
        #expect(result.output("t").encoding.size == PixelSize(width: 200, height: 200))
        #expect(try VipsProbe.colouredPixels(result.output("t").data) > 600)
        #expect(try VipsProbe.colouredPixels(result.output("c").data) == 0)
        let focused = try Fixtures.compressor.compress(
            SourceImage(name: "subject.png", content: .bytes(Self.wide), focus: FocalPoint(x: 0.95, y: 0.5)), variants: variants,
            limits: .default)
        #expect(try VipsProbe.colouredPixels(focused.output("c").data) > 600)
    }

    /// The default preset's crop is untouched: a centre position makes the same bytes as before.
    @Test func centreIsLibvipsOwnCrop() throws {
        let plain = try Fixtures.compress("images/formats/landscape.jpg", [Fixtures.variant("t=200x200,webp,q70,cover")])
        let centre = try Fixtures.compress("images/formats/landscape.jpg", [Fixtures.variant("t=200x200,webp,q70,cover,center")])
        #expect(plain.variants[0].data == centre.variants[0].data)
    }
}

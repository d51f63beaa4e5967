// The crop position as a variant option: parsed, written back into the fingerprint, and placed.
import ImagePipe
import Testing

@Suite struct CropPositionSpecTests {
    @Test func aPositionIsAnOptionOfCover() throws {
        let spec = try VariantSpec(parsing: "thumb=320x320,webp,q70,cover,attention")
        #expect(spec.fit == .cover && spec.crop == .attention)
        #expect(try VariantSpec(parsing: "t=10x10,png,center,cover").crop == .centre)
        #expect(try VariantSpec(parsing: "t=10x10,png,cover,NorthEast").crop == .northeast)
        #expect(try VariantSpec(parsing: "t=10x10,png,cover").crop == .centre)
        for position in CropPosition.allCases {
            let parsed = try VariantSpec(parsing: "t=10x10,jpeg,q80,cover,\(position.rawValue)")
            #expect(parsed.crop == position)
            #expect(try VariantSpec(parsing: parsed.specString) == parsed, "\(parsed.specString)")
        }
    }

    /// A changed position changes the stored settings, so a re-run makes the variant again; the
    /// centre writes nothing, so outputs made before positions existed are not made again.
    @Test func thePositionIsPartOfTheFingerprint() throws {
        #expect(try VariantSpec(parsing: "t=320x320,webp,q70,cover").specString == "t=320x320,webp,q70,cover")
        #expect(try VariantSpec(parsing: "t=320x320,webp,q70,cover,centre").specString == "t=320x320,webp,q70,cover")
        #expect(try VariantSpec(parsing: "t=320x320,webp,q70,cover,entropy").specString == "t=320x320,webp,q70,cover,entropy")
        #expect(Preset.web.map(\.specString).last == "thumb=320x320,webp,q70,cover")
    }

    @Test(arguments: [
        ("t=10x10,jpeg,q80,attention", "needs cover"), ("t=10x10,jpeg,q80,inside,north", "needs cover"),
        ("t=10x10,jpeg,q80,cover,north,south", "one crop position"), ("t=10x10,jpeg,q80,cover,middle", "attention"),
    ])
    func badPositionsAreRefusedWithTheirReason(_ text: String, _ reason: String) {
        do {
            _ = try VariantSpec(parsing: text)
            Issue.record("\(text) must be refused")
        } catch {
            #expect(error.code == .configuration && error.reason.contains(text) && error.reason.contains(reason), "\(error)")
        }
    }

    @Test func compassPointsAndFocalPointsPlaceTheBox() {
        let box = PixelSize(width: 200, height: 200), wide = PixelSize(width: 400, height: 200)
        #expect(CropPlacement.offset(of: box, in: wide, anchor: CropPosition.east.anchor!) == (200, 0))
        #expect(CropPlacement.offset(of: box, in: wide, anchor: CropPosition.west.anchor!) == (0, 0))
        #expect(CropPlacement.offset(of: box, in: wide, anchor: CropPosition.north.anchor!) == (100, 0))
        let tall = PixelSize(width: 200, height: 400)
        #expect(CropPlacement.offset(of: box, in: tall, anchor: CropPosition.southwest.anchor!) == (0, 200))
        // Centred on the point, moved back inside the image at its edges.
        #expect(CropPlacement.offset(of: box, in: wide, focus: FocalPoint(x: 0.5, y: 0.5)!) == (100, 0))
        #expect(CropPlacement.offset(of: box, in: wide, focus: FocalPoint(x: 0.3, y: 0)!) == (20, 0))
        #expect(CropPlacement.offset(of: box, in: wide, focus: FocalPoint(x: 1, y: 1)!) == (200, 0))
        #expect(FocalPoint(parsing: "0.3,0.7") == FocalPoint(x: 0.3, y: 0.7))
        #expect(FocalPoint(parsing: "1.2,0.5") == nil && FocalPoint(parsing: "0.5") == nil && FocalPoint(parsing: "nan,0") == nil)
    }
}

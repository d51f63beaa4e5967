import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import Testing

/// What a gain map means, read from the phones' files (libultrahdr's ISO 21496-1 block, an
/// iPhone's maker note), written in both of Ultra HDR's forms, and refused when a stranger's file
/// says what no gain map can mean.
@Suite struct GainMapMetadataTests {
    @Test func libultrahdrsGainMapIsFoundThroughTheMPFIndexWithItsISOMetadata() throws {
        let file = Fixtures.data("images/hdr/ultra-hdr.jpg")
        let found = try #require(try UltraHDRJPEG.gainMap(in: file))
        // exiftool: MPImage2 at 18208 of 12102 bytes.
        #expect(found.range == 18208..<(18208 + 12102))
        #expect(file[found.range.lowerBound] == 0xFF && file[found.range.lowerBound + 1] == 0xD8)
        let channel = try #require(found.metadata.channels.first)
        #expect(found.metadata.channels.count == 1)
        // 0x0059f541 / 2^20 stops, as the block's bytes say.
        #expect(abs(channel.gainMapMax - Double(0x0059_F541) / Double(1 << 20)) < 1e-9)
        #expect(channel.gainMapMin == 0 && channel.gamma == 1 && channel.offsetSDR == 0 && channel.offsetHDR == 0)
        #expect(abs(found.metadata.hdrCapacityMax - channel.gainMapMax) < 1e-9)
    }

    @Test func theISOBlockAndTheXMPWrittenReadBackToTheSameNumbers() throws {
        let metadata = GainMapMetadata(
            channels: [
                .init(gainMapMin: -0.5, gainMapMax: 2.25, gamma: 1.2), .init(gainMapMin: 0, gainMapMax: 2, gamma: 1),
                .init(gainMapMin: 0.1, gainMapMax: 1.75, gamma: 0.9, offsetSDR: 0.01, offsetHDR: 0.02),
            ], hdrCapacityMin: 0.25, hdrCapacityMax: 2.25)
        let iso = try #require(try GainMapMetadata(iso: metadata.isoBlock))
        let packet = try #require(GainMapMetadata.xmpPacket(metadata.gainMapXMPDescription))
        let xmp = try #require(try GainMapMetadata(xmp: packet))
        for read in [iso, xmp] {
            #expect(read.channels.count == 3)
            for (a, b) in zip(read.channels, metadata.channels) {
                #expect(abs(a.gainMapMin - b.gainMapMin) < 1e-6 && abs(a.gainMapMax - b.gainMapMax) < 1e-6 && abs(a.gamma - b.gamma) < 1e-6)
                #expect(abs(a.offsetSDR - b.offsetSDR) < 1e-6 && abs(a.offsetHDR - b.offsetHDR) < 1e-6)
            }
            #expect(abs(read.hdrCapacityMin - 0.25) < 1e-6 && abs(read.hdrCapacityMax - 2.25) < 1e-6)
        }
    }

    @Test func xmpWithoutTheOptionalPropertiesTakesTheSpecificationsDefaults() throws {
        let packet = Data(Fixtures.data("fuzz/gain-map/hdrgm-xmp.xml"))
        let read = try #require(try GainMapMetadata(xmp: packet))
        #expect(read.channels[0].gainMapMax == 2.5 && read.hdrCapacityMax == 2.5)
        let bare = Data(
            "<rdf:Description xmlns:hdrgm=\"http://ns.adobe.com/hdr-gain-map/1.0/\" hdrgm:Version=\"1.0\" hdrgm:GainMapMax=\"3\" hdrgm:HDRCapacityMax=\"3\"/>"
                .utf8)
        let defaults = try #require(try GainMapMetadata(xmp: bare))
        let expected = GainMapMetadata.Channel(gainMapMin: 0, gainMapMax: 3, gamma: 1, offsetSDR: 1.0 / 64, offsetHDR: 1.0 / 64)
        #expect(defaults.channels == [expected])
        let three = try #require(try GainMapMetadata(xmp: Fixtures.data("fuzz/gain-map/hdrgm-xmp-three-channels.xml")))
        #expect(three.channels.map(\.gainMapMax) == [2.5, 2.1, 1.9])
    }

    @Test(arguments: [
        ("NaN", GainMapMetadata(channels: [.init(gainMapMin: 0, gainMapMax: .nan)], hdrCapacityMax: 2), "not finite"),
        ("huge", GainMapMetadata(channels: [.init(gainMapMin: 0, gainMapMax: 40)], hdrCapacityMax: 40), "over 8 stops"),
        ("reversed", GainMapMetadata(channels: [.init(gainMapMin: 2, gainMapMax: 1)], hdrCapacityMax: 2), "below its smallest"),
        ("gamma", GainMapMetadata(channels: [.init(gainMapMin: 0, gainMapMax: 2, gamma: 0)], hdrCapacityMax: 2), "gamma"),
        ("offsets", GainMapMetadata(channels: [.init(gainMapMin: 0, gainMapMax: 2, offsetSDR: 50)], hdrCapacityMax: 2), "offsets"),
        ("headroom", GainMapMetadata(channels: [.init(gainMapMin: 0, gainMapMax: 2)], hdrCapacityMax: 0), "headrooms"),
        ("flat", GainMapMetadata(channels: [.init(gainMapMin: 0, gainMapMax: 0)], hdrCapacityMax: 1), "brightens nothing"),
        (
            "two", GainMapMetadata(channels: [.init(gainMapMin: 0, gainMapMax: 2), .init(gainMapMin: 0, gainMapMax: 2)], hdrCapacityMax: 2),
            "2 channels"
        ),
    ])
    func hostileNumbersAreRefusedWithAReason(name: String, metadata: GainMapMetadata, words: String) {
        #expect(throws: GainMapMetadata.Refusal.self, "\(name)") { try metadata.validated() }
        do {
            _ = try metadata.validated()
        } catch {
            #expect(error.description.contains(words), "\(name): \(error)")
        }
    }

    @Test func isoBlocksThatDivideByZeroEndEarlyOrPutHDRFirstAreRefused() throws {
        let good = Fixtures.data("fuzz/gain-map/iso-block.bin")
        #expect(try GainMapMetadata(iso: good) != nil)
        // The versions alone: a primary image's block, which describes nothing.
        #expect(try GainMapMetadata(iso: [0, 0, 0, 0]) == nil)
        var zero = [UInt8](good)
        zero[5 + 4..<5 + 8] = [0, 0, 0, 0]
        #expect(throws: GainMapMetadata.Refusal.self) { try GainMapMetadata(iso: zero) }
        #expect(throws: GainMapMetadata.Refusal.self) { try GainMapMetadata(iso: good.prefix(20)) }
        var backward = [UInt8](good)
        backward[4] |= 0x04
        #expect(throws: GainMapMetadata.Refusal.self) { try GainMapMetadata(iso: backward) }
        // A reader of a later version is needed.
        #expect(throws: GainMapMetadata.Refusal.self) { try GainMapMetadata(iso: [0, 1] + good.dropFirst(2)) }
    }

    @Test func theIPhonesMakerNoteGivesTheHeadroomAsApplesFormulaDoes() throws {
        // HDRHeadroom 0.8432090282 (< 1) and HDRGain 0.008020164442 (<= 0.01): stops = 1.8 - 20 * HDRGain.
        let expected = exp2(1.8 - 20 * 0.008020164442)
        let fromEXIF = try AppleGainMap.headroom(exif: Fixtures.data("fuzz/gain-map/iphone-exif.bin"))
        #expect(abs(fromEXIF - expected) < 1e-6, "\(fromEXIF) against \(expected)")
        #expect(abs(try AppleGainMap.headroom(makerNote: [UInt8](Fixtures.data("fuzz/gain-map/iphone-maker-note.bin"))) - expected) < 1e-6)
        // The other branches of the piecewise formula.
        #expect(abs(try AppleGainMap.headroom(maker33: 0.5, maker48: 0.5) - exp2(-0.101 * 0.5 + 1.601)) < 1e-9)
        #expect(abs(try AppleGainMap.headroom(maker33: 1.5, maker48: 0.005) - exp2(-70 * 0.005 + 3)) < 1e-9)
        #expect(abs(try AppleGainMap.headroom(maker33: 1.5, maker48: 2) - exp2(-0.303 * 2 + 2.303)) < 1e-9)
        // No headroom at all (stops at or below 0), and numbers no headroom comes from.
        #expect(throws: GainMapMetadata.Refusal.self) { try AppleGainMap.headroom(maker33: 0.5, maker48: 50) }
        #expect(throws: GainMapMetadata.Refusal.self) { try AppleGainMap.headroom(maker33: .nan, maker48: 0) }
        #expect(throws: GainMapMetadata.Refusal.self) { try AppleGainMap.headroom(makerNote: Array("Apple iOS\0".utf8) + [0, 1, 0x4D, 0x4D, 0, 0]) }
        #expect(throws: GainMapMetadata.Refusal.self) { try AppleGainMap.headroom(exif: Fixtures.data("fuzz/exif/camera.exif")) }
    }

    @Test func theRemappedIPhoneMapBoostsAsApplesFormulaSays() {
        let headroom = 3.1
        let lut = AppleGainMap.lut(headroom: headroom)
        #expect(lut.count == 256 && lut[0] == 0 && lut[255] == 255)
        #expect(zip(lut, lut.dropFirst()).allSatisfy { $0 <= $1 })
        let metadata = AppleGainMap.metadata(headroom: headroom)
        for value in [16, 64, 128, 200] {
            // Apple: 1 + (H - 1) g, g the value through Rec. 709's inverse; Ultra HDR: 2^(log2(H) g').
            let v = Double(value) / 255
            let linear = v < 0.081 ? v / 4.5 : pow((v + 0.099) / 1.099, 1 / 0.45)
            let apple = 1 + (headroom - 1) * linear
            let ultra = exp2(metadata.channels[0].gainMapMax * Double(lut[value]) / 255)
            // Within half a step of the 8-bit map: log2(3.1) / 510 stops.
            #expect(abs(log2(ultra / apple)) <= log2(headroom) / 510 + 1e-9, "\(value): \(ultra) against \(apple)")
        }
        #expect(metadata.channels[0].offsetSDR == 0 && metadata.channels[0].offsetHDR == 0 && metadata.neutralValue == 0)
    }

    @Test func aWrittenContainerKeepsThePrimaryAndPointsAtTheGainMap() throws {
        let primary = Fixtures.data("images/formats/landscape.jpg")
        let map = Fixtures.data("images/formats/small-200x150.jpg")
        let metadata = GainMapMetadata(channels: [.init(gainMapMin: 0, gainMapMax: 1.5)], hdrCapacityMax: 1.5)
        let written = try #require(UltraHDRJPEG.assemble(primary: primary, gainMap: map, metadata: metadata))
        let found = try #require(try UltraHDRJPEG.gainMap(in: written))
        #expect(found.range.upperBound == written.count)
        // The map's own bytes after its new segments, and the primary's scan unchanged before it.
        #expect(written[found.range].suffix(map.count - 2) == map.dropFirst(2))
        let scan = try #require(primary.firstRange(of: Data([0xFF, 0xDA])))
        #expect(written[..<found.range.lowerBound].suffix(primary.count - scan.lowerBound) == primary[scan.lowerBound...])
        #expect(abs(found.metadata.channels[0].gainMapMax - 1.5) < 1e-6)
        #expect(GainMap.kind(in: written) == .ultraHDRJPEG)
        let text = String(decoding: written.prefix(found.range.lowerBound), as: UTF8.self)
        #expect(text.contains("hdrgm:Version=\"1.0\"") && text.contains("Item:Length=\"\(found.range.count)\""))
    }

    @Test func aKeptXMPPacketGetsTheGainMapsDescriptionBesideItsOwn() throws {
        let kept = Data("<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF><rdf:Description dc:title=\"mine\"/></rdf:RDF></x:xmpmeta>".utf8)
        let merged = try #require(GainMapMetadata.xmpPacket(GainMapMetadata.primaryXMPDescription(gainMapLength: 42), adding: kept))
        let text = String(decoding: merged, as: UTF8.self)
        #expect(text.contains("dc:title=\"mine\"") && text.contains("hdrgm:Version") && text.hasSuffix("</rdf:RDF></x:xmpmeta>"))
        #expect(GainMapMetadata.xmpPacket("x", adding: Data("no rdf here".utf8)) == nil)
    }

    @Test func anMPFIndexPointingOutsideTheFileIsRefused() throws {
        var file = [UInt8](Fixtures.data("images/hdr/ultra-hdr.jpg"))
        // The second MP entry's offset (big-endian, after its attribute and size) pointed past the end.
        let mpf = try #require(Data(file).firstRange(of: Data("MPF\0".utf8))).upperBound
        let entries = mpf + 8 + 2 + 3 * 12 + 4
        file[entries + 16 + 8..<entries + 16 + 12] = [0x7F, 0xFF, 0xFF, 0xFF]
        #expect(throws: GainMapMetadata.Refusal.self) { try UltraHDRJPEG.gainMap(in: Data(file)) }
        #expect(try UltraHDRJPEG.gainMap(in: Fixtures.data("images/formats/landscape.jpg")) == nil)
    }
}

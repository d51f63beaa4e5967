import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// The probe that says an original carries an HDR gain map, on real phone files and on the
/// near misses it must not take for one.
@Suite struct GainMapTests {
    @Test func anUltraHDRJPEGWrittenByLibultrahdrIsFound() {
        #expect(GainMap.kind(in: Fixtures.data("images/hdr/ultra-hdr.jpg")) == .ultraHDRJPEG)
        // What compression reads of it: its first bytes alone.
        #expect(GainMap.kind(in: Fixtures.data("images/hdr/ultra-hdr.jpg").prefix(2048)) == .ultraHDRJPEG)
    }

    @Test func anIPhoneHEICWithApplesGainMapIsFound() {
        let heic = Fixtures.data("images/hdr/iphone-13-pro-max.heic")
        #expect(GainMap.kind(in: heic.prefix(GainMap.probedBytes)) == .appleHEIC)
    }

    @Test func hdrgmXMPAnnouncesTheGainMapAsISOMetadataDoes() {
        #expect(GainMap.kind(in: Fixtures.data("fuzz/gain-map/ultra-hdr-xmp-head.jpg")) == .ultraHDRJPEG)
    }

    @Test func anISOToneMapItemInAHEIFIsFound() {
        #expect(GainMap.kind(in: Fixtures.data("fuzz/gain-map/iso-tmap.heif")) == .isoHEIF)
    }

    @Test func anMPFIndexWithoutWordOfAGainMapIsNone() {
        // Cameras write MPF for their previews: two images, neither a gain map.
        #expect(GainMap.kind(in: Fixtures.data("fuzz/gain-map/mpf-without-gain-map.jpg")) == nil)
    }

    @Test func ordinaryPhotosAndCutContainersHaveNone() {
        for path in [
            "images/formats/landscape.jpg", "images/formats/landscape-heic.heic", "images/formats/landscape-avif.avif",
            "images/exif-orientation/Landscape_6.jpg", "images/formats/alpha.png",
        ] {
            #expect(GainMap.kind(in: Fixtures.data(path)) == nil, "\(path)")
        }
        let ultra = Fixtures.data("images/hdr/ultra-hdr.jpg")
        let mpf = ultra.firstRange(of: Data("MPF\0".utf8))!.lowerBound
        // Cut inside its MPF segment: the index is not there to be read.
        #expect(GainMap.kind(in: ultra.prefix(mpf + 8)) == nil)
        let heic = Fixtures.data("images/hdr/iphone-13-pro-max.heic")
        #expect(GainMap.kind(in: heic.prefix(2000)) == nil, "the meta box cut before its properties")
    }
}

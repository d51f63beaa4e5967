import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import Testing

/// The probe that says a HEIF or AVIF picture is coded with PQ or HLG (its primary item's nclx
/// `colr`), on files pillow-heif and imagecodecs wrote, one built by hand, and SDR photos.
@Suite struct HDRPictureTests {
    @Test func aPQHEICFromLibheifIsFound() {
        let picture = HDRPicture.announced(in: Fixtures.data("fuzz/gain-map/pq-heic-head.heic"))
        #expect(picture == HDRPicture(transfer: .pq, primaries: 9))
    }

    @Test func anHLGAVIFFromLibavifIsFound() {
        let picture = HDRPicture.announced(in: Fixtures.data("fuzz/gain-map/hlg-avif-head.avif"))
        #expect(picture == HDRPicture(transfer: .hlg, primaries: 9))
    }

    @Test func wideItemIDsAndPropertyIndicesAreReadAndAnICCProfileBeforeTheNCLXIsPassedOver() {
        // ipma version 1 with 15-bit indices, pitm version 1: the primary is item 70,000.
        let picture = HDRPicture.announced(in: Fixtures.data("fuzz/gain-map/pq-wide-ipma.heif"))
        #expect(picture == HDRPicture(transfer: .pq, primaries: 12))
    }

    @Test func sdrPhotosAreNone() {
        #expect(HDRPicture.announced(in: Fixtures.data("images/formats/landscape-heic.heic")) == nil)
        #expect(HDRPicture.announced(in: Fixtures.data("images/formats/landscape-avif.avif")) == nil)
        // An iPhone's HDR is its gain map; its picture is SDR, described by an ICC profile.
        #expect(HDRPicture.announced(in: Fixtures.data("images/hdr/iphone-13-pro-max.heic").prefix(GainMap.probedBytes)) == nil)
        #expect(HDRPicture.announced(in: Fixtures.data("images/formats/landscape.jpg")) == nil)
    }

    @Test func aTruncatedContainerIsNone() {
        let head = Fixtures.data("fuzz/gain-map/pq-heic-head.heic")
        // Cut inside its meta box: no ipma to associate the colour with the primary.
        #expect(HDRPicture.announced(in: head.prefix(120)) == nil)
    }
}

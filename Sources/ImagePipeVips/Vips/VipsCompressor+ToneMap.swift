// A PQ or HLG original (an HDR AVIF or HEIC without a gain map) tone mapped to SDR once, in the helper.
import CVipsShim
import Foundation
import ImagePipe

/// An HDR picture decoded whole and tone mapped to 8-bit sRGB, every variant's decode.
struct ToneMappedPicture {
    var picture: HDRPicture
    /// Upright, as the source is displayed.
    var image: VipsImageHandle
    /// The source's brightest channel, in cd/m².
    var peak: Double
}

extension VipsCompressor {
    /// SDR white in the HDR picture's light: BT.2408's reference white (and HLG's 75 % signal on a
    /// 1,000 cd/m² display). Light up to half of it is the SDR variant's unchanged; from there the
    /// rest up to the picture's brightest is rolled off into what is left below the SDR picture's
    /// white, so highlights keep distinct levels and reference white lands near 225 of 255.
    static let sdrWhiteNits = 203.0

    /// The HDR picture a source's container announces, for the formats that carry nclx.
    static func hdrPicture(start: Data, format: SourceFormat) -> HDRPicture? {
        [.heic, .heif, .avif].contains(format) ? HDRPicture.announced(in: start) : nil
    }

    /// The working memory a tone mapping adds: the decode at 16 bits a channel and its SDR copy.
    static func toneMapMemory(_ header: VipsImageHandle, picture: HDRPicture?) -> Int {
        guard picture != nil else { return 0 }
        let bands = Int(header.pointer.pointee.Bands)
        return header.size.area * bands * 3
    }

    /// The whole picture `header` opened, decoded, tone mapped (``ipv_tone_map_hdr``) and turned
    /// upright: libvips' own conversion would read PQ or HLG codes as sRGB's.
    func toneMap(_ header: VipsImageHandle, picture: HDRPicture) throws(ImagePipeError) -> ToneMappedPicture {
        let bits = header.int("heif-bitdepth") ?? (header.pointer.pointee.BandFmt == VIPS_FORMAT_USHORT ? 16 : 8)
        var peak = 0.0
        var mapped: UnsafeMutablePointer<VipsImage>?
        guard
            ipv_tone_map_hdr(
                header.pointer, Int32(picture.transfer.rawValue), Int32(picture.primaries), Int32(bits), Self.sdrWhiteNits, &peak, &mapped)
                == 0, let mapped
        else { throw decodeError() }
        var image = VipsImageHandle(mapped)
        let orientation = header.int("orientation") ?? 1
        if orientation != 1 {
            var upright: UnsafeMutablePointer<VipsImage>?
            guard ipv_orient(image.pointer, Int32(orientation), &upright) == 0, let upright else { throw decodeError() }
            image = VipsImageHandle(upright)
        }
        return ToneMappedPicture(picture: picture, image: image, peak: peak)
    }

    /// The manifest's record of a tone-mapped original: HDR not carried, with its headroom (its
    /// peak over SDR white) when it is brighter than SDR white.
    static func toneMapRecord(_ mapped: ToneMappedPicture) -> GainMap {
        let headroom = mapped.peak / sdrWhiteNits
        return GainMap(
            kind: mapped.picture.transfer == .pq ? .pq : .hlg, notCarried: .toneMapped,
            headroom: headroom > 1.001 && headroom <= exp2(GainMapMetadata.maxStops) ? headroom : nil)
    }
}

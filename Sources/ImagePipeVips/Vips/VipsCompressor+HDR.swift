// An HDR original's gain map read once, in the helper, and made for each JPEG variant beside its SDR picture.
import CVipsShim
import Foundation
import ImagePipe
import Logging

/// A source's gain map, decoded and turned as the picture is displayed, with what it means.
struct SourceGainMap {
    var kind: GainMap.Kind
    /// One band (an iPhone's, remapped to Ultra HDR's form) or three, 8-bit, upright.
    var image: VipsImageHandle
    var metadata: GainMapMetadata
}

/// What reading a source's gain map gave.
enum GainMapReading {
    /// The source has none, or no variant would carry it.
    case none
    /// It has one that the variants do not carry, for this reason.
    case notCarried(GainMap)
    /// It has one, read.
    case read(SourceGainMap)
}

extension VipsCompressor {
    /// A gain map's side over its variant's: half on each side (a quarter of the pixels), where
    /// browsers upsample it smoothly; see docs/performance.md, "HDR gain maps", for what it costs.
    static let gainMapScale = 2
    /// The quality gain maps are encoded at: they hold smooth brightness, not detail.
    static let gainMapQuality = 85

    static let hdrLogger = Logger(label: "imagepipe.hdr")

    /// The gain map `source` announces (`start`, its first bytes, said which kind), read when some
    /// variant carries HDR: an Ultra HDR JPEG's second image and its metadata, an iPhone's
    /// auxiliary image with the headroom its maker note gives. A map that cannot be used is logged
    /// with why and recorded as not carried; the variants are then the SDR picture, as ever.
    func readGainMap(
        _ source: SourceImage, start: Data, header: VipsImageHandle, format: SourceFormat, displayed: PixelSize, variants: [VariantSpec]
    ) -> GainMapReading {
        guard [.jpeg, .heic, .heif, .avif].contains(format), let kind = GainMap.kind(in: start) else { return .none }
        guard variants.contains(where: \.carriesHDR) else {
            let dropped = variants.contains { $0.format == .jpeg }
            return .notCarried(GainMap(kind: kind, notCarried: dropped ? .dropped : .noJPEGVariant))
        }
        func refuse(_ reason: GainMap.Reason, _ why: String, headroom: Double? = nil) -> GainMapReading {
            Self.hdrLogger.warning(
                "the gain map is not carried", metadata: ["source": "\(source.name)", "kind": "\(kind.rawValue)", "reason": "\(why)"])
            return .notCarried(GainMap(kind: kind, notCarried: reason, headroom: headroom))
        }
        let bytes: Data
        switch source.content {
        case .bytes(let data): bytes = data
        case .file(let opened):
            guard let data = try? opened.readAll() else { return refuse(.unreadable, "the file cannot be read again whole") }
            bytes = data
        }
        do throws(GainMapMetadata.Refusal) {
            let read: SourceGainMap
            switch kind {
            case .ultraHDRJPEG: read = try ultraHDRGainMap(bytes, header: header)
            case .appleHEIC: read = try appleGainMap(bytes, header: header)
            case .isoHEIF: return refuse(.unsupported, "libheif 1.15 shows no ISO 21496-1 tone-map item")
            // A container announces gain maps only; a picture's transfer is read apart (HDRPicture).
            case .pq, .hlg: return .none
            }
            // A map of another aspect than its picture maps something else.
            let map = read.image.size
            let ratio = Double(map.width) / Double(map.height) / (Double(displayed.width) / Double(displayed.height))
            guard abs(ratio - 1) <= 0.02 else {
                return refuse(.geometry, "the gain map is \(map), its picture \(displayed)", headroom: read.metadata.headroom)
            }
            return .read(read)
        } catch {
            let reason: GainMap.Reason = kind == .appleHEIC && error.description.contains("maker note") ? .noHeadroom : .unreadable
            return refuse(reason, error.description)
        }
    }

    /// An Ultra HDR JPEG's gain map: the image its MPF index points to, decoded whole as it is
    /// stored (its values are no colours: nothing converts them), turned as the primary's EXIF
    /// orientation turns the picture.
    private func ultraHDRGainMap(_ bytes: Data, header: VipsImageHandle) throws(GainMapMetadata.Refusal) -> SourceGainMap {
        guard let found = try UltraHDRJPEG.gainMap(in: bytes) else { throw GainMapMetadata.Refusal("the MPF index names no gain map") }
        let jpeg = bytes.subdata(in: found.range)
        guard let opened = jpeg.withUnsafeBytes({ ipv_header_buffer($0.baseAddress, $0.count, 0) }) else {
            throw GainMapMetadata.Refusal("the gain-map image is no JPEG libvips reads")
        }
        let image = VipsImageHandle(opened)
        let bands = Int(image.pointer.pointee.Bands)
        guard bands == 1 || bands == 3, image.pointer.pointee.BandFmt == VIPS_FORMAT_UCHAR, image.size.area <= header.size.area * 4 else {
            throw GainMapMetadata.Refusal("the gain-map image is not an 8-bit map of one or three channels no larger than its picture")
        }
        // Decoded while the bytes it reads are alive.
        let decoded: VipsImageHandle? = withExtendedLifetime(jpeg) { ipv_copy_memory(image.pointer).map(VipsImageHandle.init) }
        guard let decoded else { throw GainMapMetadata.Refusal("the gain-map image does not decode") }
        var out: UnsafeMutablePointer<VipsImage>?
        guard ipv_orient(decoded.pointer, Int32(header.int("orientation") ?? 1), &out) == 0, let out else {
            throw GainMapMetadata.Refusal("the gain map cannot be turned upright")
        }
        return SourceGainMap(kind: .ultraHDRJPEG, image: VipsImageHandle(out), metadata: found.metadata)
    }

    /// An iPhone's gain map: libheif's auxiliary image (turned by its own transformations, as the
    /// picture is), its values remapped to Ultra HDR's exponential form (``AppleGainMap``).
    private func appleGainMap(_ bytes: Data, header: VipsImageHandle) throws(GainMapMetadata.Refusal) -> SourceGainMap {
        var length = 0
        guard let exif = ipv_get_blob(header.pointer, "exif-data", &length), length > 0 else {
            throw GainMapMetadata.Refusal("the photo has no EXIF, so no maker note to give the gain map's headroom")
        }
        let headroom = try AppleGainMap.headroom(exif: Data(bytes: exif, count: length))
        var pixels: UnsafeMutablePointer<UInt8>?
        var width: Int32 = 0, height: Int32 = 0
        let status = bytes.withUnsafeBytes { ipv_heif_apple_gain_map($0.baseAddress, $0.count, 1 << 15, &pixels, &width, &height) }
        defer { free(pixels) }
        guard status == Int32(IPV_GAIN_MAP_FOUND.rawValue), let pixels else {
            throw GainMapMetadata.Refusal("libheif cannot decode the auxiliary gain-map image")
        }
        var grey: UnsafeMutablePointer<VipsImage>?
        guard ipv_image_from_grey(pixels, width, height, &grey) == 0, let grey else { throw GainMapMetadata.Refusal("the gain map cannot be copied") }
        let map = VipsImageHandle(grey)
        var remapped: UnsafeMutablePointer<VipsImage>?
        let lut = AppleGainMap.lut(headroom: headroom)
        guard ipv_maplut(map.pointer, lut, &remapped) == 0, let remapped, let copy = ipv_copy_memory(remapped) else {
            throw GainMapMetadata.Refusal("the gain map cannot be remapped")
        }
        ipv_unref(remapped)
        return SourceGainMap(kind: .appleHEIC, image: VipsImageHandle(copy), metadata: AppleGainMap.metadata(headroom: headroom))
    }

    /// The part of the displayed picture a variant shows, as fractions of its width and height
    /// (x, y, width, height): all of it for `inside`; for `cover`, the box's aspect centred, at its
    /// compass point or around the focal point, as ``placeCrop(_:to:variant:focus:)`` and libvips'
    /// centred crop take it. Nil for a crop placed by the picture's content (`attention`,
    /// `entropy`), which only libvips' analysis knows.
    static func visibleFraction(
        of displayed: PixelSize, output: PixelSize, variant: VariantSpec, focus: FocalPoint?
    ) -> (Double, Double, Double, Double)? {
        guard variant.fit == .cover else { return (0, 0, 1, 1) }
        if focus == nil && variant.crop.isSmart { return nil }
        let covering = ResizePlan.coverSize(of: displayed, for: output)
        let offset =
            if let focus {
                CropPlacement.offset(of: output, in: covering, focus: focus)
            } else {
                CropPlacement.offset(of: output, in: covering, anchor: variant.crop.anchor ?? (0.5, 0.5))
            }
        let width = Double(covering.width), height = Double(covering.height)
        return (Double(offset.left) / width, Double(offset.top) / height, Double(output.width) / width, Double(output.height) / height)
    }

    /// `encoded` (a JPEG variant of `output` size) as an Ultra HDR JPEG carrying `map` through the
    /// variant's geometry: the shown part of the map, at ``gainMapScale`` below the variant's size,
    /// neutral (boost 1) under the watermark, which is drawn on the SDR picture alone. `encoded`
    /// as it is when the variant's crop cannot be followed or the container cannot be written.
    func carryingGainMap(
        _ encoded: EncodedVariant, map: SourceGainMap, displayed: PixelSize, focus: FocalPoint?
    ) throws(ImagePipeError) -> EncodedVariant {
        let variant = encoded.spec
        guard let fraction = Self.visibleFraction(of: displayed, output: encoded.encoding.size, variant: variant, focus: focus) else {
            return encoded
        }
        let source = map.image.size
        let left = min(source.width - 1, max(0, Int((fraction.0 * Double(source.width)).rounded(.down))))
        let top = min(source.height - 1, max(0, Int((fraction.1 * Double(source.height)).rounded(.down))))
        let right = min(source.width, max(left + 1, Int(((fraction.0 + fraction.2) * Double(source.width)).rounded(.up))))
        let bottom = min(source.height, max(top + 1, Int(((fraction.1 + fraction.3) * Double(source.height)).rounded(.up))))
        let size = PixelSize(
            width: max(1, (encoded.encoding.size.width + Self.gainMapScale - 1) / Self.gainMapScale),
            height: max(1, (encoded.encoding.size.height + Self.gainMapScale - 1) / Self.gainMapScale))
        var image = map.image
        var out: UnsafeMutablePointer<VipsImage>?
        if left != 0 || top != 0 || right != source.width || bottom != source.height {
            guard ipv_extract_area(image.pointer, Int32(left), Int32(top), Int32(right - left), Int32(bottom - top), &out) == 0, let out else {
                throw encodeError(variant)
            }
            image = VipsImageHandle(out)
        }
        if image.size != size {
            guard ipv_resize_exact(image.pointer, Int32(size.width), Int32(size.height), &out) == 0, let out else { throw encodeError(variant) }
            image = VipsImageHandle(out)
        }
        if let watermark = variant.watermark, let logo = watermarkLogo,
            let placement = watermark.placement(on: encoded.encoding.size, logo: logo.size)
        {
            let scale = Double(size.width) / Double(encoded.encoding.size.width)
            let x = Int((Double(placement.left) * scale).rounded(.down)), y = Int((Double(placement.top) * scale).rounded(.down))
            let width = Int((Double(placement.left + placement.size.width) * scale).rounded(.up)) - x
            let height = Int((Double(placement.top + placement.size.height) * scale).rounded(.up)) - y
            guard ipv_fill_rect(image.pointer, Int32(x), Int32(y), Int32(width), Int32(height), Double(map.metadata.neutralValue), &out) == 0,
                let out
            else { throw encodeError(variant) }
            image = VipsImageHandle(out)
        }
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        guard ipv_save_jpeg(image.pointer, Int32(Self.gainMapQuality), 0, 0, 0, &buffer, &length) == 0, let buffer else {
            throw encodeError(variant)
        }
        let jpeg = Data(bytesNoCopy: buffer, count: length, deallocator: .custom { pointer, _ in ipv_free(pointer) })
        guard let assembled = UltraHDRJPEG.assemble(primary: encoded.data, gainMap: jpeg, metadata: map.metadata) else { return encoded }
        var carried = encoded
        carried.data = assembled
        carried.encoding.hdrHeadroom = map.metadata.headroom
        return carried
    }

    /// The record of a source's gain map once its variants are made: carried when some variant
    /// carries it.
    static func gainMapRecord(_ reading: GainMapReading, variants: [EncodedVariant]) -> GainMap? {
        switch reading {
        case .none: return nil
        case .notCarried(let record): return record
        case .read(let map):
            let carried = variants.contains { $0.encoding.hdrHeadroom != nil }
            return carried
                ? GainMap(kind: map.kind, carried: true, headroom: map.metadata.headroom)
                : GainMap(kind: map.kind, notCarried: .geometry, headroom: map.metadata.headroom)
        }
    }
}

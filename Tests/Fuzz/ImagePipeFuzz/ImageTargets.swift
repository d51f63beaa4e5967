// Fuzz targets for what imagepipe reads of image files without libvips: their ends, and a JPEG's segments.
import Foundation
import ImagePipe
import ImagePipeVips

enum ImageTargets {
    /// `--dry-run`'s walk to a JPEG's, PNG's or WebP's end, and the stripping of a kept original:
    /// both end, and a stripped JPEG is one that walk reads to its own end and strips to itself.
    static func imageEnd(_ data: Data) {
        for format in [SourceFormat.jpeg, .png, .webp] { _ = ImageEnd.missing(in: .bytes(data), format: format) }
        let end = ImageEnd.endOfJPEG(data)
        if let end { require(end >= 4 && end <= data.count, "an end at \(end) of \(data.count) bytes") }
        // The frame size read before decoding: only of a JPEG, and the same for a slice.
        let frame = JPEGOriginal.frameSize(data)
        if frame != nil { require(data.starts(with: [0xFF, 0xD8]), "a frame size of bytes that are no JPEG") }
        require(JPEGOriginal.frameSize((Data([0]) + data).dropFirst()) == frame, "a slice reads another frame size")
        guard let stripped = JPEGOriginal.stripped(data, isSRGB: { _ in true }) else { return }
        require(end != nil, "stripped a JPEG the walk finds no end of")
        require(ImageEnd.endOfJPEG(stripped) == stripped.count, "the stripped JPEG does not end at its end-of-image marker")
        require(JPEGOriginal.stripped(stripped, isSRGB: { _ in true }) == stripped, "stripping twice changes the file")
    }

    /// The frame count inspection reads from a GIF's or WebP's container to know which outputs
    /// move: it ends, is at least one, is one for a file that cannot be animated, and is the same
    /// for the bytes as a slice of a larger buffer.
    static func frameCount(_ data: Data) {
        let frames = FrameCount.of(data)
        require(frames >= 1 && frames <= max(1, data.count), "\(frames) frames in \(data.count) bytes")
        if !FrameCount.mayBeAnimated(data.prefix(16)) { require(frames == 1, "\(frames) frames in a file that cannot move") }
        let sliced = (Data([0x47]) + data).dropFirst()
        require(FrameCount.of(sliced) == frames, "a slice of the same bytes has \(FrameCount.of(sliced)) frames, not \(frames)")
    }

    /// The probe for an HDR gain map (``GainMap/kind(in:)``): it ends, names a JPEG kind only for
    /// bytes that start as a JPEG and a HEIF kind only for a HEIF, and answers the same for the
    /// bytes as a slice of a larger buffer.
    static func gainMap(_ data: Data) {
        let kind = GainMap.kind(in: data)
        switch kind {
        case .ultraHDRJPEG: require(data.starts(with: [0xFF, 0xD8]), "a JPEG gain map in bytes that are no JPEG")
        case .appleHEIC, .isoHEIF: require(data.count >= 12 && data.dropFirst(4).starts(with: Array("ftyp".utf8)), "a HEIF gain map in no HEIF")
        case .pq, .hlg: require(false, "a transfer announced as a gain map")
        case nil: break
        }
        let sliced = (Data([0x00]) + data).dropFirst()
        require(GainMap.kind(in: sliced) == kind, "a slice of the same bytes says \(String(describing: GainMap.kind(in: sliced)))")
        gainMapReaders(data)
        hdrPicture(data)
    }

    /// The probe for a PQ or HLG picture (``HDRPicture/announced(in:)``: `pitm`, `ipma` and `ipco`'s
    /// nclx `colr`): it ends, answers only for a HEIF, and the same for a slice.
    static func hdrPicture(_ data: Data) {
        let picture = HDRPicture.announced(in: data)
        if picture != nil { require(data.count >= 12 && data.dropFirst(4).starts(with: Array("ftyp".utf8)), "a PQ or HLG picture in no HEIF") }
        let sliced = (Data([0x00]) + data).dropFirst()
        require(HDRPicture.announced(in: sliced) == picture, "a slice of the same bytes says \(String(describing: HDRPicture.announced(in: sliced)))")
    }

    /// The readers of what a gain map means, each on the same bytes: an Ultra HDR JPEG's MPF index
    /// and the gain-map image's metadata (``UltraHDRJPEG/gainMap(in:)``), ISO 21496-1's block and
    /// `hdrgm` XMP alone, and an iPhone's EXIF and maker note (``AppleGainMap``). Each ends; what
    /// it accepts lies within the bytes, passes ``GainMapMetadata/validated()``, and writes itself
    /// out in both forms to read back the same; a headroom is finite and within the bounds.
    static func gainMapReaders(_ data: Data) {
        if let found = try? UltraHDRJPEG.gainMap(in: data) {
            require(found.range.lowerBound >= 0 && found.range.upperBound <= data.count, "a gain map outside the file: \(found.range)")
            checkWritten(found.metadata)
        }
        let bytes = [UInt8](data)
        for form in 0..<2 {
            let read = form == 0 ? try? GainMapMetadata(iso: bytes) : try? GainMapMetadata(xmp: bytes)
            guard let read, let checked = try? read.validated() else { continue }
            checkWritten(checked)
        }
        for headroom in [try? AppleGainMap.headroom(exif: data), try? AppleGainMap.headroom(makerNote: bytes)] {
            guard let headroom else { continue }
            require(headroom.isFinite && headroom > 1 && headroom <= exp2(GainMapMetadata.maxStops), "a headroom of \(headroom)")
            let lut = AppleGainMap.lut(headroom: headroom)
            require(lut.first == 0 && lut.last == 255 && zip(lut, lut.dropFirst()).allSatisfy { $0 <= $1 }, "a remapping that is not monotonic")
        }
    }

    /// Metadata accepted writes ISO 21496-1 and XMP that read back to the same numbers (within the
    /// millionth of a stop both are written to), and a container around two JPEGs that reads back.
    private static func checkWritten(_ metadata: GainMapMetadata) {
        func close(_ a: GainMapMetadata?, _ what: String) {
            guard let a else { fatalError("\(what) written does not read back: \(metadata)") }
            // One channel stands for three that are alike (XMP writes such three as one).
            let count = max(a.channels.count, metadata.channels.count)
            func widened(_ channels: [GainMapMetadata.Channel]) -> [GainMapMetadata.Channel] {
                channels.count == count ? channels : Array(repeating: channels[0], count: count)
            }
            let pairs = zip(widened(a.channels), widened(metadata.channels)).flatMap { x, y in
                [
                    (x.gainMapMin, y.gainMapMin), (x.gainMapMax, y.gainMapMax), (x.gamma, y.gamma), (x.offsetSDR, y.offsetSDR),
                    (x.offsetHDR, y.offsetHDR),
                ]
            }
            let all = pairs + [(a.hdrCapacityMin, metadata.hdrCapacityMin), (a.hdrCapacityMax, metadata.hdrCapacityMax)]
            require(all.allSatisfy { abs($0 - $1) <= 1e-5 }, "\(what) reads back as \(a), not \(metadata)")
        }
        close(try? GainMapMetadata(iso: metadata.isoBlock), "ISO 21496-1")
        let packet = GainMapMetadata.xmpPacket(metadata.gainMapXMPDescription) ?? Data()
        close(try? GainMapMetadata(xmp: packet), "XMP")
        let jpeg = Data([0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02, 0x00, 0xFF, 0xD9])
        guard let written = UltraHDRJPEG.assemble(primary: jpeg, gainMap: jpeg, metadata: metadata) else {
            fatalError("no container written for \(metadata)")
        }
        close((try? UltraHDRJPEG.gainMap(in: written))?.metadata, "the container")
    }

    /// The check of an output a helper hands back (``OutputHeader``): it ends, states a size only of
    /// bytes that begin with the format's signature, reads the same of the bytes with anything after
    /// them, and never states more than the largest side a header can hold.
    static func outputHeader(_ data: Data) {
        let bytes = [UInt8](data)
        for format in OutputFormat.allCases {
            guard let size = OutputHeader.size(of: bytes, as: format.traits.header) else { continue }
            require(size.width >= 0 && size.height >= 0 && size.width <= 1 << 32 && size.height <= 1 << 32, "\(format): \(size)")
            require(ImageSignature.fileExtension(of: bytes) != nil || format == .jxl, "\(format) read from bytes no image begins with")
            require(
                OutputHeader.size(of: bytes + [0, 1, 2], as: format.traits.header) == size || format == .avif || format == .jxl,
                "\(format): more bytes after it read another size")
        }
    }
}

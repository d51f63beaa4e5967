// What a source's container says before it is decoded: its start, and the HDR gain map it announces.
import Foundation
import ImagePipe

extension VipsCompressor {
    /// The source's first ``GainMap/probedBytes``: a JPEG's segments before its pixels, a HEIF's
    /// `meta` box; empty when a file cannot be read again (its decode then says why).
    static func start(of source: SourceImage) -> Data {
        switch source.content {
        case .bytes(let data): data.prefix(GainMap.probedBytes)
        case .file(let opened): (try? opened.read(count: min(opened.byteCount, GainMap.probedBytes))) ?? Data()
        }
    }

    /// The HDR gain map a source whose container starts with `start` carries, for a compression that
    /// did not read it (no variant carries it): why its variants are the SDR picture.
    static func gainMap(start: Data, format: SourceFormat, variants: [VariantSpec]) -> GainMap? {
        guard [.jpeg, .heic, .heif, .avif].contains(format), let kind = GainMap.kind(in: start) else { return nil }
        if kind == .isoHEIF { return GainMap(kind: kind, notCarried: .unsupported) }
        return GainMap(kind: kind, notCarried: variants.contains { $0.format == .jpeg } ? .dropped : .noJPEGVariant)
    }

    /// The working memory reading a source's gain map adds: the whole file, read again to find the
    /// map, and the map decoded (a phone's is a quarter of the picture's pixels or less; an Ultra HDR
    /// JPEG's may be as large as the picture, in three channels), with its copy turned upright.
    static func gainMapMemory(_ header: VipsImageHandle, start: Data, format: SourceFormat, variants: [VariantSpec], source: SourceImage) -> Int {
        guard variants.contains(where: \.carriesHDR), [.jpeg, .heic, .heif, .avif].contains(format), let kind = GainMap.kind(in: start) else {
            return 0
        }
        let file: Int
        switch source.content {
        case .bytes: file = 0
        case .file(let opened): file = opened.byteCount
        }
        let stored = header.size.area
        switch kind {
        case .ultraHDRJPEG: return file + stored * 3 * 2
        case .appleHEIC: return file * 2 + stored / 2
        case .isoHEIF, .pq, .hlg: return 0
        }
    }
}

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

    /// The HDR gain map a source whose container starts with `start` carries, said in the manifest:
    /// the variants are its SDR picture.
    static func gainMap(start: Data, format: SourceFormat) -> GainMap? {
        guard [.jpeg, .heic, .heif, .avif].contains(format) else { return nil }
        return GainMap.kind(in: start).map { GainMap(kind: $0, carried: false, reason: GainMap.notCarriedReason) }
    }
}

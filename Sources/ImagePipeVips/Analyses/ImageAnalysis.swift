// The analyses the helper runs over the one decode, as a list of steps over one context.
import Foundation
import ImagePipe

/// One analysis of an original: what it needs is in the ``AnalysisContext`` it is given, what it
/// finds it writes there. Adding one is its step, its field in ``ImageFacts``, and its line in
/// ``registry``: the wire, the records and the worker carry ``ImageFacts`` whole.
struct ImageAnalysis: Sendable {
    /// The fact it makes, which `--facts` may turn off; nil for the placeholder, always made.
    let kind: FactKinds?
    let run: @Sendable (inout AnalysisContext) -> Void

    /// Every analysis, in the order they run: the placeholder's pixels first, which the palette reads.
    static let registry: [ImageAnalysis] = [.placeholder, .palette, .pdq, .provenance]

    /// Runs the analyses `kinds` asks for (and the placeholder) over `context`.
    static func runAll(_ kinds: FactKinds, on context: inout AnalysisContext) {
        for analysis in registry where analysis.kind.map(kinds.contains) ?? true {
            analysis.run(&context)
        }
    }
}

/// What the analyses of one original look at and what they find: the decoded picture (8-bit sRGB,
/// upright, as the variants are made from it), the source's bytes for what only the file says, and
/// what each step leaves for the next.
struct AnalysisContext {
    /// The decode: interleaved 8-bit pixels of 3 (RGB) or 4 (RGBA) bands, valid while the analyses
    /// run; nil for a decode of another layout, which only the provenance is read without.
    let picture: Picture?
    /// What the placeholder shows when it is another picture: a single `cover` variant's crop,
    /// while the facts read the whole picture, decoded again for them. Nil: ``picture``.
    let shown: Picture?
    /// The source, for the provenance read from its container.
    let source: SourceImage
    /// Its first bytes (``GainMap/probedBytes``), already read.
    let start: Data
    /// Its XMP packet, as the loader found it; nil when it has none or no loader read it.
    let xmp: Data?

    /// The pixels, averaged down to at most 100x100, the placeholder and palette are made from.
    var smallPixels: (width: Int, height: Int, rgba: [UInt8])?
    var placeholder: Placeholder?
    var facts = ImageFacts()

    /// Interleaved 8-bit pixels.
    struct Picture {
        let pixels: UnsafePointer<UInt8>
        let width: Int
        let height: Int
        let bands: Int
    }
}

extension ImageAnalysis {
    /// ThumbHash and the average colour, from the picture averaged down once.
    static let placeholder = ImageAnalysis(kind: nil) { context in
        guard let picture = context.shown ?? context.picture else { return }
        let small = VipsCompressor.placeholderPixels(of: picture.pixels, width: picture.width, height: picture.height, bands: picture.bands)
        context.placeholder = small.map { Placeholder(width: $0.width, height: $0.height, rgba: $0.rgba) }
        // The palette reads the same pixels when they are of the whole picture.
        if context.shown == nil { context.smallPixels = small }
    }

    /// The main colours, from the placeholder's pixels: 100x100 holds every colour that covers a
    /// share worth listing. A colour under ``minimumShare`` of the picture is no main colour: mostly
    /// it is the blend of two along an edge, which averaging down makes.
    static let palette = ImageAnalysis(kind: .palette) { context in
        if context.smallPixels == nil, let picture = context.picture {
            context.smallPixels = VipsCompressor.placeholderPixels(
                of: picture.pixels, width: picture.width, height: picture.height, bands: picture.bands)
        }
        guard let small = context.smallPixels else { return }
        let entries = small.rgba.withUnsafeBufferPointer { Palette.colours(rgba: $0, width: small.width, height: small.height) }
        context.facts.palette = entries.map { entry in
            ImageFacts.Colour(color: hex(entry.red, entry.green, entry.blue), share: entry.share)
        }.filter { $0.share >= ImageAnalysis.minimumShare }
    }

    /// The least share of the picture a palette colour covers.
    static let minimumShare = 0.02

    /// The PDQ hash, of the decode (averaged down to ``PDQ/workingSide`` first when larger).
    static let pdq = ImageAnalysis(kind: .pdq) { context in
        guard let picture = context.picture,
            let result = PDQ.hash(pixels: picture.pixels, width: picture.width, height: picture.height, bands: picture.bands)
        else { return }
        context.facts.pdq = ImageFacts.PDQ(hash: result.hex, quality: result.quality)
    }

    /// Content Credentials, from the container's boxes, and the digital source type from the XMP.
    static let provenance = ImageAnalysis(kind: .provenance) { context in
        let type = (context.xmp ?? ProvenanceScan.jpegXMP(in: context.start)).flatMap(ProvenanceScan.digitalSourceType(xmp:))
        let source = context.source, start = context.start
        let c2pa = ProvenanceScan.carriesC2PA(size: source.byteCount) { offset, count in
            // The first bytes are already here; past them, a file is read where the boxes say.
            if offset >= 0, count >= 0, offset + count <= start.count {
                return Data(start[(start.startIndex + offset)..<(start.startIndex + offset + count)])
            }
            return source.read(at: offset, count: count)
        }
        context.facts.provenance = ImageFacts.Provenance(c2pa: c2pa, digitalSourceType: type)
    }
}

/// `#rrggbb` of an 8-bit colour.
private func hex(_ red: UInt8, _ green: UInt8, _ blue: UInt8) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = [UInt8(ascii: "#")]
    for channel in [red, green, blue] { text += [digits[Int(channel >> 4)], digits[Int(channel & 15)]] }
    return String(decoding: text, as: UTF8.self)
}

extension SourceImage {
    /// How many bytes the source has.
    var byteCount: Int {
        switch content {
        case .bytes(let data): data.count
        case .file(let opened): opened.byteCount
        }
    }

    /// Up to `count` bytes at `offset`; nil past the end or when the file cannot be read.
    func read(at offset: Int, count: Int) -> Data? {
        guard offset >= 0, count >= 0, offset < byteCount else { return nil }
        switch content {
        case .bytes(let data):
            let from = data.startIndex + offset
            return Data(data[from..<min(data.endIndex, from + count)])
        case .file(let opened):
            return try? opened.read(at: offset, count: min(count, opened.byteCount - offset))
        }
    }
}

// A variant that would be larger than its original, already in its format and at its size, is the original's bytes instead.
import CVipsShim
import Foundation
import ImagePipe

extension VipsCompressor {
    /// What the decode that made the variants says of the original's bytes.
    enum OriginalDecode {
        /// Decoded with every warning refused: undamaged.
        case clean
        /// Decoded only once warnings were allowed: damaged, never kept.
        case warned
        /// Decoded allowing warnings, without asking.
        case unchecked
    }

    /// `compressed` with each JPEG variant that is exactly the original's displayed size and
    /// larger than the original without its metadata (``JPEGOriginal``) replaced by those bytes.
    ///
    /// Re-encoding an already compressed photo at the same size cannot add detail, only bytes: a
    /// 352 kB camera JPEG came out 395 kB at quality 82. The original's pixels are what the
    /// variant would show (same size, 8-bit, sRGB or no profile, upright), so the smaller file is the better variant. Such a variant has no quality or
    /// score of its own and is marked ``EncodedVariant/keptOriginal``.
    ///
    /// Only an original that decodes without a warning may stand for its variant: a JPEG whose scan
    /// ends early decodes, grey below the break, with one, and its own bytes would store the damage.
    /// libvips raises such warnings on any of its threads, so the decode itself is asked to refuse
    /// them (`decode`, see ``compress(_:variants:limits:memory:)``); an original whose decode was
    /// not is decoded once more with warnings refused before it is kept.
    func keepingSmallerOriginal(_ compressed: CompressedImage, source: SourceImage, decode: OriginalDecode) -> CompressedImage {
        guard compressed.sourceFormat == .jpeg, decode != .warned,
            compressed.variants.contains(where: { Self.mayKeepOriginal($0, sourceSize: compressed.sourceSize) })
        else { return compressed }
        let original: Data
        switch source.content {
        case .bytes(let data): original = data
        case .file(let opened):
            // Its hash covered these bytes only while the file stays as it was.
            guard let data = try? opened.readAll() else { return compressed }
            original = data
        }
        guard let stripped = JPEGOriginal.stripped(original, isSRGB: Self.isSRGB) else { return compressed }
        // An Ultra HDR original stands for a variant carrying its map only whole: its SDR picture
        // without metadata, its own gain map and the same numbers, written as imagepipe writes one.
        let whole = compressed.variants.contains { $0.encoding.hdrHeadroom != nil } ? UltraHDRJPEG.rewritten(original, primary: stripped) : nil
        func candidate(_ variant: EncodedVariant) -> Data? { variant.encoding.hdrHeadroom == nil ? stripped : whole }
        let smaller = compressed.variants.contains {
            Self.mayKeepOriginal($0, sourceSize: compressed.sourceSize) && (candidate($0).map(\.count) ?? .max) < $0.data.count
        }
        guard smaller, decode == .clean || original.withUnsafeBytes({ ipv_decodes_cleanly($0.baseAddress, $0.count) }) != 0 else {
            return compressed
        }
        var result = compressed
        for index in result.variants.indices {
            let variant = result.variants[index]
            guard Self.mayKeepOriginal(variant, sourceSize: compressed.sourceSize), let bytes = candidate(variant), bytes.count < variant.data.count
            else { continue }
            var kept = EncodedVariant(spec: variant.spec, size: variant.encoding.size, data: bytes)
            kept.encoding.keptOriginal = true
            kept.encoding.hdrHeadroom = variant.encoding.hdrHeadroom
            result.variants[index] = kept
        }
        return result
    }

    /// Whether some variant might be the source's own bytes, judged from its `start` before decoding: it is a
    /// JPEG whose frame a JPEG variant that ``mayKeepOriginal(_:sourceSize:)`` could allow has room
    /// for whole (a variant smaller than the original on either side cannot be it; a kept original
    /// is upright, so its frame is its displayed size). A photo larger than every box is never
    /// decoded twice for a warning it raises.
    static func mayKeepOriginal(start: Data, variants: [VariantSpec]) -> Bool {
        let eligible = variants.filter { $0.format == .jpeg && $0.watermark == nil && $0.metadata == .strip }
        guard !eligible.isEmpty, let frame = JPEGOriginal.frameSize(start) else { return false }
        return eligible.contains { $0.width >= frame.width && $0.height >= frame.height }
    }

    /// Whether `variant` could be the original's bytes: a JPEG at the original's size, with no
    /// watermark (the original has none, so its bytes would lose it), and stripped: the original's
    /// bytes are kept without their metadata, and a variant that keeps some must have it (its
    /// encode carries what the policy allows; the original's own segments would carry all of it).
    private static func mayKeepOriginal(_ variant: EncodedVariant, sourceSize: PixelSize) -> Bool {
        variant.spec.format == .jpeg && variant.encoding.size == sourceSize && variant.spec.watermark == nil && variant.spec.metadata == .strip
    }

    private static func isSRGB(_ profile: Data) -> Bool {
        profile.withUnsafeBytes { ipv_icc_is_srgb($0.baseAddress, $0.count) != 0 }
    }
}

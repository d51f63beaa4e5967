// Encoding a variant: its metadata, its quality (or the search for one with `auto`), and the savers.
import CVipsShim
import Foundation
import ImagePipe

extension VipsCompressor {
    /// Drops metadata (or sets what the variant's policy keeps, `metadata`), flattens alpha for JPEG
    /// and encodes at the variant's quality, or with `auto` at a quality whose score meets its
    /// target, found in few encodes.
    func encode(_ image: VipsImageHandle, as variant: VariantSpec, metadata: SourceMetadata.Blocks) throws(ImagePipeError) -> EncodedVariant {
        // Savers strip unless there is metadata to keep (none found: the output is a stripped one);
        // libvips 8.14's WebP saver still writes EXIF then, so only WebP pays for a copy without it.
        var source = image
        let keepsMetadata = !metadata.isEmpty
        if keepsMetadata {
            source = try withMetadata(image, metadata, variant: variant)
        } else if variant.format.traits.savesExifWhenStripping {
            var stripped: UnsafeMutablePointer<VipsImage>?
            guard ipv_strip_metadata(image.pointer, &stripped) == 0, let stripped else { throw encodeError(variant) }
            source = VipsImageHandle(stripped)
        }
        if !variant.format.keepsAlpha && source.hasAlpha {
            var out: UnsafeMutablePointer<VipsImage>?
            guard ipv_flatten_white(source.pointer, &out) == 0, let out else { throw encodeError(variant) }
            source = VipsImageHandle(out)
        }
        if let target = variant.autoTarget {
            return try encodeChoosingQuality(source, as: variant, target: target, keepingMetadata: keepsMetadata)
        }
        let data = try encode(source, as: variant, quality: variant.quality, keepingMetadata: keepsMetadata)
        var encoded = EncodedVariant(spec: variant, size: source.size, data: data)
        if variant.hasQuality {
            encoded.encoding.quality = variant.quality
            if configuration.scoreEveryVariant {
                encoded.encoding.score = try PerceptualScore(reference: source, variant: variant).score(of: encoded.data, variant: variant)
            }
        }
        return encoded
    }

    /// Encodes once, writing the metadata `source` carries when `keepingMetadata` (see
    /// ``withMetadata(_:_:variant:)``), else none; the returned Data owns libvips' buffer without copying it.
    func encode(_ source: VipsImageHandle, as variant: VariantSpec, quality: Int, keepingMetadata: Bool = false) throws(ImagePipeError) -> Data {
        let keep: Int32 = keepingMetadata ? 1 : 0
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let options = variant.options
        var encoding = IpvEncoding(
            quality: Int32(quality), effort: Int32(options.effort(for: variant.format)),
            progressive: options.isProgressive(for: source.size) ? 1 : 0, full_chroma: options.fullChroma ? 1 : 0,
            smart_subsample: options.smartSubsample ? 1 : 0, lossless: options.lossless ? 1 : 0,
            png_compression: Int32(configuration.pngCompression), keep_metadata: keep)
        let status = ipv_save(source.pointer, IpvFormat(UInt32(variant.format.traits.encoder)), &encoding, &buffer, &length)
        guard status == 0, let buffer else {
            // Lazy pipelines decode while encoding, so damaged input often surfaces here.
            throw decodeError()
        }
        let data = Data(bytesNoCopy: buffer, count: length, deallocator: .custom { pointer, _ in ipv_free(pointer) })
        return variant.format.traits.savesExifWhenStripping && !keepingMetadata ? WebPMetadata.stripped(data) : data
    }
}

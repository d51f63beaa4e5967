// Plain JPEGs that need no resizing (avatars, icons, already-small photos) go through libjpeg directly.
import CVipsShim
import Foundation
package import ImagePipe
import Synchronization

extension VipsCompressor {
    /// Compresses a JPEG held in memory without libvips when the outputs are exactly what libvips
    /// would make: every variant a fixed-quality JPEG at the image's own displayed size, a source
    /// that is 8-bit YCbCr, RGB or grey with no ICC profile but sRGB's, and nothing libjpeg warns about. The
    /// same decode, orientation and encoder settings give the same bytes (tested against the libvips
    /// path); what is saved is libvips' per-image machinery, most of a small image's cost.
    ///
    /// Never with a watermark, which needs libvips to draw it, nor for a variant that keeps metadata. Nil whenever any of that does not hold, and for every failure: the libvips path then makes
    /// the outputs, or words the error, as it always has.
    package func compressDirectly(
        _ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
    ) -> CompressedImage? {
        guard configuration.decodesPlainJPEGsDirectly, !configuration.scoreEveryVariant,
            case .bytes(let data) = source.content,
            variants.allSatisfy({ $0.format == .jpeg && !$0.isAuto }),
            // Its pixels go from decoder to encoder untouched: a logo needs libvips.
            !Self.anyWatermarked(variants),
            // libjpeg writes no metadata here: a variant that keeps some is saved by libvips.
            variants.allSatisfy({ $0.metadata == .strip })
        else { return nil }
        let clock = ContinuousClock()
        let start = clock.now
        let decoded: (pixels: UnsafeMutablePointer<UInt8>, size: PixelSize, reserved: Int, heldMuch: Bool)? = data.withUnsafeBytes { bytes in
            guard let jpeg = ipv_jpeg_open(bytes.baseAddress, bytes.count) else { return nil }
            defer { ipv_jpeg_close(jpeg) }
            var width: Int32 = 0, height: Int32 = 0, orientation: Int32 = 1, progressive: Int32 = 0
            ipv_jpeg_info(jpeg, &width, &height, &orientation, &progressive)
            let stored = PixelSize(width: Int(width), height: Int(height))
            let displayed = orientation >= 5 ? PixelSize(width: stored.height, height: stored.width) : stored
            let plan = ResizePlan(source: displayed, variants: variants)
            guard stored.area <= limits.maxPixels, plan.outputs.allSatisfy({ $0 == displayed }) else { return nil }
            // Held until the last variant is encoded (released below): the pixels and each encoder's
            // coefficients are most of it. A progressive file's coefficients are counted as for
            // three full components, the most they can be.
            let needed = Self.workingMemory(
                decoder: progressive != 0 ? stored.area * 2 * 3 : 0, plan: plan, variants: variants, sourceBytes: bytes.count)
            let reserved = memory.acquire(needed)
            guard let pixels = ipv_jpeg_decode(jpeg) else {
                memory.release(reserved)
                return nil
            }
            return (pixels, displayed, reserved, needed >= Self.trimAfterBytes)
        }
        guard let decoded else { return nil }
        defer {
            ipv_jpeg_free(decoded.pixels)
            memory.release(decoded.reserved)
            if decoded.heldMuch { Self.heldMuchSinceTrim.store(true, ordering: .relaxed) }
        }
        let decodeEnd = clock.now
        let decodeTime = decodeEnd - start
        var steps = [ImageStep(.decode, from: start, to: decodeEnd)]
        var stepStart = decodeEnd

        let size = decoded.size
        var encoded: [EncodedVariant] = []
        encoded.reserveCapacity(variants.count)
        for (index, variant) in variants.enumerated() {
            var buffer: UnsafeMutableRawPointer?
            var length = 0
            let options = variant.options
            guard
                ipv_jpeg_encode(
                    decoded.pixels, Int32(size.width), Int32(size.height), Int32(variant.quality),
                    options.isProgressive(for: size) ? 1 : 0, options.fullChroma ? 1 : 0, &buffer, &length) == 0,
                let buffer
            else { return nil }
            var output = EncodedVariant(
                spec: variant, size: size,
                data: Data(bytesNoCopy: buffer, count: length, deallocator: .custom { pointer, _ in ipv_jpeg_free(pointer) }))
            output.encoding.quality = variant.quality
            encoded.append(output)
            let now = clock.now
            steps.append(ImageStep(.encode(variant: index), from: stepStart, to: now))
            stepStart = now
        }
        var compressed = CompressedImage(
            sourceFormat: .jpeg, sourceSize: size, variants: encoded,
            decodeTime: decodeTime, encodeTime: clock.now - start - decodeTime)
        // The XMP, if any, is read from the JPEG's own segments by the provenance step: the whole
        // file is in memory, so all of them.
        (compressed.placeholder, compressed.facts) = analyse(
            AnalysisContext.Picture(pixels: decoded.pixels, width: size.width, height: size.height, bands: 3), source: source,
            start: data, xmp: nil)
        steps.append(ImageStep(.analyses, from: stepStart, to: clock.now))
        compressed.steps = steps
        directCompressions.count.add(1, ordering: .relaxed)
        return compressed
    }
}

/// How many images a compressor made through the direct path: what tells the paths apart, as
/// their outputs are the same.
package final class DirectPathCounter: Sendable {
    let count = Atomic<Int>(0)
    init() {}

    /// The count so far.
    package var value: Int { count.load(ordering: .relaxed) }
}

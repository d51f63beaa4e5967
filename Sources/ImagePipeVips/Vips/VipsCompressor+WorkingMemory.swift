// How much memory one compression holds at its peak, from the header before anything is decoded.
import CLibVips
import CVipsShim
package import ImagePipe

extension VipsCompressor {
    /// The memory one compression of `variants` will hold at its peak, estimated from the header:
    /// the still variants' as below, and for an animated source's moving variants every frame
    /// decoded and the largest one's frames as its encoder holds them (``animationMemory(_:frames:outputs:)``).
    package static func workingMemory(
        _ header: VipsImageHandle, format: SourceFormat, variants: [VariantSpec], sourceBytes: Int, focus: FocalPoint?
    ) -> Int {
        let displayed = displayedSize(of: header)
        let frames = frameCount(of: header)
        let moves = { (variant: VariantSpec) in frames > 1 && variant.animates(focus: focus) }
        let still = variants.filter { !moves($0) }
        let moving = variants.filter(moves)
        var needed =
            still.isEmpty
            ? sourceBytes
            : workingMemory(
                header, format: format, plan: ResizePlan(source: displayed, variants: still), variants: still,
                sourceBytes: sourceBytes, focus: focus)
        if !moving.isEmpty {
            needed += animationMemory(header, frames: frames, outputs: moving.map { ResizePlan.outputSize(source: displayed, variant: $0) })
        }
        return needed
    }

    /// The memory one compression will hold at its peak, estimated from the header: the source bytes,
    /// the decoder's buffers, the in-memory intermediate and the largest encoder's buffers.
    package static func workingMemory(
        _ header: VipsImageHandle, format: SourceFormat, plan: ResizePlan, variants: [VariantSpec],
        sourceBytes: Int, focus: FocalPoint? = nil
    ) -> Int {
        let stored = header.size
        let bands = Int(header.pointer.pointee.Bands)
        let sampleBytes = Int(vips_format_sizeof(header.pointer.pointee.BandFmt))
        let decoder: Int =
            switch format {
            case .jpeg where header.int("jpeg-multiscan") == 1:
                // Progressive JPEGs keep every DCT coefficient (2 bytes each) until the last scan.
                Int(Double(stored.area) * 2 * Self.jpegComponentsPerPixel(header, bands: bands))
            case .png where header.int("interlaced") == 1:
                // Interlaced (Adam7) PNGs decode whole.
                stored.area * bands * sampleBytes
            case .jpeg, .png, .tiff:
                // Baseline JPEG, plain PNG and TIFF decode in strips.
                0
            default:
                // WebP, HEIC, AVIF and GIF decoders produce the whole image at once.
                stored.area * max(bands, 3) * sampleBytes
            }
        return workingMemory(decoder: decoder, plan: plan, variants: variants, sourceBytes: sourceBytes, focus: focus)
    }

    /// The same once the decoder's own buffers are known: the source bytes, those buffers, the
    /// in-memory intermediate and the largest encoder's buffers.
    static func workingMemory(decoder: Int, plan: ResizePlan, variants: [VariantSpec], sourceBytes: Int, focus: FocalPoint? = nil) -> Int {
        // The decoded copy every variant is made from, or the one output's pixels; a crop placed by
        // imagepipe rather than centred by libvips holds what covers the box whole (see placeCrop).
        let covering = { (index: Int) in ResizePlan.coverSize(of: plan.decodeSize, for: plan.outputs[index]).area * 4 }
        let placed = variants.indices.filter { placesCrop(variants[$0], focus: focus) }
        let intermediate =
            variants.count > 1
            ? plan.decodeSize.area * 4 + (placed.map(covering).max() ?? 0)
            : placed.isEmpty ? plan.outputs[0].area * 4 : ResizePlan.coverSize(of: plan.source, for: plan.outputs[0]).area * 4
        // Encoders hold their whole input (FormatTraits.encoderBytesPerPixel): JPEG's optimised Huffman
        // pass keeps coefficients (6 bytes per pixel), libwebp, libaom and libjxl their own planes. Variants are encoded one after another. Choosing
        // a quality also holds the variant in memory, its scales and moments, and a decoded probe.
        let encoder =
            zip(variants, plan.outputs).map { variant, size in
                size.area * variant.format.traits.encoderBytesPerPixel + (variant.isAuto ? size.area * PerceptualScore.bytesPerPixel : 0)
            }.max() ?? 0
        return sourceBytes + decoder + intermediate + encoder
    }

    /// JPEG components stored per pixel: chroma subsampling shares them between pixels.
    private static func jpegComponentsPerPixel(_ header: VipsImageHandle, bands: Int) -> Double {
        switch header.string("jpeg-chroma-subsample") {
        case "4:2:0": 1.5
        case "4:2:2": 2
        default: Double(bands)
        }
    }
}

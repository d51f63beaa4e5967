// Animated GIF and WebP sources: the frame budget, one decode of every frame, and each animated variant made frame by frame.
import CVipsShim
import Foundation
import ImagePipe

extension VipsCompressor {
    /// The frames the header declares (libvips' `n-pages`); 1 for a still image.
    static func frameCount(of header: VipsImageHandle) -> Int {
        max(1, header.int("n-pages") ?? 1)
    }

    /// Refuses an animated source whose frames, all decoded, would be more than `limits` allow:
    /// more than ``CompressionLimits/maxFrames`` frames, or frames × the declared canvas over
    /// ``CompressionLimits/maxPixels``. Checked from the header, before any frame is decoded.
    static func checkFrames(_ header: VipsImageHandle, frames: Int, _ limits: CompressionLimits) throws(ImagePipeError) {
        let canvas = header.size
        let (total, overflow) = canvas.area.multipliedReportingOverflow(by: frames)
        if frames > limits.maxFrames {
            throw ImagePipeError(
                .imageTooLarge, "animation has \(frames) frames of \(canvas), over the limit of \(limits.maxFrames) frames (--max-frames)")
        }
        guard !overflow, total <= limits.maxPixels else {
            throw ImagePipeError(
                .imageTooLarge,
                "animation is \(frames) frames of \(canvas) (\(overflow ? "over 9e12" : megapixels(total)) megapixels decoded), "
                    + "over the limit of \(megapixels(limits.maxPixels)) megapixels (--max-pixels)")
        }
    }

    /// The working memory of the animated variants, besides the source's bytes: every frame decoded
    /// (the copy in memory all variants are made from, and the loader's canvases), and the largest
    /// variant's frames, each held in memory once made, with the encoder's few canvases (libwebp's
    /// animation encoder keeps the previous canvas and candidate frames), one variant at a time.
    /// 60 frames of 800x600 through the `web` preset are estimated at about 250 MB; the process
    /// peaked at 223 MB of RSS, its own 65 MB included (550 MB before frames were held as made).
    static func animationMemory(_ header: VipsImageHandle, frames: Int, outputs: [PixelSize]) -> Int {
        let canvas = header.size.area
        let encoder = outputs.map { $0.area * 4 * (frames + 4) }.max() ?? 0
        return canvas * 4 * (frames + 2) + encoder
    }

    /// Every frame, one under the other, as 8-bit sRGB held in memory, with page-height, delay and loop.
    ///
    /// A decode of its own: the still variants' decode shrinks on load and holds the first frame
    /// only, and libvips 8.14's thumbnail, which can shrink every frame of a loaded animation, crops
    /// the stack as one image and rotates it whole; so every frame is decoded once here, at its own
    /// size, and each animated variant resizes, crops and rotates frame by frame from this copy.
    func decodeFrames(_ source: SourceImage) throws(ImagePipeError) -> VipsImageHandle {
        let pointer: UnsafeMutablePointer<VipsImage>?
        switch source.content {
        case .bytes(let data):
            pointer = data.withUnsafeBytes { ipv_frames_buffer($0.baseAddress, $0.count) }
        case .file(let opened):
            pointer = ipv_frames_descriptor(opened.descriptor)
        }
        guard let pointer else { throw decodeError() }
        var out: UnsafeMutablePointer<VipsImage>?
        let loaded = VipsImageHandle(pointer)
        let status = withExtendedLifetime(loaded) { ipv_to_srgb8(loaded.pointer, &out) }
        guard status == 0, let out else { throw decodeError() }
        let srgb = VipsImageHandle(out)
        guard let memory = withExtendedLifetime(srgb, { ipv_copy_memory(srgb.pointer) }) else { throw decodeError() }
        return VipsImageHandle(memory)
    }

    /// The height of one frame of `frames` (as made by ``decodeFrames(_:)``).
    static func frameHeight(of frames: VipsImageHandle) -> Int {
        let height = frames.size.height
        guard let page = frames.int("page-height"), page > 0, height % page == 0 else { return height }
        return page
    }

    /// Frame `index` of `frames`, upright.
    func frame(_ index: Int, of frames: VipsImageHandle, height: Int) throws(ImagePipeError) -> VipsImageHandle {
        var area: UnsafeMutablePointer<VipsImage>?
        let status = withExtendedLifetime(frames) {
            ipv_extract_area(frames.pointer, 0, Int32(index * height), frames.pointer.pointee.Xsize, Int32(height), &area)
        }
        guard status == 0, let area else { throw decodeError() }
        let extracted = VipsImageHandle(area)
        var upright: UnsafeMutablePointer<VipsImage>?
        guard withExtendedLifetime(extracted, { ipv_autorot(extracted.pointer, &upright) }) == 0, let upright else { throw decodeError() }
        return VipsImageHandle(upright)
    }

    /// The first frame, upright, in memory: the placeholder's pixels when no still variant decoded it.
    func firstFrame(of frames: VipsImageHandle) throws(ImagePipeError) -> VipsImageHandle {
        let first = try frame(0, of: frames, height: Self.frameHeight(of: frames))
        guard let memory = withExtendedLifetime(first, { ipv_copy_memory(first.pointer) }) else { throw decodeError() }
        return VipsImageHandle(memory)
    }

    /// One animated variant: each frame resized to `size` (filled and cropped for `cover`, where
    /// the variant's position or the focal point says, the same place on every frame), watermarked
    /// when the variant has one, and held in memory, then stacked again with the source's delays
    /// and loop count and encoded. A quality is the variant's own or, for `auto`, its starting quality: the score that
    /// chooses one compares a single picture.
    func animate(
        _ frames: VipsImageHandle, to size: PixelSize, variant: VariantSpec, focus: FocalPoint?
    ) throws(ImagePipeError) -> EncodedVariant {
        let height = Self.frameHeight(of: frames)
        let count = frames.size.height / height
        var made: [VipsImageHandle] = []
        made.reserveCapacity(count)
        for index in 0..<count {
            let upright = try frame(index, of: frames, height: height)
            let resized =
                variant.fit == .cover
                ? try placeCrop(upright, to: size, variant: variant, focus: focus)
                : try resizeFrame(upright, to: size)
            // Made now, one frame at a time: left lazy, every frame's resize would keep its buffers
            // until the encoder reached the last frame (60 frames of 800x600 into a 320 px thumbnail
            // held 550 MB instead of the output frames' 25 MB).
            // A frame left at its size is a view of the decoded frames, and holds nothing of its own.
            let marked = try overlayWatermark(resized, variant: variant)
            if marked === upright {
                made.append(marked)
                continue
            }
            guard let memory = withExtendedLifetime(marked, { ipv_copy_memory(marked.pointer) }) else { throw decodeError() }
            made.append(VipsImageHandle(memory))
        }
        var pointers: [UnsafeMutablePointer<VipsImage>?] = made.map(\.pointer)
        var joined: UnsafeMutablePointer<VipsImage>?
        let status = withExtendedLifetime((made, frames)) {
            pointers.withUnsafeMutableBufferPointer { ipv_join_frames($0.baseAddress, Int32(count), frames.pointer, &joined) }
        }
        guard status == 0, let joined else { throw encodeError(variant) }
        var stripped: UnsafeMutablePointer<VipsImage>?
        let animation = VipsImageHandle(joined)
        guard withExtendedLifetime(animation, { ipv_strip_metadata(animation.pointer, &stripped) }) == 0, let stripped else {
            throw encodeError(variant)
        }
        let image = VipsImageHandle(stripped)
        var encoded = EncodedVariant(spec: variant, size: size, data: try encode(image, as: variant, quality: variant.quality))
        encoded.encoding.frames = count
        if variant.hasQuality { encoded.encoding.quality = variant.quality }
        return encoded
    }

    /// A frame resized to `size` exactly; the frame itself when it already is that size.
    private func resizeFrame(_ frame: VipsImageHandle, to size: PixelSize) throws(ImagePipeError) -> VipsImageHandle {
        if frame.size == size { return frame }
        var out: UnsafeMutablePointer<VipsImage>?
        let status = withExtendedLifetime(frame) { ipv_resize_exact(frame.pointer, Int32(size.width), Int32(size.height), &out) }
        guard status == 0, let out else { throw decodeError() }
        return VipsImageHandle(out)
    }
}

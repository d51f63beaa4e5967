// Cover crops that are not centred: libvips' smartcrop, a compass point, or the job's focal point.
import CVipsShim
import ImagePipe

extension VipsCompressor {
    /// Whether a `cover` variant's crop is placed here rather than by libvips' thumbnail, which only
    /// centres: a position other than the centre, or a focal point (which wins over any position).
    static func placesCrop(_ variant: VariantSpec, focus: FocalPoint?) -> Bool {
        variant.fit == .cover && (variant.crop != .centre || focus != nil)
    }

    /// Crops `image` to `size` at the variant's position or the focal point: first resized, keeping
    /// its aspect ratio, to the smallest size that covers `size` (unless it already does so exactly),
    /// then the box is taken where the position or point says.
    ///
    /// A smart crop analyses pixels while libvips builds it, under the shim's lock on resizes, so
    /// the resize is made and copied to memory first, outside that lock: the analysis then reads a
    /// small image held in memory, and the decode and resize never run with the lock held.
    func placeCrop(
        _ image: VipsImageHandle, to size: PixelSize, variant: VariantSpec, focus: FocalPoint?
    ) throws(ImagePipeError) -> VipsImageHandle {
        let covering = ResizePlan.coverSize(of: image.size, for: size)
        var scaled = image
        if covering != image.size {
            var out: UnsafeMutablePointer<VipsImage>?
            guard ipv_resize_exact(image.pointer, Int32(covering.width), Int32(covering.height), &out) == 0, let out else {
                throw decodeError()
            }
            scaled = VipsImageHandle(out)
        }
        var out: UnsafeMutablePointer<VipsImage>?
        if focus == nil && variant.crop.isSmart {
            if covering != image.size {
                guard let memory = ipv_copy_memory(scaled.pointer) else { throw decodeError() }
                scaled = VipsImageHandle(memory)
            }
            // Kept alive through the call: `scaled` may hold the only reference, and its last unref
            // must go through the shim's lock (ipv_unref), not be dropped on an error path in C.
            let status = withExtendedLifetime(scaled) {
                ipv_smartcrop(scaled.pointer, Int32(size.width), Int32(size.height), variant.crop == .attention ? 1 : 0, &out)
            }
            guard status == 0, let out else { throw decodeError() }
            return VipsImageHandle(out)
        }
        let offset =
            if let focus {
                CropPlacement.offset(of: size, in: covering, focus: focus)
            } else {
                CropPlacement.offset(of: size, in: covering, anchor: variant.crop.anchor ?? (0.5, 0.5))
            }
        let status = withExtendedLifetime(scaled) {
            ipv_extract_area(scaled.pointer, Int32(offset.left), Int32(offset.top), Int32(size.width), Int32(size.height), &out)
        }
        guard status == 0, let out else { throw decodeError() }
        return VipsImageHandle(out)
    }
}

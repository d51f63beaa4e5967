// The watermark laid over a variant once it is resized, before it is encoded.
import CVipsShim
import ImagePipe

extension VipsCompressor {
    /// Whether any of `variants` carries a watermark: such an image must be decoded and encoded,
    /// never taken by a path that passes pixels through untouched.
    static func anyWatermarked(_ variants: [VariantSpec]) -> Bool {
        variants.contains { $0.watermark != nil }
    }

    /// `image` (a variant at its output size) with the variant's watermark over it: the logo
    /// resized to the size its settings give for this output, then blended in at its place. The
    /// image itself when the variant has none or no pixel of the logo would fit.
    func overlayWatermark(_ image: VipsImageHandle, variant: VariantSpec) throws(ImagePipeError) -> VipsImageHandle {
        guard let watermark = variant.watermark else { return image }
        guard let logo = watermarkLogo, logo.sha256 == watermark.logoSHA256 else {
            throw ImagePipeError(.encodeFailed, "variant \(variant.name) asks for a watermark whose logo this compressor was not given")
        }
        guard let placement = watermark.placement(on: image.size, logo: logo.size) else { return image }
        var scaled = logo.image
        if placement.size != logo.size {
            var out: UnsafeMutablePointer<VipsImage>?
            guard ipv_resize_exact(logo.image.pointer, Int32(placement.size.width), Int32(placement.size.height), &out) == 0, let out else {
                throw encodeError(variant)
            }
            scaled = VipsImageHandle(out)
        }
        var out: UnsafeMutablePointer<VipsImage>?
        // Both kept alive through the call: `scaled` may hold the only reference to the resized logo.
        let status = withExtendedLifetime((image, scaled)) {
            ipv_watermark(image.pointer, scaled.pointer, Int32(placement.left), Int32(placement.top), watermark.opacity, &out)
        }
        guard status == 0, let out else { throw encodeError(variant) }
        return VipsImageHandle(out)
    }
}

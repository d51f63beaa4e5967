// The reference each benchmark's CPU time is divided by: the same libvips work, done plainly, in the same process and run.
import Foundation
import ImagePipe
import PlainLibvips

/// A workload's libvips calls with nothing of imagepipe's around them (Benchmarks/PlainLibvips).
///
/// Absolute CPU times do not travel between machines: a check stored on one machine fails on a
/// slower one out of the box, and passes a regression on a faster one. The same decode, resize and
/// encode done plainly, measured beside imagepipe's in the same iteration, slows down and speeds up
/// with the machine, so imagepipe's CPU time as a ratio to it does travel; it grows only when
/// imagepipe's own work around libvips grows (or it stops taking a shortcut the plain calls lack).
struct PlainReference {
    let variants: [PlainVariant]
    let decodePerVariant: Bool

    init(_ workload: CompressionWorkload) {
        variants = workload.variants.map(Self.plain)
        decodePerVariant = workload == .independentDecodesWebPreset
    }

    /// The variant's settings, resolved as imagepipe's compressor resolves them.
    static func plain(_ spec: VariantSpec) -> PlainVariant {
        let format: PlainFormat =
            switch spec.format {
            case .jpeg: PLAIN_JPEG
            case .webp: PLAIN_WEBP
            case .avif: PLAIN_AVIF
            case .png: PLAIN_PNG
            default: fatalError("no plain reference for \(spec.format)")
            }
        let progressive = (spec.options.progressive ?? true) ? EncoderOptions.progressiveFromSide : 0
        return PlainVariant(
            width: Int32(spec.width), height: Int32(spec.height), cover: spec.fit == .cover ? 1 : 0, format: format,
            quality: Int32(spec.quality), effort: Int32(spec.options.effort(for: spec.format)), png_compression: 6,
            progressive_from_side: Int32(progressive))
    }

    /// Makes the workload's outputs from `source`; returns their total size.
    func run(_ source: Data) -> Int {
        let bytes = source.withUnsafeBytes { buffer in
            plain_libvips_job(buffer.baseAddress, buffer.count, variants, Int32(variants.count), decodePerVariant ? 1 : 0)
        }
        precondition(bytes > 0, "the plain reference failed (its libvips error is above)")
        plain_libvips_release()
        return bytes
    }
}

/// The CPU time this process has used, every thread's (libvips' workers too), in nanoseconds.
func processCPUNanoseconds() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
}

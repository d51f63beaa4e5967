// Compressing fixtures with one compressor shared by the libvips tests.
import Foundation
import ImagePipe
import ImagePipeVips
import ImagePipeTestSupport

/// A compressor shared by the libvips tests, and compressing fixtures with it.
extension Fixtures {
    static let compressor: VipsCompressor = {
        try! Vips.configure(threadsPerImage: 1)
        return try! VipsCompressor()
    }()

    /// Encoding only: every variant encoded, also one a JPEG original at its own size would be
    /// smaller as (for tests of the encoders themselves).
    static let encoder: VipsCompressor = {
        _ = compressor
        var configuration = VipsCompressor.Configuration()
        configuration.keepsSmallerOriginal = false
        return try! VipsCompressor(configuration: configuration)
    }()

    /// Compresses a fixture (or any bytes) with the given variants.
    static func compress(
        _ relative: String, _ variants: [VariantSpec] = Preset.web,
        limits: CompressionLimits = .default
    ) throws(ImagePipeError) -> CompressedImage {
        try compressor.compress(SourceImage(name: relative, content: .bytes(data(relative))), variants: variants, limits: limits)
    }

    static func compress(bytes: Data, _ variants: [VariantSpec] = Preset.web) throws(ImagePipeError) -> CompressedImage {
        try compressor.compress(SourceImage(name: "bytes", content: .bytes(bytes)), variants: variants, limits: .default)
    }

    static func variant(_ spec: String) -> VariantSpec { try! VariantSpec(parsing: spec) }
}

extension CompressedImage {
    func output(_ name: String) -> EncodedVariant { variants.first { $0.spec.name == name }! }
}

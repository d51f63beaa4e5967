import Foundation
import ImagePipe
import ImagePipeVips
import ImagePipeTestSupport

/// The committed fixtures and a shared compressor.
enum Fixtures {
    static let root = fixturesDirectory(above: #filePath)

    static func path(_ relative: String) -> String { root + "/" + relative }

    static func data(_ relative: String) -> Data {
        try! Data(contentsOf: URL(fileURLWithPath: path(relative)))
    }

    static func files(in directory: String) -> [String] {
        (try! FileManager.default.contentsOfDirectory(atPath: path(directory))).sorted()
    }

    static let compressor: VipsCompressor = {
        try! Vips.configure(threadsPerImage: 1)
        return try! VipsCompressor()
    }()

    /// Compresses a fixture (or any bytes) with the given variants.
    static func compress(_ relative: String, _ variants: [VariantSpec] = Preset.web,
                         limits: CompressionLimits = .default) throws(ImagePipeError) -> CompressedImage {
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

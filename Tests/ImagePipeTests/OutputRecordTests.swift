import Foundation
import ImagePipe
import ImagePipeTestKit
import ImagePipeTestSupport
import Testing

/// One record of each output from the compressor to the manifest: what encoding made of a variant
/// reaches the result and its JSON line as the compressor said it, and reads back the same.
@Suite struct OutputRecordTests {
    let directory = TemporaryDirectory()

    /// Says of every variant what a real encoder might: a chosen quality and its score, the encodes
    /// a search made, an original kept whole, an animation's frames.
    struct DescribingCompressor: ImageCompressor {
        static let encodings = [
            VariantEncoding(size: PixelSize(width: 2048, height: 1536), quality: 71, score: 80.123_456, encodes: 3),
            VariantEncoding(size: PixelSize(width: 1024, height: 768), keptOriginal: true),
            VariantEncoding(size: PixelSize(width: 320, height: 320), quality: 70, frames: 12),
        ]

        func compress(
            _ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
        ) throws(ImagePipeError) -> CompressedImage {
            let made = zip(variants, Self.encodings).map { spec, encoding in
                var variant = EncodedVariant(spec: spec, size: encoding.size, data: Data("\(spec.name)".utf8))
                variant.encoding = encoding
                return variant
            }
            return CompressedImage(
                sourceFormat: .jpeg, sourceSize: PixelSize(width: 4000, height: 3000), variants: made, decodeTime: .zero, encodeTime: .zero)
        }
    }

    @Test func whatTheCompressorSaysOfEachVariantIsWhatTheManifestSays() async throws {
        let handler = FileHandler(compressor: DescribingCompressor(), storage: InMemoryStorage())
        let result = try await handler.run(Job(path: directory.write("a.jpg", ScriptedCompressor.image("bytes")), relativePath: "a.jpg"))
        #expect(result.status == .done, "\(result)")
        #expect(result.variants.map(\.encoding) == DescribingCompressor.encodings)

        let line = result.jsonLine()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let variants = try #require(object["variants"] as? [[String: Any]])
        #expect(variants.count == 3)
        // The encoding's fields sit beside the record's own; the score to hundredths; defaults left out.
        #expect(variants[0]["width"] as? Int == 2048 && variants[0]["quality"] as? Int == 71 && variants[0]["encodes"] as? Int == 3)
        #expect(variants[0]["score"] as? Double == 80.12)
        #expect(variants[0]["kept_original"] == nil && variants[0]["frames"] == nil)
        #expect(variants[1]["kept_original"] as? Bool == true && variants[1]["quality"] == nil)
        #expect(variants[2]["frames"] as? Int == 12 && variants[2]["encodes"] == nil)

        var read = try JSONDecoder().decode(JobResult.self, from: Data(line.utf8))
        #expect(read.variants[0].encoding.score == 80.12)
        read.variants[0].encoding.score = result.variants[0].encoding.score
        #expect(read.variants == result.variants)
    }

    /// A record written before a field existed reads with the field at its default.
    @Test func aVariantLineOfAnEarlierVersionReadsWithDefaults() throws {
        let line = #"{"bytes":10,"format":"webp","height":20,"key":"k.webp","name":"thumb","url":"file:///k.webp","width":30}"#
        let record = try JSONDecoder().decode(VariantRecord.self, from: Data(line.utf8))
        #expect(record.encoding == VariantEncoding(size: PixelSize(width: 30, height: 20)))
        #expect(record.width == 30 && record.height == 20 && record.bytes == 10)
    }
}

import Foundation
import ImagePipe
import Testing

@testable import ImagePipeSandbox

/// The messages between a worker and its helpers: what one side writes the other reads back the
/// same, and what a hostile helper could send instead is refused, never trusted.
@Suite struct HelperMessageTests {
    static let variants = [
        try! VariantSpec(parsing: "large=2048x2048,jpeg,q82"), try! VariantSpec(parsing: "thumb=320x320,webp,auto,cover"),
    ]

    @Test func everyRequestReadsBackAsWritten() throws {
        let requests: [HelperRequest] = [
            .setup(variants: Self.variants, limits: CompressionLimits(maxPixels: 1234, maxFrames: 56)),
            .compress(HelperSource(name: "Été/IMG 0001.HEIC", focus: FocalPoint(x: 0.25, y: 0.75), isFile: true)),
            .readHeader(HelperSource(name: "a.jpg", focus: nil, isFile: false)),
            .grant(128 << 20), .trim,
        ]
        for request in requests {
            #expect(try HelperRequest(decoding: request.encoded()) == request)
        }
    }

    @Test func everyReplyReadsBackAsWritten() throws {
        var result = HelperResult(
            CompressedImage(
                sourceFormat: .heic, sourceSize: PixelSize(width: 4032, height: 3024), variants: [],
                decodeTime: .milliseconds(120), encodeTime: .nanoseconds(987_654_321)))
        result.placeholder = Placeholder(thumbHash: "1QcSHQRnh493V4dIh4eXh1h4kJUI", color: "#7f8c8d")
        result.variants = [
            .init(
                size: PixelSize(width: 2048, height: 1536), byteCount: 345_678, quality: 82, score: 87.25, encodes: 1, keptOriginal: false, frames: 1),
            .init(size: PixelSize(width: 320, height: 320), byteCount: 9_876, quality: nil, score: nil, encodes: 3, keptOriginal: true, frames: 12),
        ]
        let replies: [HelperReply] = [
            .ready(sandboxed: true, landlock: 7), .startFailed("Landlock: Operation not permitted"), .need(88 << 20),
            .compressed(result), .header(SourceHeader(format: .avif, size: PixelSize(width: 10, height: 20))), .header(nil),
            .failed(ImagePipeError(.corruptImage, "premature end of JPEG file")),
        ]
        for reply in replies {
            #expect(try HelperReply(decoding: reply.encoded()) == reply)
        }
    }

    @Test func aReplyCutShortOrWithBytesLeftOverIsRefused() throws {
        let bytes = HelperReply.need(42).encoded()
        for end in 0..<bytes.count {
            #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: Array(bytes[..<end])) }
        }
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: bytes + [0]) }
    }

    @Test func aReplyOfUnknownKindOrOutOfRangeValuesIsRefused() throws {
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: [99]) }
        // A request's kind is no reply.
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: HelperRequest.trim.encoded()) }
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: HelperReply.need(-1).encoded()) }
        var writer = WireWriter(kind: 15)  // failed, with a code no imagepipe version has
        writer.string("rm_rf")
        writer.string("reason")
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: writer.bytes) }
        var huge = WireWriter(kind: 11)  // a reason whose length says a terabyte follows
        huge.int(1 << 40)
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: huge.bytes) }
    }

    @Test func aResultMayNotDescribeMoreVariantsThanAMessageCarriesDescriptorsFor() throws {
        var result = HelperResult(
            CompressedImage(sourceFormat: .jpeg, sourceSize: PixelSize(width: 1, height: 1), variants: [], decodeTime: .zero, encodeTime: .zero))
        result.variants = Array(
            repeating: .init(size: PixelSize(width: 1, height: 1), byteCount: 1, quality: 80, score: nil, encodes: 1, keptOriginal: false, frames: 1),
            count: HelperResult.maxVariants + 1)
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: HelperReply.compressed(result).encoded()) }
    }
}

import Foundation
import ImagePipeTestSupport
import ImagePipe
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

/// Bad input fails with a clear, permanent error, and costs little.
///
/// One test at a time: libvips keeps one error buffer per process, so text from failures at the
/// same moment can join each other's reasons (the shim marks per operation, which narrows this to
/// failures in the same moments, not to none). These tests assert exact reasons, one of them fills
/// the buffer on purpose, and one makes 40 failures at once on purpose; run side by side they would
/// make exactly those moments.
@Suite(.serialized) struct HostileInputTests {
    func failure(_ relative: String, limits: CompressionLimits = .default) -> ImagePipeError? {
        do {
            _ = try Fixtures.compress(relative, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func truncatedImagesFailInsteadOfComingOutGrey() throws {
        for name in ["hostile/truncated.jpg", "hostile/truncated.png"] {
            let error = try #require(failure(name), "\(name) must fail")
            #expect(error.code == .corruptImage, "\(name): \(error)")
            #expect(!error.isTransient)
            #expect(error.reason.contains("truncated") || error.reason.contains("corrupt"))
        }
    }

    @Test func emptyAndNonImageFilesFailWithAReason() throws {
        let empty = try #require(failure("hostile/empty.jpg"))
        #expect(empty.code == .emptyFile)
        let text = try #require(failure("hostile/text.jpg"))
        #expect(text.code == .unsupportedFormat)
        #expect(text.reason == "not a recognised image format")
        let garbage = try #require(failure("hostile/garbage.webp"))
        #expect(garbage.code == .unsupportedFormat || garbage.code == .corruptImage)
    }

    @Test(arguments: [
        ("hostile/garbage.png", "PNG unsigned integer out of range"),
        ("pngsuite/xc1n0g08.png", "Invalid color type in IHDR"),
        ("pngsuite/xhdn0g08.png", "IHDR: CRC error"),
        ("hostile/truncated.jpg", "Premature end of"),
    ])
    func failuresCarryLibvipsOwnReason(_ relative: String, _ reason: String) throws {
        let error = try #require(failure(relative))
        #expect(error.code == .corruptImage)
        #expect(error.reason.contains(reason), "\(relative): \(error.reason)")
        #expect(!error.reason.contains("unknown error"))
    }

    @Test func concurrentFailuresKeepTheirOwnReasons() async throws {
        // libpng's reasons arrive as warnings; each image must get those raised while reading it.
        let cases = [
            ("hostile/garbage.png", "PNG unsigned integer", "IHDR"),
            ("pngsuite/xc1n0g08.png", "Invalid color type in IHDR", "PNG unsigned integer"),
        ]
        let reasons = await withTaskGroup(of: (Int, String).self) { group in
            for round in 0..<40 {
                group.addTask { (round % 2, failure(cases[round % 2].0)?.reason ?? "") }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for (index, reason) in reasons {
            #expect(reason.contains(cases[index].1) && !reason.contains(cases[index].2), "\(cases[index].0): \(reason)")
        }
    }

    @Test func concurrentFailuresEachKeepLibvipsErrorText() async throws {
        // libjpeg's reason reaches libvips' error buffer, which is one per process: one thread's
        // taking of its reason must never take another's.
        let reasons = await withTaskGroup(of: String.self) { group in
            for _ in 0..<40 {
                group.addTask { failure("hostile/truncated.jpg")?.reason ?? "" }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for reason in reasons {
            #expect(reason.contains("Premature end of"), "\(reason)")
        }
    }

    @Test func failuresStillNameTheirReasonAfterLibvipsBufferFilledUp() throws {
        // libvips' error buffer holds 10 KB and then drops every message; text that nobody takes
        // back (left by calls whose failure is not read) fills it in a long-running worker. Two
        // hundred such lines fill it several times over; the next failure must still say why.
        for _ in 0..<3 {
            try VipsProbe.leaveLibvipsErrors(200)
            let failed = try #require(failure("hostile/truncated.jpg"))
            #expect(failed.reason.contains("Premature end of"), "\(failed.reason)")
            #expect(!failed.reason.contains("nobody took back"), "\(failed.reason)")
        }
    }

    @Test func aDecompressionBombIsRejectedFromItsHeader() throws {
        let header = try #require(failure("hostile/bomb.png"))
        // imageTooLarge is only raised before decoding, from the declared size.
        #expect(header.code == .imageTooLarge)
        #expect(header.reason.contains("60000x60000"))
        #expect(header.reason.contains("--max-pixels"))
    }

    /// One bomb per format libvips reads here (fixtures/make-bombs.py): each header declares gigabytes
    /// of pixels over a few hundred bytes of data, and is refused from that header in moments.
    @Test(arguments: [
        ("bomb.jpg", "65000x65000"), ("bomb.webp", "16383x16383"), ("bomb-animated.webp", "16383x16383"),
        ("bomb.gif", "65535x65535"), ("bomb.tiff", "50000x50000"), ("bomb.heic", "16000x16000"), ("bomb.avif", "16000x16000"),
    ])
    func aDecompressionBombOfEachFormatIsRejectedFromItsHeader(_ name: String, _ declared: String) throws {
        var found: ImagePipeError?
        let elapsed = ContinuousClock().measure { found = failure("hostile/" + name) }
        let error = try #require(found, "\(name) must be refused")
        #expect(error.code == .imageTooLarge, "\(name): \(error)")
        #expect(error.reason.contains(declared) && error.reason.contains("--max-pixels"), "\(name): \(error.reason)")
        #expect(elapsed < .seconds(5), "\(name) took \(elapsed): decoded rather than refused?")
    }

    @Test func theLimitIsConfigurable() throws {
        let error = try #require(failure("images/exif-orientation/Landscape_1.jpg", limits: CompressionLimits(maxPixels: 1_000_000)))
        #expect(error.code == .imageTooLarge)
        #expect(error.reason.contains("1800x1200"))
    }

    /// Bytes no loader of imagepipe's takes are no format at all: libvips' ImageMagick loader, which
    /// takes nearly anything (a run of zero bytes among it), is not even loaded, so the reason is
    /// not one about a loader the user never asked for.
    @Test func bytesNoLoaderTakesAreNotARecognisedFormat() throws {
        do {
            _ = try Fixtures.compress(bytes: Data(count: 5000))
            Issue.record("5000 zero bytes were compressed")
        } catch {
            #expect(error.code == .unsupportedFormat)
            #expect(error.reason.contains("not a recognised image format"), "\(error.reason)")
            #expect(!error.reason.localizedCaseInsensitiveContains("magick"), "\(error.reason)")
        }
    }

    @Test(arguments: ["hostile/image.svg", "hostile/document.pdf"])
    func untrustedLoadersAreBlocked(_ relative: String) throws {
        let error = try #require(failure(relative))
        #expect(error.code == .unsupportedFormat)
        #expect(error.reason.contains("blocked") || error.reason.contains("not a recognised"), "\(error)")
    }
}

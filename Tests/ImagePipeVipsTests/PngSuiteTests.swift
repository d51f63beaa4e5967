import Foundation
import ImagePipeTestSupport
import ImagePipe
import ImagePipeVips
import ImagePipeVipsTestSupport
import Testing

/// PngSuite: every colour type and bit depth converts; every deliberately corrupt file fails cleanly.
@Suite struct PngSuiteTests {
    static let all = Fixtures.files(in: "pngsuite").filter { $0.hasSuffix(".png") }
    static let variants = [Fixtures.variant("w=64x64,webp,q80"), Fixtures.variant("j=32x32,jpeg,q80,cover")]

    @Test func validFilesAllConvertToSRGB() throws {
        let valid = Self.all.filter { !$0.hasPrefix("x") }
        #expect(valid.count > 150)
        for name in valid {
            do {
                let result = try Fixtures.compress("pngsuite/" + name, Self.variants)
                let jpeg = try VipsProbe.info(result.variants[1].data)
                #expect(jpeg.interpretation == "srgb" && jpeg.bands == 3 && jpeg.bitsPerSample == 8, "\(name): \(jpeg)")
            } catch {
                Issue.record("\(name) failed: \(error)")
            }
        }
    }

    @Test func corruptFilesFailWithAPermanentReason() throws {
        let corrupt = Self.all.filter { $0.hasPrefix("x") }
        #expect(corrupt.count == 14)
        for name in corrupt {
            do {
                _ = try Fixtures.compress("pngsuite/" + name, Self.variants)
                Issue.record("\(name) is corrupt but was accepted")
            } catch {
                #expect(!error.isTransient, "\(name)")
                #expect(!error.reason.isEmpty)
            }
        }
    }
}

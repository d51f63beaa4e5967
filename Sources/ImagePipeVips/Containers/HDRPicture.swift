// Whether a HEIF or AVIF original's picture is coded for HDR (PQ or HLG), read from its container alone.
public import Foundation
import ImagePipe

/// An HEIF or AVIF original whose primary picture is coded with an HDR transfer, as its `colr`
/// box of type `nclx` (ITU-T H.273 code points) says.
///
/// libvips 8.14 ignores nclx and keeps such a picture's codes as if they were sRGB's: PQ's white
/// comes out a dull grey, HLG's midtones too bright. imagepipe tone maps them to SDR instead
/// (docs/usage.md, "HDR photos").
public struct HDRPicture: Sendable, Hashable {
    /// The transfer characteristics, BT.2100's two.
    public enum Transfer: Int, Sendable, Hashable {
        /// Perceptual quantization (SMPTE ST 2084): absolute light, up to 10,000 cd/m².
        case pq = 16
        /// Hybrid log-gamma (ARIB STD-B67): relative scene light.
        case hlg = 18
    }

    /// The transfer.
    public var transfer: Transfer
    /// The colour primaries' code point (1 BT.709, 9 BT.2020, 12 Display P3, ...).
    public var primaries: Int

    /// Creates a description.
    public init(transfer: Transfer, primaries: Int) {
        self.transfer = transfer
        self.primaries = primaries
    }

    /// The HDR picture `bytes` (a source's first ``GainMap/probedBytes`` or all of it) announce: the
    /// nclx `colr` property of the primary item (`pitm`), found through `ipma`'s associations with
    /// `ipco`'s properties, when its transfer is PQ or HLG. Nil for any other file, for a truncated or
    /// malformed container, and for a primary without nclx (an ICC profile describes SDR pictures).
    public static func announced(in data: Data) -> HDRPicture? {
        data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard bytes.count >= 12, GainMap.fourCC(bytes, 4) == "ftyp" else { return nil }
            return primaryPicture(bytes)
        }
    }

    private static func primaryPicture(_ bytes: UnsafeBufferPointer<UInt8>) -> HDRPicture? {
        HEIFPrimary.properties(bytes)?.lazy.compactMap { $0.type == "colr" ? nclx(bytes, $0.body) : nil }.first
    }

    /// A `colr` box's nclx: its type, then primaries, transfer and matrix (16 bits each) and the
    /// full-range flag. Nil for an ICC profile and for a transfer that is not HDR.
    private static func nclx(_ bytes: UnsafeBufferPointer<UInt8>, _ body: Range<Int>) -> HDRPicture? {
        guard body.count >= 11, GainMap.fourCC(bytes, body.lowerBound) == "nclx",
            let primaries = HEIFPrimary.read(bytes, body.lowerBound + 4, 2), let code = HEIFPrimary.read(bytes, body.lowerBound + 6, 2),
            let transfer = Transfer(rawValue: code)
        else { return nil }
        return HDRPicture(transfer: transfer, primaries: primaries)
    }
}

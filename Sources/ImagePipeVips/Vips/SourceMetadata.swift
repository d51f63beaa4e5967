// The metadata blocks of a source, read from its header once, and those each variant's policy carries into its outputs.
import CVipsShim
import Foundation
import ImagePipe

/// A source's EXIF, ICC, XMP and IPTC blocks as its loader found them, copied out of the header
/// (which is released before the variants are encoded), read only when a variant keeps metadata.
struct SourceMetadata: Sendable {
    var exif: Data?
    var icc: Data?
    var xmp: Data?
    var iptc: Data?
    /// An XMP packet of the source's IPTC digital source type alone, when its XMP declares one:
    /// what `copyright` and `safe` outputs carry of the XMP, so an AI label survives them.
    var sourceTypeXMP: Data?

    /// What an output is saved with.
    struct Blocks: Sendable {
        var exif: Data?
        var icc: Data?
        var xmp: Data?
        var iptc: Data?

        /// Whether there is nothing to write: the output is then made exactly as a stripped one.
        var isEmpty: Bool { exif == nil && icc == nil && xmp == nil && iptc == nil }
    }

    /// Reads the blocks of `header`.
    init(_ header: VipsImageHandle) {
        func blob(_ name: String) -> Data? {
            var length = 0
            guard let bytes = ipv_get_blob(header.pointer, name, &length), length > 0 else { return nil }
            return Data(bytes: bytes, count: length)
        }
        exif = blob("exif-data")
        icc = blob("icc-profile-data")
        xmp = blob("xmp-data")
        iptc = blob("iptc-data")
        sourceTypeXMP = xmp.flatMap(ProvenanceScan.digitalSourceType(xmp:)).map(ProvenanceScan.xmpPacket(digitalSourceType:))
    }

    /// The blocks `policy` writes: the EXIF tags it keeps, written anew (``ExifBlock``); the ICC
    /// profile when the policy keeps it and it is sRGB's (any other was converted from, so the
    /// output's pixels are no longer in it); XMP and IPTC as they are under `keep` only, and under
    /// `copyright` and `safe` an XMP of the digital source type alone.
    func blocks(for policy: MetadataPolicy) -> Blocks {
        guard policy != .strip else { return Blocks() }
        let profile = policy.keepsColourProfile ? icc.flatMap { profile in Self.isSRGB(profile) ? profile : nil } : nil
        return Blocks(
            exif: ExifBlock.carried(from: exif, policy: policy), icc: profile,
            xmp: policy.keepsXMPAndIPTC ? xmp : policy.keepsDigitalSourceType ? sourceTypeXMP : nil,
            iptc: policy.keepsXMPAndIPTC ? iptc : nil)
    }

    private static func isSRGB(_ profile: Data) -> Bool {
        profile.withUnsafeBytes { ipv_icc_is_srgb($0.baseAddress, $0.count) != 0 }
    }
}

extension VipsCompressor {
    /// `image` carrying `blocks` and no other metadata, ready for a saver that keeps metadata.
    func withMetadata(_ image: VipsImageHandle, _ blocks: SourceMetadata.Blocks, variant: VariantSpec) throws(ImagePipeError) -> VipsImageHandle {
        func withBytes<R>(_ data: Data?, _ body: (UnsafeRawPointer?, Int) -> R) -> R {
            guard let data else { return body(nil, 0) }
            return data.withUnsafeBytes { body($0.baseAddress, $0.count) }
        }
        var out: UnsafeMutablePointer<VipsImage>?
        let status = withBytes(blocks.exif) { exif, exifLength in
            withBytes(blocks.icc) { icc, iccLength in
                withBytes(blocks.xmp) { xmp, xmpLength in
                    withBytes(blocks.iptc) { iptc, iptcLength in
                        ipv_set_metadata(image.pointer, exif, exifLength, icc, iccLength, xmp, xmpLength, iptc, iptcLength, &out)
                    }
                }
            }
        }
        guard status == 0, let out else { throw encodeError(variant) }
        return VipsImageHandle(out)
    }
}

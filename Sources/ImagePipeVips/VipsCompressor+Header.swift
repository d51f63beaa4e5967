// The header alone, read as a compression would read it: what `--dry-run` checks without decoding.
import CVipsShim
public import ImagePipe

extension VipsCompressor {
    /// The same header steps as ``compress(_:variants:limits:memory:)`` (open without decoding,
    /// the format allowlist, the pixel limit), with the same errors, and nothing after them.
    public func readHeader(_ source: SourceImage, limits: CompressionLimits) throws(ImagePipeError) -> SourceHeader? {
        defer { ipv_thread_done() }
        ipv_begin_call()
        let header = try openHeader(source)
        let format = try Self.acceptedFormat(of: header)
        try Self.checkPixels(header, limits)
        return SourceHeader(format: format, size: Self.displayedSize(of: header))
    }
}

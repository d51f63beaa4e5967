// What a helper hands back, checked before the worker takes it: each output's size limit, the
// outputs read from their memory files against what the helper said of them, and the job's error
// for a helper that ended.
import CSandbox
public import Foundation
public import ImagePipe

extension SandboxedCompressor {
    /// The most bytes one variant's output may hold: what its box can hold at 4 bytes a pixel (every
    /// frame of an animation; a JPEG that may carry a gain map a byte more, for the map at up to its
    /// full size), or the source's own size (a kept original), and a mebibyte for containers and
    /// metadata, never over ``maxOutputBytes``. A helper that says more is lying.
    static func outputLimit(for variant: VariantSpec, limits: CompressionLimits, sourceBytes: Int) -> Int {
        let open = variant.width == VariantSpec.unbounded || variant.height == VariantSpec.unbounded
        let pixels = open ? limits.maxPixels : min(limits.maxPixels, variant.width.multipliedReportingOverflow(by: variant.height).partialValue)
        let frames = variant.format.holdsAnimation ? limits.maxFrames : 1
        let perPixel = variant.carriesHDR ? 5 : 4
        let (drawn, overflow) = (max(0, pixels) * perPixel).multipliedReportingOverflow(by: max(1, frames))
        return min(maxOutputBytes, max(sourceBytes, overflow ? maxOutputBytes : drawn) + (1 << 20))
    }

    /// Reads each variant's memory file, checked against what the helper said of it and what the
    /// variant can hold, and closes them all.
    static func take(
        _ descriptors: [Int32], for result: HelperResult, variants: [VariantSpec], limits: CompressionLimits, sourceBytes: Int
    ) throws(Failure) -> [Data] {
        defer { for descriptor in descriptors { close(descriptor) } }
        // Small outputs come inside the message, the others each as a memory file, in order.
        let filed = result.variants.filter { $0.inline == nil }.count
        guard result.variants.count == variants.count, descriptors.count == filed else {
            throw .ended(.misbehaved, "\(descriptors.count) output files for \(filed) of \(variants.count) variants")
        }
        for (variant, made) in zip(variants, result.variants)
        where made.byteCount > outputLimit(for: variant, limits: limits, sourceBytes: sourceBytes) {
            throw .ended(.misbehaved, "an output of \(made.byteCount) bytes for the variant \(variant.name)")
        }
        for (variant, made) in zip(variants, result.variants) where made.encoding.hdrHeadroom != nil && !variant.carriesHDR {
            throw .ended(.misbehaved, "an HDR output for the variant \(variant.name), which carries no gain map")
        }
        var outputs: [Data] = []
        outputs.reserveCapacity(variants.count)
        var files = descriptors.makeIterator()
        for variant in result.variants {
            if let inline = variant.inline {
                outputs.append(Data(inline))
                continue
            }
            guard let descriptor = files.next() else { throw .ended(.misbehaved, "an output file missing") }
            var status = stat()
            guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, Int(status.st_size) == variant.byteCount
            else { throw .ended(.misbehaved, "an output that is not the size it was said to be") }
            // Read, not mapped: a helper that shrank its file later would make a mapping kill the worker (SIGBUS).
            var data = Data(count: variant.byteCount)
            let complete = data.withUnsafeMutableBytes { buffer in
                var got = 0
                while got < buffer.count {
                    let n = pread(descriptor, buffer.baseAddress! + got, buffer.count - got, off_t(got))
                    if n < 0, errno == EINTR { continue }
                    if n <= 0 { return false }
                    got += n
                }
                return true
            }
            guard complete else { throw .ended(.misbehaved, "an output that could not be read whole") }
            outputs.append(data)
        }
        // Each output must be what it claims: its format's signature, and a header stating the size
        // the helper said it made. A page of HTML is no JPEG, whatever the reply calls it.
        for ((spec, made), output) in zip(zip(variants, result.variants), outputs) {
            guard OutputHeader.states(made.encoding.size, in: [UInt8](output), as: spec.format) else {
                let found = OutputHeader.size(of: [UInt8](output), as: spec.format.traits.header)
                throw .ended(
                    .misbehaved,
                    "an output for the variant \(spec.name) that "
                        + (found.map { "states \($0.width)x\($0.height), not the \(made.encoding.size.width)x\(made.encoding.size.height) said" }
                            ?? "is no \(spec.format.traits.displayName)"))
            }
        }
        return outputs
    }

    /// The job's error for a helper that ended: crashed (with its signal), timed out, or misbehaved.
    static func error(
        _ reason: HelperPool.RestartReason, helper: HelperProcess, source: String, detail: String?, timeout: Duration
    ) -> ImagePipeError {
        switch reason {
        case .timeout:
            if let detail {
                return ImagePipeError(
                    .jobTimeout,
                    "the image work on '\(source)' \(detail) (\(SandboxedCompressor.wallClockTimeouts) × --job-timeout): its helper was killed")
            }
            return ImagePipeError(
                .jobTimeout, "the image work on '\(source)' ran past --job-timeout (\(timeout.formattedSeconds)): its helper was killed")
        case .crashed:
            return ImagePipeError(
                .decoderCrashed, "the image helper crashed on '\(source)': \(HelperProcess.describe(helper.killAndReap()))")
        case .misbehaved:
            return ImagePipeError(
                .decoderCrashed, "the image helper working on '\(source)' sent \(detail ?? "what it must not") and was killed")
        }
    }
}

extension CompressedImage {
    /// A helper's result with the variants' bytes it handed over and the specs they were made for.
    init(_ result: HelperResult, variants specs: [VariantSpec], outputs: [Data]) {
        let encoded = zip(specs, zip(result.variants, outputs)).map { spec, made in
            var variant = EncodedVariant(spec: spec, size: made.0.encoding.size, data: made.1)
            variant.encoding = made.0.encoding
            return variant
        }
        self.init(
            sourceFormat: result.sourceFormat, sourceSize: result.sourceSize, variants: encoded, decodeTime: result.decodeTime,
            encodeTime: result.encodeTime)
        placeholder = result.placeholder
        facts = result.facts
        gainMap = result.gainMap
        steps = result.steps
    }
}

// A job's result as structured log metadata, so every log line about a job carries the same fields under the same keys.
public import Logging

extension JobResult {
    /// The fields a log line about this result carries: `source` always; `error` and `error_code`
    /// when it failed; `skip_code` and `reason` when skipped; sizes, the variant count and the stage
    /// timings (`read_ms`, `decode_ms`, `encode_ms`, `store_ms`, `total_ms`) when done.
    ///
    /// A traced job's lines also carry `trace_id` and `span_id`: its job span.
    ///
    /// Numbers stay numbers (a JSON log writes them unquoted); keys are stable snake_case.
    public var logMetadata: Logger.Metadata {
        var metadata: Logger.Metadata = ["source": .string(source)]
        // A traced job's lines lead to its trace: the job span's ids, as W3C writes them.
        if let trace {
            metadata["trace_id"] = .string(trace.traceID.description)
            metadata["span_id"] = .string(trace.spanID.description)
        }
        switch status {
        case .failed:
            metadata["error"] = .string(error ?? "unknown error")
            if let errorCode { metadata["error_code"] = .string(errorCode.description) }
        case .skipped:
            if let skipCode { metadata["skip_code"] = .string(skipCode.rawValue) }
            if let reason { metadata["reason"] = .string(reason) }
        case .done:
            if let bytes { metadata["input_bytes"] = .stringConvertible(bytes) }
            metadata["output_bytes"] = .stringConvertible(outputBytes)
            metadata["variants"] = .stringConvertible(variants.count)
            metadata["read_ms"] = .stringConvertible(Int(timings.readMs.rounded()))
            metadata["decode_ms"] = .stringConvertible(Int(timings.decodeMs.rounded()))
            metadata["encode_ms"] = .stringConvertible(Int(timings.encodeMs.rounded()))
            metadata["store_ms"] = .stringConvertible(Int(timings.storeMs.rounded()))
            metadata["total_ms"] = .stringConvertible(Int(timings.totalMs.rounded()))
        }
        return metadata
    }
}

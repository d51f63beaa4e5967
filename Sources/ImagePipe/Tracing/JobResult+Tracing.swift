// A job's result as the attributes of its span, so every job span says the same things under the same keys.

extension JobResult {
    /// What a job span says of its result: status, error code, skip code, bytes in and out, variants.
    public var spanAttributes: [(String, Span.Value)] {
        var attributes: [(String, Span.Value)] = [("imagepipe.status", .string(status.rawValue))]
        if let errorCode { attributes.append(("error.type", .string(errorCode.description))) }
        if let skipCode { attributes.append(("imagepipe.skip_code", .string(skipCode.rawValue))) }
        if let bytes { attributes.append(("imagepipe.bytes_in", .int(bytes))) }
        if status == .done {
            attributes.append(("imagepipe.bytes_out", .int(outputBytes)))
            attributes.append(("imagepipe.variants", .int(variants.count)))
        }
        return attributes
    }

    /// The job span's status: an error with the reason when the job failed.
    public var spanStatus: Span.Status { status == .failed ? .error(error ?? "failed") : .unset }
}

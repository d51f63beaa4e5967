// How a failed stage shows in its span: one attribute and one status for every stage alike.

extension ImagePipeError {
    /// The `error.type` attribute of a span whose stage failed with this error: its stable code,
    /// what a trace backend groups failures by.
    var spanAttribute: (String, Span.Value) { ("error.type", .string(code.description)) }

    /// The error status of such a span, with the reason.
    var spanStatus: Span.Status { .error(reason) }
}

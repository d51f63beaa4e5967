// Which variants of an animated source keep every frame, and what their outputs record about it.

extension VariantSpec {
    /// Whether this variant of an animated source keeps every frame: a format that holds animation
    /// (WebP, GIF), not `still`, and not a smart crop (`attention`, `entropy`) without a focal
    /// point, whose analysis of each frame on its own would move the crop from frame to frame. A
    /// centred crop, a compass point, a focal point and a watermark are applied to each frame alike.
    public func animates(focus: FocalPoint?) -> Bool {
        format.holdsAnimation && !still && !(fit == .cover && crop.isSmart && focus == nil)
    }

    /// The field an animated output adds to its fingerprint: the output of an animated source differs
    /// from the still one the same spec made before, so a re-run makes it again, while every output of
    /// a still source, and every `still` variant, keeps the fingerprint it had.
    public static let animatedField = "animated"

    /// The settings stored with an output of this variant: ``fingerprint``, and ``animatedField``
    /// when the output holds more than one frame.
    public func fingerprint(animated: Bool) -> String {
        animated ? fingerprint + "," + Self.animatedField : fingerprint
    }
}

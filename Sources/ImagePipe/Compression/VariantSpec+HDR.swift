// Whether a variant carries an HDR original's gain map: `--hdr keep|drop`, `hdr=keep|drop` in a spec.

/// What a variant makes of an HDR original's gain map.
public enum HDRPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// A JPEG variant is an Ultra HDR JPEG: the SDR picture as ever, and the gain map after it.
    case keep
    /// The SDR picture alone.
    case drop

    /// Parses a policy name.
    public init(name: String) throws(ImagePipeError) {
        guard let policy = HDRPolicy(rawValue: name.lowercased()) else {
            throw .configuration("unknown HDR policy '\(name)'; use keep or drop")
        }
        self = policy
    }
}

extension VariantSpec {
    /// Whether this variant's outputs of an HDR original carry its gain map: JPEG (the one format
    /// imagepipe writes a gain map into) with the HDR policy `keep`.
    public var carriesHDR: Bool { format == .jpeg && hdr == .keep }

    /// This variant with the command's `--hdr` policy, unless its spec names its own.
    public func applying(hdr policy: HDRPolicy) -> VariantSpec {
        var variant = self
        variant.hdr = hdrChoice ?? policy
        return variant
    }

    /// The field an output carrying a gain map adds to its fingerprint: such an output differs from
    /// the SDR one the same spec made before, so a re-run makes it again, while every output of an
    /// SDR original, and every output with `--hdr drop`, keeps the fingerprint it had.
    public static let hdrField = "hdr"

    /// The settings stored with an output of this variant: ``fingerprint``, ``animatedField`` when
    /// it holds every frame, ``hdrField`` when it is to carry a gain map.
    public func fingerprint(animated: Bool, hdr: Bool) -> String {
        hdr ? fingerprint(animated: animated) + "," + Self.hdrField : fingerprint(animated: animated)
    }
}

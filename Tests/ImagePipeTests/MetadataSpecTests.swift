// The metadata policy as a variant option and a command option: parsed, given back, and in the fingerprint only when it is not strip.
import ImagePipe
import Testing

@Suite struct MetadataSpecTests {
    @Test func aVariantNamesItsPolicyOrTakesTheCommands() throws {
        let plain = try VariantSpec(parsing: "m=1024x1024,webp,q78")
        let safe = try VariantSpec(parsing: "m=1024x1024,webp,q78,Metadata=SAFE")
        let strip = try VariantSpec(parsing: "m=1024x1024,webp,q78,metadata=strip")
        #expect(plain.metadataChoice == nil && plain.metadata == .strip)
        #expect(safe.metadataChoice == .safe && safe.metadata == .safe)
        for spec in [plain, safe, strip] { #expect(try VariantSpec(parsing: spec.specString) == spec, "\(spec.specString)") }
        #expect(safe.specString == "m=1024x1024,webp,q78,metadata=safe")

        #expect(plain.applying(metadata: .keep).metadata == .keep)
        #expect(safe.applying(metadata: .keep).metadata == .safe, "the spec's own wins")
        #expect(strip.applying(metadata: .copyright).metadata == .strip)

        for bad in ["m=10x10,jpeg,q80,metadata=gps", "m=10x10,jpeg,q80,metadata=", "m=10x10,jpeg,q80,metadata=safe,metadata=keep"] {
            #expect(throws: ImagePipeError.self, "\(bad)") { try VariantSpec(parsing: bad) }
        }
        #expect(throws: ImagePipeError.self) { try MetadataPolicy(name: "all") }
        #expect(try MetadataPolicy(name: "Keep") == .keep)
    }

    /// Outputs made before policies existed were all stripped: a `strip` variant keeps their
    /// fingerprint, said or not, and any other policy changes it, so a re-run makes them again.
    @Test func theFingerprintHoldsThePolicyUnlessItIsStrip() throws {
        let plain = try VariantSpec(parsing: "t=320x320,webp,q70,cover")
        #expect(plain.fingerprint == "t=320x320,webp,q70,cover")
        #expect(plain.applying(metadata: .strip).fingerprint == plain.fingerprint)
        #expect(try VariantSpec(parsing: "t=320x320,webp,q70,cover,metadata=strip").fingerprint == plain.fingerprint)
        #expect(plain.applying(metadata: .copyright).fingerprint == "t=320x320,webp,q70,cover,metadata=copyright")
        let fingerprints = Set(MetadataPolicy.allCases.map { plain.applying(metadata: $0).fingerprint })
        #expect(fingerprints.count == MetadataPolicy.allCases.count)
        #expect(Preset.web.map(\.fingerprint) == ["large=2048x2048,jpeg,q82", "medium=1024x1024,webp,q78", "thumb=320x320,webp,q70,cover"])
    }
}

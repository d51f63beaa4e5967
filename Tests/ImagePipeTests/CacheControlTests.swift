import ImagePipe
import Testing

/// The Cache-Control that follows the key, and what a value read back from a store promised caches.
@Suite struct CacheControlTests {
    @Test func keysFromTheContentAreImmutableAndKeysFromTheNameAreRevalidated() throws {
        #expect(CacheControl.default(for: .default) == "public, no-cache")
        #expect(CacheControl.default(for: try KeyTemplate("{dir}/{stem}-{srcext}-{variant}.{ext}")) == "public, no-cache")
        #expect(CacheControl.default(for: try KeyTemplate("{hash}/{variant}.{ext}")) == "public, max-age=31536000, immutable")
        #expect(CacheControl.default(for: try KeyTemplate("{dir}/{stem}-{sha256}-{variant}.{ext}")) == "public, max-age=31536000, immutable")
    }

    @Test func onlyTheImmutableDirectiveMakesAnObjectServedAsImmutable() {
        #expect(CacheControl.isImmutable("public, max-age=31536000, immutable"))
        #expect(CacheControl.isImmutable("Immutable,max-age=60"))
        #expect(!CacheControl.isImmutable("public, no-cache"))
        #expect(!CacheControl.isImmutable("public, max-age=31536000"))
        #expect(!CacheControl.isImmutable("x-immutable-ish"))
        #expect(!CacheControl.isImmutable(nil))
    }

    @Test func maxAgeIsReadAndNoCacheIsZero() {
        #expect(CacheControl.maxAge("public, max-age=600") == 600)
        #expect(CacheControl.maxAge("public, no-cache") == 0)
        #expect(CacheControl.maxAge("public") == nil)
        #expect(CacheControl.lifetimeText("public, max-age=31536000, immutable") == "for up to a year")
        #expect(CacheControl.lifetimeText("max-age=604800, immutable") == "for up to 7 days")
    }
}

import Foundation
import ImagePipe
import Testing

@Suite struct SHA256Tests {
    @Test func matchesTheStandardVectors() {
        #expect(SHA256Digest.hash(Data()).hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256Digest.hash(Data("abc".utf8)).hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        var hasher = SHA256Hasher()
        for _ in 0..<1000 { hasher.update(Data(repeating: 0x61, count: 1000)) }
        #expect(hasher.finalize().hex == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}

// What every StorageRepository promises, checked against each store with one test body (see ContractStore).
import Foundation
import ImagePipe
import ImagePipeTestKit
import Synchronization
import ImagePipeTestSupport
import Testing

/// The storage contract: the local directory, S3 on moto, the Supabase stand-in and the in-memory
/// store all run every test here. The stores are synchronous (they block their caller), so the
/// suite runs beside the other process-driving suites, not in the in-process run.
@Suite(.offThePool) struct StorageContractTests {
    static let sha = (a: String(repeating: "a", count: 64), b: String(repeating: "b", count: 64))

    /// An origin with every field set, so a store that drops one is caught.
    static func origin(_ sha256: String, source: String = "trip/Été ß.jpg", variant: String = "large=2048x2048,jpeg,q82") -> Origin {
        Origin(
            sha256: sha256, source: source, width: 2048, height: 1365, variant: variant,
            image: Origin.Image(
                width: 4000, height: 2667, format: .heic, placeholder: Placeholder(thumbHash: "1QcSHQRnh493V4dIh4eXh1h4kJUI", color: "#7a6e5c")))
    }

    static func object(
        _ key: String, _ body: Data, origin: Origin? = nil, policy: WritePolicy = .replaceSameOriginal, type: String = "image/webp"
    ) -> StorageObject {
        StorageObject(key: key, body: body, contentType: type, cacheControl: "public, max-age=60", origin: origin, policy: policy)
    }

    @Test(arguments: ContractStore.all)
    func aPutIsReadBackWithItsBytesTypeSizeOriginAndURL(_ store: ContractStore) throws {
        let opened = try store.open()
        let body = Data.pattern(50_000, seed: 3)
        let origin = Self.origin(Self.sha.a)

        let stored = try opened.storage.put(Self.object("2024/trip/beach-large.webp", body, origin: origin, policy: .create))

        #expect(stored.key == "2024/trip/beach-large.webp" && stored.bytes == body.count && !stored.wasInPlace)
        let found = try #require(try opened.storage.existing("2024/trip/beach-large.webp"))
        // The look-up reads the Cache-Control with the origin: what tells an edited photo's outputs
        // that caches were promised they never change.
        #expect(
            found
                == ExistingObject(
                    origin: origin, bytes: body.count, url: stored.url, cacheControl: store.keepsCacheControl ? "public, max-age=60" : nil))
        let back = try #require(try opened.readBack("2024/trip/beach-large.webp"))
        #expect(back.sha256 == body.sha256)
        // The local directory keeps no media type (its files are served by extension); every other store must.
        #expect(back.contentType == nil || back.contentType == "image/webp", "\(back)")
        #expect(try opened.names() == ["2024/trip/beach-large.webp"], "nothing but the object, no temporary file")
    }

    @Test(arguments: ContractStore.all)
    func aMissingKeyHoldsNothingAndRemovingItSucceeds(_ store: ContractStore) throws {
        let opened = try store.open()
        #expect(try opened.storage.existing("nothing/here.jpg") == nil)
        try opened.storage.delete("nothing/here.jpg")
        _ = try opened.storage.put(Self.object("a/b.jpg", Data([1, 2, 3])))
        try opened.storage.delete("a/b.jpg")
        #expect(try opened.storage.existing("a/b.jpg") == nil)
        #expect(try opened.readBack("a/b.jpg") == nil)
        #expect(try opened.names().isEmpty)
    }

    /// `.create`: the key was free at the look-up. The same original's identical output that got
    /// there first is kept as it is; another original's is never replaced.
    @Test(arguments: ContractStore.all)
    func aNewKeyKeepsTheSameOutputAndNeverReplacesAnotherOriginals(_ store: ContractStore) throws {
        let opened = try store.open()
        let first = Data.pattern(4000, seed: 1)
        _ = try opened.storage.put(Self.object("k.webp", first, origin: Self.origin(Self.sha.a), policy: .create))

        // The same original under another name (a re-delivery) is the same original.
        let again = try opened.storage.put(
            Self.object("k.webp", .pattern(4000, seed: 2), origin: Self.origin(Self.sha.a, source: "copy of trip.jpg"), policy: .create))
        #expect(again.wasInPlace)
        #expect(try opened.readBack("k.webp")?.sha256 == first.sha256, "kept, not written again")

        let error = try #require(throws: ImagePipeError.self) {
            try opened.storage.put(
                Self.object("k.webp", .pattern(10, seed: 3), origin: Self.origin(Self.sha.b, source: "other.jpg"), policy: .create))
        }
        #expect(error.code == .keyCollision && error.reason.contains("trip/Été ß.jpg"), "\(error.reason)")
        #expect(try opened.readBack("k.webp")?.sha256 == first.sha256)
        #expect(try opened.names() == ["k.webp"], "a refused put leaves nothing behind")
    }

    /// `.create` of a changed variant (the same original, other settings) replaces the stale output.
    @Test(arguments: ContractStore.all)
    func aNewKeyReplacesTheSameOriginalsStaleVariant(_ store: ContractStore) throws {
        let opened = try store.open()
        _ = try opened.storage.put(Self.object("k.webp", .pattern(100, seed: 1), origin: Self.origin(Self.sha.a, variant: "large=1024x,webp")))
        let fresh = Data.pattern(200, seed: 2)
        let stored = try opened.storage.put(Self.object("k.webp", fresh, origin: Self.origin(Self.sha.a), policy: .create))
        #expect(!stored.wasInPlace)
        #expect(try opened.readBack("k.webp")?.sha256 == fresh.sha256)
        #expect(try opened.storage.existing("k.webp")?.origin?.variant == "large=2048x2048,jpeg,q82")
    }

    /// `.replaceSameOriginal` (a re-run redoing its output) replaces the same original's object,
    /// never another's where the store checks at write time (see ``ContractStore/checksReplacements``);
    /// `.replaceAny` and objects without an origin replace whatever is there.
    @Test(arguments: ContractStore.all)
    func redoingReplacesOnlyItsOwnOriginalsObjectUnlessTold(_ store: ContractStore) throws {
        let opened = try store.open()
        _ = try opened.storage.put(Self.object("k.webp", .pattern(100, seed: 1), origin: Self.origin(Self.sha.a)))
        let redone = Data.pattern(300, seed: 2)
        #expect(try !opened.storage.put(Self.object("k.webp", redone, origin: Self.origin(Self.sha.a))).wasInPlace)
        #expect(try opened.readBack("k.webp")?.sha256 == redone.sha256)

        if store.checksReplacements {
            let error = try #require(throws: ImagePipeError.self) {
                try opened.storage.put(Self.object("k.webp", .pattern(10, seed: 3), origin: Self.origin(Self.sha.b, source: "other.jpg")))
            }
            #expect(error.code == .keyCollision)
            #expect(try opened.readBack("k.webp")?.sha256 == redone.sha256)
        }

        let overwritten = Data.pattern(400, seed: 4)
        _ = try opened.storage.put(Self.object("k.webp", overwritten, origin: Self.origin(Self.sha.b), policy: .replaceAny))
        #expect(try opened.storage.existing("k.webp")?.origin?.sha256 == Self.sha.b)
        let plain = Data.pattern(500, seed: 5)
        _ = try opened.storage.put(Self.object("k.webp", plain))
        #expect(try opened.readBack("k.webp")?.sha256 == plain.sha256)
        let found = try #require(try opened.storage.existing("k.webp"))
        #expect(found.origin == nil && found.bytes == 500, "an object without an origin carries none over from the one it replaced")
    }

    /// An object another tool wrote (no origin) is never replaced by imagepipe's own output unasked.
    @Test(arguments: ContractStore.all)
    func anObjectWithoutAnOriginIsNotReplacedUnasked(_ store: ContractStore) throws {
        let opened = try store.open()
        let theirs = Data.pattern(100, seed: 9)
        _ = try opened.storage.put(Self.object("theirs.jpg", theirs, type: "image/jpeg"))
        for policy in [WritePolicy.create] + (store.checksReplacements ? [.replaceSameOriginal] : []) {
            let error = try #require(throws: ImagePipeError.self) {
                try opened.storage.put(Self.object("theirs.jpg", .pattern(10), origin: Self.origin(Self.sha.a), policy: policy))
            }
            #expect(error.code == .keyCollision && error.reason.contains("no recorded original"), "\(error.reason)")
        }
        #expect(try opened.readBack("theirs.jpg")?.sha256 == theirs.sha256)
    }

    @Test(arguments: ContractStore.all)
    func keysWithUnusualCharactersAreStoredAsGiven(_ store: ContractStore) throws {
        let opened = try store.open()
        let keys = [
            "Été 2024/a+b (1)-large.jpg", "naïve/日本語 ~file!.webp", "sp ace/x=y&z;@$,'.png", "100% sure/#1 [draft].avif",
            "e\u{301}/cafe\u{301}.jpg",
        ]
        for (index, key) in keys.enumerated() {
            let body = Data.pattern(1000 + index, seed: UInt64(index))
            let stored = try opened.storage.put(Self.object(key, body, origin: Self.origin(Self.sha.a, source: key), policy: .create))
            #expect(stored.key == key)
            #expect(try opened.readBack(key)?.sha256 == body.sha256, "\(key)")
            #expect(try opened.storage.existing(key)?.origin?.source == key, "\(key)")
            #expect(try opened.storage.existing(key)?.url == stored.url, "\(key)")
        }
        #expect(Set(try opened.names()) == Set(keys))
        for key in keys { try opened.storage.delete(key) }
        #expect(try opened.names().isEmpty)
    }

    /// A key that would escape the destination is an `invalidKey`, for a put and a removal alike,
    /// and nothing is written anywhere.
    @Test(arguments: ContractStore.all)
    func keysThatWouldEscapeAreRefusedAndLeaveNothing(_ store: ContractStore) throws {
        let opened = try store.open()
        for key in ["../x.jpg", "/x.jpg", "a//b.jpg", "a/./b.jpg", "a/../../x.jpg", "", "tab\there.jpg"] {
            let error = try #require(throws: ImagePipeError.self, "\(key)") {
                try opened.storage.put(Self.object(key, Data([1]), origin: Self.origin(Self.sha.a), policy: .create))
            }
            #expect(error.code == .invalidKey, "\(key): \(error)")
            #expect(throws: ImagePipeError.self, "\(key)") { try opened.storage.delete(key) }
        }
        #expect(try opened.names().isEmpty)
    }

    @Test(arguments: ContractStore.all)
    func concurrentPutsOfManyKeysAllLand(_ store: ContractStore) throws {
        let opened = try store.open()
        let storage = opened.storage
        let bodies = (0..<16).map { Data.pattern(5000 + $0 * 100, seed: UInt64($0)) }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: bodies.count) { index in
            do {
                _ = try storage.put(Self.object("many/\(index).webp", bodies[index], origin: Self.origin(Self.sha.a), policy: .create))
            } catch {
                failures.withLock { $0.append("\(index): \(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(try opened.names() == (0..<16).map { "many/\($0).webp" }.sorted())
        for (index, body) in bodies.enumerated() {
            #expect(try opened.readBack("many/\(index).webp")?.sha256 == body.sha256)
        }
    }

    /// Several originals racing to create one key: exactly one is stored, the others are told of
    /// the collision; none is silently replaced.
    @Test(arguments: ContractStore.all)
    func racingNewKeysOfDifferentOriginalsLeaveExactlyOneWinner(_ store: ContractStore) throws {
        let opened = try store.open()
        let storage = opened.storage
        let shas = (0..<6).map { String(repeating: "\($0)", count: 64) }
        let bodies = (0..<6).map { Data.pattern(20_000, seed: UInt64($0) + 100) }
        let outcomes = Mutex<[Int: Result<StoredObject, ImagePipeError>]>([:])
        DispatchQueue.concurrentPerform(iterations: shas.count) { index in
            let result = Result { () throws(ImagePipeError) in
                try storage.put(Self.object("race.webp", bodies[index], origin: Self.origin(shas[index], source: "\(index).jpg"), policy: .create))
            }
            outcomes.withLock { $0[index] = result }
        }
        let all = outcomes.withLock { $0 }
        let winners = all.filter { (try? $0.value.get()) != nil }.map(\.key)
        #expect(winners.count == 1, "\(all)")
        for case (_, .failure(let error)) in all { #expect(error.code == .keyCollision, "\(error)") }
        let winner = try #require(winners.first)
        #expect(try opened.readBack("race.webp")?.sha256 == bodies[winner].sha256)
        #expect(try storage.existing("race.webp")?.origin?.sha256 == shas[winner])
        #expect(try opened.names() == ["race.webp"])
    }

    /// What `imagepipe prune` needs: every key listed (no temporary files), and batch removal.
    /// The in-memory store is not prunable: prune's own tests run on the real stores.
    @Test(arguments: ContractStore.all)
    func aPrunableStoreListsEveryKeyAndRemovesThemInBatches(_ store: ContractStore) throws {
        let opened = try store.open()
        guard let storage = opened.storage as? any PrunableStorage else { return }
        let keys = (0..<7).map { "p/\($0 % 3)/k \($0).webp" } + ["top.jpg"]
        for key in keys { _ = try storage.put(Self.object(key, Data(key.utf8), origin: Self.origin(Self.sha.a))) }

        #expect(try storage.allKeys(pageSize: 2).sorted() == keys.sorted())
        let failures = try storage.delete(Array(keys.prefix(5)) + ["never/was.jpg"], batchSize: 2)
        #expect(failures.isEmpty, "\(failures)")
        #expect(try storage.allKeys(pageSize: 1000).sorted() == keys.dropFirst(5).sorted())
        #expect(try opened.names().sorted() == keys.dropFirst(5).sorted())
    }
}

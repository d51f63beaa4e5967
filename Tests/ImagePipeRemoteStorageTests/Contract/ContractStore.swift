// The stores the storage contract runs against, each opened fresh and empty, with a way to read back what it holds without going through it.
import Foundation
import ImagePipe
import ImagePipeLocalStorage
import ImagePipeRemoteStorage
import ImagePipeTestKit
import ImagePipeTestSupport
import Testing

/// One implementation of ``StorageRepository`` as the contract suite's parameter. A new store is
/// done when the suite passes with it added to ``all``.
struct ContractStore: Sendable, CustomTestStringConvertible {
    let testDescription: String
    /// Whether a put that may replace only its own original's object (``WritePolicy/replaceSameOriginal``)
    /// checks what it replaces as it writes. The object stores do not, deliberately: S3 and Supabase
    /// have a conditional write for a new key only, so they rely on the FileHandler's look-up just
    /// before (``StorageRepository/existing(_:)``). Checking would cost a request per replacement
    /// and still leave a window between the check and the write; only a re-run redoing its own
    /// outputs (`--update`) writes this way.
    var checksReplacements = true
    /// Whether objects are served with the Cache-Control they were stored with, read back on the
    /// look-up: every store but the local directory, whose files a web server serves as it is set up to.
    var keepsCacheControl = true
    /// Opens a new, empty store of this kind.
    let open: @Sendable () throws -> OpenedStore

    static let all: [ContractStore] = [localDirectory, s3, supabase, inMemory]

    /// Files under a scratch directory, written durably as the worker writes them.
    static let localDirectory = ContractStore(testDescription: "local directory", keepsCacheControl: false) {
        let directory = TemporaryDirectory(prefix: "imagepipe-contract")
        let root = directory.url("out")
        return OpenedStore(
            storage: LocalDirectoryStorage(root: root),
            readBack: { key in
                guard let body = FileManager.default.contents(atPath: root + "/" + key) else { return nil }
                // A file records no media type: a web server gives one from the name's extension.
                return StoredBack(sha256: body.sha256, contentType: nil)
            },
            names: { directory.files(under: "out") },
            keepAlive: directory)
    }

    /// S3 on moto, under a prefix. moto's signature checker gets some unusual keys wrong (see
    /// S3StorageTests), so this is the moto without it; signing has suites of its own.
    static let s3 = ContractStore(testDescription: "S3 on moto", checksReplacements: false) {
        let moto = try MotoServer.unsigned()
        let bucket = try moto.makeBucket()
        let prefix = "contract/"
        return OpenedStore(
            storage: S3Storage(configuration: try moto.configuration(bucket: bucket, prefix: "contract")),
            readBack: { key in
                try moto.object(bucket, prefix + key).map { StoredBack(sha256: $0.sha256, contentType: $0.contentType) }
            },
            names: { try moto.keys(bucket).map { String($0.dropFirst($0.hasPrefix(prefix) ? prefix.count : 0)) } },
            keepAlive: moto)
    }

    /// The Supabase Storage stand-in, one per test, under a prefix.
    static let supabase = ContractStore(testDescription: "Supabase stand-in", checksReplacements: false) {
        let stub = try SupabaseStub(key: "service-role-\(UUID().uuidString)")
        let held = "media/contract/"
        func objects() throws -> [String: [String: Any]] {
            Dictionary(
                uniqueKeysWithValues: try stub.state().objects.compactMap { name, object in
                    name.hasPrefix(held) ? (String(name.dropFirst(held.count)), object) : nil
                })
        }
        return OpenedStore(
            storage: SupabaseStorage(configuration: try stub.configuration(bucket: "media", prefix: "contract")),
            readBack: { key in
                try objects()[key].map { StoredBack(sha256: $0["sha256"] as? String ?? "", contentType: $0["content_type"] as? String) }
            },
            names: { try objects().keys.sorted() },
            keepAlive: stub)
    }

    /// The test kit's store, which the pipeline's tests stand in for the real ones: it must keep
    /// the same contract, or those tests prove less than they seem to.
    static let inMemory = ContractStore(testDescription: "in memory") {
        let storage = InMemoryStorage()
        return OpenedStore(
            storage: storage,
            readBack: { key in storage.objects[key].map { StoredBack(sha256: $0.body.sha256, contentType: $0.contentType) } },
            names: { storage.objects.keys.sorted() },
            keepAlive: nil)
    }
}

/// A store opened for one test, and readers that do not go through it.
struct OpenedStore {
    let storage: any StorageRepository
    /// What is held under `key` as the store's own client (or the file system) reads it.
    let readBack: (String) throws -> StoredBack?
    /// Every name held under the destination, temporary files included, relative to it.
    let names: () throws -> [String]
    /// The server process or scratch directory that must outlive the test.
    let keepAlive: (any Sendable)?
}

/// An object read back independently of the store under test.
struct StoredBack: Equatable {
    var sha256: String
    /// Its media type; nil where the store keeps none.
    var contentType: String?
}

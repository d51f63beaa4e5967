import Foundation
import ImagePipe
import ImagePipeTestKit
import ImagePipeTestSupport
import Synchronization
import Testing

/// The FileHandler's destination check: outputs of the same original are skipped or replaced, another
/// original's are never silently replaced, and a job that fails midway leaves nothing behind.
@Suite struct SafeRerunTests {
    let directory = TemporaryDirectory()

    /// A job of a file the scripted compressor takes: an image's first bytes, then `contents`.
    func job(_ relative: String, _ contents: String) -> Job {
        Job(path: directory.write(relative, ScriptedCompressor.image(contents)), relativePath: relative)
    }

    func handler(
        _ storage: InMemoryStorage, _ compressor: ScriptedCompressor = ScriptedCompressor(),
        _ configuration: FileHandler.Configuration = .init()
    ) -> FileHandler {
        FileHandler(compressor: compressor, storage: storage, configuration: configuration)
    }

    @Test func anAnimationTheDecoderReadsAsOneFrameIsStillUpToDateOnAReRun() async throws {
        // The container declares three frames, and this decoder makes one frame of each: as
        // libvips may of a malformed file. The outputs' settings are what was foreseen, so a re-run,
        // which foresees the same, finds them in place instead of remaking them every time.
        let storage = InMemoryStorage()
        let compressor = ScriptedCompressor()
        let bytes = Fixtures.data("images/formats/animated.gif")
        let path = directory.url("anim.gif")
        try bytes.write(to: URL(fileURLWithPath: path))
        let first = try await handler(storage, compressor).run(Job(path: path, relativePath: "anim.gif"))
        #expect(first.status == .done)
        let again = try await handler(storage, compressor).run(Job(path: path, relativePath: "anim.gif"))
        #expect(again.status == .skipped && again.skipCode == .upToDate, "\(again.reason ?? "")")
        #expect(compressor.calls.count == 1, "nothing was decoded again")
    }

    @Test func aReRunSkipsWithoutDecodingAndReportsWhatIsInPlace() async throws {
        let storage = InMemoryStorage()
        let compressor = ScriptedCompressor()
        let first = try await handler(storage, compressor).run(job("trip/a.jpg", "bytes"))
        #expect(first.status == .done)
        let puts = storage.putCount

        let again = try await handler(storage, compressor).run(job("trip/a.jpg", "bytes"))
        #expect(again.status == .skipped && again.skipCode == .upToDate)
        #expect(again.reason == "every output is in place from this original")
        #expect(compressor.calls.count == 1, "nothing was decoded again")
        #expect(storage.putCount == puts, "nothing was written again")
        #expect(again.sha256 == first.sha256 && again.bytes == first.bytes)
        #expect(again.variants == first.variants, "keys, URLs, sizes and bytes come from what is stored")

        let forced = try await handler(storage, compressor, .init(force: true)).run(job("trip/a.jpg", "bytes"))
        #expect(forced.status == .done && compressor.calls.count == 2 && storage.putCount == puts + 3)
    }

    @Test func aMissingOutputMakesTheWholeJobRunAgain() async throws {
        let storage = InMemoryStorage()
        _ = try await handler(storage).run(job("a.jpg", "bytes"))
        try storage.delete("a-medium.webp")
        let again = try await handler(storage).run(job("a.jpg", "bytes"))
        #expect(again.status == .done)
        #expect(storage.objects["a-medium.webp"] != nil)
    }

    @Test func anotherOriginalsOutputFailsTheJobBeforeDecodingNamingBothOriginals() async throws {
        let storage = InMemoryStorage()
        let compressor = ScriptedCompressor()
        _ = try await handler(storage, compressor).run(job("photo.jpg", "blinds"))
        let before = storage.objects.mapValues(\.body)

        let renamed = try await handler(storage, compressor, .init(keyTemplate: try KeyTemplate("{stem}-{variant}.{ext}")))
            .run(job("other/photo.jpg", "dune"))
        #expect(renamed.status == .failed && renamed.errorCode == .keyCollision && renamed.transient == false)
        #expect(
            renamed.error?.contains("output key 'photo-large.jpg' already holds an image made from 'photo.jpg' (sha256 ") == true,
            "\(renamed.error ?? "")")
        #expect(renamed.error?.contains("'other/photo.jpg' would replace it") == true && renamed.error?.contains("--overwrite") == true)
        let changed = try await handler(storage, compressor).run(job("photo.jpg", "dune"))
        #expect(changed.errorCode == .keyCollision)
        #expect(changed.error?.hasPrefix("'photo.jpg' changed since output key 'photo-large.jpg' was made from it") == true)
        #expect(compressor.calls.count == 1, "no colliding image was decoded")
        #expect(storage.objects.mapValues(\.body) == before)
        #expect(storage.deletedKeys.isEmpty)

        // An object no imagepipe run wrote (no origin) is not replaced either.
        storage.preload(StorageObject(key: "logo-large.jpg", body: Data("hand-made".utf8), contentType: "image/jpeg"))
        let foreign = try await handler(storage, compressor).run(job("logo.png", "logo"))
        #expect(foreign.errorCode == .keyCollision && foreign.error?.contains("holds a file with no recorded original") == true)
    }

    @Test func overwriteReplacesAnotherOriginalsOutputs() async throws {
        let storage = InMemoryStorage()
        _ = try await handler(storage).run(job("photo.jpg", "blinds"))
        let replaced = try await handler(storage, ScriptedCompressor(), .init(overwrite: true)).run(job("photo.jpg", "dune"))
        #expect(replaced.status == .done)
        #expect(storage.objects["photo-large.jpg"]?.origin?.sha256 == replaced.sha256)
    }

    @Test func aJobThatFailsMidwayRemovesWhatItStoredButNotWhatWasInPlace() async throws {
        let failMedium = InMemoryStorage(failing: { object, _ in
            object.key.hasSuffix("-medium.webp") ? ImagePipeError(.storageUnavailable, "timeout") : nil
        })
        let fresh = try await handler(failMedium).run(job("a.jpg", "bytes"))
        #expect(fresh.status == .failed && fresh.errorCode == .storageUnavailable)
        #expect(failMedium.objects.isEmpty, "large and thumb were stored, then removed")
        #expect(Set(failMedium.deletedKeys) == ["a-large.jpg", "a-thumb.webp"])

        // Outputs in place from this very original before the job stay: they are still right.
        let storage = InMemoryStorage(failing: { object, attempt in
            object.key.hasSuffix("-medium.webp") && attempt > 1 ? ImagePipeError(.storageUnavailable, "timeout") : nil
        })
        _ = try await handler(storage).run(job("b.jpg", "bytes"))
        try storage.delete("b-thumb.webp")
        let partial = try await handler(storage).run(job("b.jpg", "bytes"))
        #expect(partial.status == .failed)
        #expect(
            Set(storage.objects.keys) == ["b-large.jpg", "b-medium.webp"],
            "the rewritten large and the earlier medium stay; the new thumb is removed")
        #expect(storage.deletedKeys.last == "b-thumb.webp")
    }

    @Test func keysTooLongForTheDestinationFailBeforeDecoding() async throws {
        let storage = InMemoryStorage(keyLimits: KeyLimits(maxKeyBytes: 1024, maxSegmentBytes: 255))
        let compressor = ScriptedCompressor()
        let result = try await handler(storage, compressor).run(job(String(repeating: "n", count: 250) + ".jpg", "x"))
        #expect(result.status == .failed && result.errorCode == .invalidKey)
        #expect(result.error?.contains("at most 255") == true)
        #expect(compressor.calls.isEmpty && storage.lookupCount == 0)
    }

    @Test func jobsInFlightWithDifferentOriginalsNeverShareAKey() async throws {
        // a.jpg and a.png make the same keys; both are inspected before either stores anything.
        let storage = InMemoryStorage(delay: .milliseconds(50))
        let pipeline = JobPipeline(
            handler: handler(storage, ScriptedCompressor(work: .milliseconds(100))),
            limits: .init(jobs: 2, uploads: 4))
        let all = try await pipeline.runAll((0..<5).flatMap { round in ["\(round)/a.jpg", "\(round)/a.png"].map { job($0, $0) } })
        #expect(all.filter { $0.status == .done }.count == 5)
        #expect(all.filter { $0.errorCode == .keyCollision }.count == 5)
        for done in all where done.status == .done {
            #expect(storage.objects[done.variants[0].key]?.origin?.source == done.source)
        }
    }

    @Test func aHaltedPipelineDecodesNothingMore() async throws {
        let compressor = ScriptedCompressor()
        let pipeline = JobPipeline(handler: handler(InMemoryStorage(), compressor))
        pipeline.halt(ImagePipeError(.storageFull, "storing a-large.jpg: No space left on device"))
        let failed = try await pipeline.run(job("b.jpg", "x"))
        #expect(failed.errorCode == .storageFull)
        #expect(failed.error == "not processed: storing a-large.jpg: No space left on device")
        #expect(compressor.calls.isEmpty)
    }

    @Test func aFailingJobNeverRemovesWhatAJobOfTheSameOriginalReportedDone() async throws {
        // Two deliveries of the same bytes with a {hash} template share their keys; the second one's
        // medium put fails after the first job is done. Its clean-up must leave the shared outputs.
        let storage = InMemoryStorage(
            failing: { object, attempt in
                object.key.hasSuffix("medium.webp") && attempt == 2 ? ImagePipeError(.storageRejected, "refused") : nil
            }, delay: .milliseconds(20))
        let configuration = FileHandler.Configuration(keyTemplate: try KeyTemplate("{hash}/{variant}.{ext}"))
        let pipeline = JobPipeline(
            handler: handler(storage, ScriptedCompressor(work: .milliseconds(50)), configuration),
            limits: .init(jobs: 2, uploads: 4))
        let all = try await pipeline.runAll(["first.jpg", "second.jpg"].map { job($0, "the same bytes") })
        let done = try #require(all.first { $0.status == .done })
        #expect(all.contains { $0.status == .failed })
        for variant in done.variants {
            #expect(storage.objects[variant.key] != nil, "\(variant.key) of the done job is still there")
        }
        #expect(storage.deletedKeys.isEmpty)
    }

    @Test func changedVariantSettingsMakeTheOutputsAgainInsteadOfSkipping() async throws {
        let storage = InMemoryStorage()
        let compressor = ScriptedCompressor()
        _ = try await handler(storage, compressor).run(job("a.jpg", "bytes"))
        var variants = Preset.web
        variants[0].quality = 60
        let again = try await handler(storage, compressor, .init(variants: variants)).run(job("a.jpg", "bytes"))
        #expect(again.status == .done, "not skipped: the large variant's settings changed")
        #expect(compressor.calls.count == 2)
        #expect(storage.objects["a-large.jpg"]?.origin?.variant == "large=2048x2048,jpeg,q60")
        let third = try await handler(storage, compressor, .init(variants: variants)).run(job("a.jpg", "bytes"))
        #expect(third.status == .skipped)
    }

    /// A batch (``FileHandler/Configuration/updatesEditedOriginals``) publishes an edited photo
    /// without an option when its outputs were stored to be revalidated, and says so in the record.
    @Test func aBatchReplacesTheOutputsOfAnEditedPhotoStoredToBeRevalidated() async throws {
        let storage = InMemoryStorage()
        let batch = FileHandler.Configuration(cacheControl: CacheControl.revalidating, updatesEditedOriginals: true)
        let first = try await handler(storage, ScriptedCompressor(), batch).run(job("trip/photo.jpg", "version 1"))
        #expect(first.variants.allSatisfy { $0.replaced == nil })

        let edited = try await handler(storage, ScriptedCompressor(), batch).run(job("trip/photo.jpg", "version 2"))
        #expect(edited.status == .done, "\(edited.error ?? "")")
        #expect(storage.objects["trip/photo-large.jpg"]?.origin?.sha256 == edited.sha256)
        #expect(edited.variants.count == 3 && edited.variants.allSatisfy { $0.replaced == .earlierVersion })
        let line = String(decoding: try JSONEncoder().encode(edited.variants[0]), as: UTF8.self)
        #expect(line.contains(#""replaced":"earlier_version""#), "\(line)")

        // A queue's worker (the flag off) still refuses: a second upload's name says nothing of its picture.
        let queued = try await handler(storage, ScriptedCompressor(), .init(cacheControl: CacheControl.revalidating))
            .run(job("trip/photo.jpg", "version 3"))
        #expect(queued.errorCode == .keyCollision)
        #expect(queued.error?.hasPrefix("'trip/photo.jpg' changed since output key 'trip/photo-large.jpg' was made from it") == true)
    }

    /// An edited photo's job that fails midway removes none of the outputs it replaced: their URLs
    /// were served, and the new picture under them is right, where removing them would leave 404s.
    @Test func anEditedPhotosFailedJobKeepsTheOutputsItReplaced() async throws {
        let batch = FileHandler.Configuration(cacheControl: CacheControl.revalidating, updatesEditedOriginals: true)
        let storage = InMemoryStorage(failing: { object, attempt in
            object.key.hasSuffix("-medium.webp") && attempt > 1 ? ImagePipeError(.storageUnavailable, "timeout") : nil
        })
        _ = try await handler(storage, ScriptedCompressor(), batch).run(job("trip/photo.jpg", "version 1"))
        let edited = try await handler(storage, ScriptedCompressor(), batch).run(job("trip/photo.jpg", "version 2"))
        #expect(edited.status == .failed && edited.errorCode == .storageUnavailable)
        #expect(storage.deletedKeys.isEmpty, "removed: \(storage.deletedKeys)")
        #expect(Set(storage.objects.keys) == ["trip/photo-large.jpg", "trip/photo-medium.webp", "trip/photo-thumb.webp"])
        #expect(storage.objects["trip/photo-large.jpg"]?.origin?.sha256 == edited.sha256, "the new picture stays under its URL")
    }

    /// Outputs served as immutable (every object of an earlier imagepipe, or an explicit
    /// `--cache-control` with `immutable`) are never replaced by a plain run; `--update` does.
    @Test func anEditedPhotoServedAsImmutableIsRefusedUntilUpdate() async throws {
        let storage = InMemoryStorage()
        _ = try await handler(storage, ScriptedCompressor(), .init(cacheControl: CacheControl.immutable)).run(job("photo.jpg", "version 1"))
        let before = storage.objects.mapValues(\.body)
        let compressor = ScriptedCompressor()

        let plain = try await handler(storage, compressor, .init(updatesEditedOriginals: true)).run(job("photo.jpg", "version 2"))
        #expect(plain.errorCode == .keyCollision)
        let reason = plain.error ?? ""
        #expect(reason.hasPrefix("'photo.jpg' changed since output key 'photo-large.jpg' was made from it"), "\(reason)")
        #expect(reason.contains("that URL was served as immutable (Cache-Control: public, max-age=31536000, immutable)"), "\(reason)")
        #expect(reason.contains("may keep showing the old picture for up to a year"), "\(reason)")
        #expect(reason.contains("{hash}") && reason.contains("--update"), "\(reason)")
        #expect(compressor.calls.isEmpty && storage.objects.mapValues(\.body) == before)

        let updated = try await handler(storage, compressor, .init(update: true, updatesEditedOriginals: true)).run(job("photo.jpg", "version 2"))
        #expect(updated.status == .done && updated.variants.allSatisfy { $0.replaced == .earlierVersion })
        #expect(storage.objects["photo-large.jpg"]?.origin?.sha256 == updated.sha256)
    }

    /// The same name read from another folder is another photo, not an edit: a plain batch never
    /// replaces it, and the message names both places.
    @Test func theSameNameFromAnotherFolderIsNotAnEditedPhoto() async throws {
        let storage = InMemoryStorage()
        let batch = FileHandler.Configuration(cacheControl: CacheControl.revalidating, updatesEditedOriginals: true)
        let first = Job(path: directory.write("a/photo.jpg", ScriptedCompressor.image("one photo")), relativePath: "photo.jpg")
        let second = Job(path: directory.write("b/photo.jpg", ScriptedCompressor.image("another photo")), relativePath: "photo.jpg")
        _ = try await handler(storage, ScriptedCompressor(), batch).run(first)
        let refused = try await handler(storage, ScriptedCompressor(), batch).run(second)
        #expect(refused.errorCode == .keyCollision)
        #expect(
            refused.error?.contains(
                "already holds an image made from another 'photo.jpg', read from \(directory.url("a/photo.jpg"))") == true,
            "\(refused.error ?? "")")
        #expect(storage.objects["photo-large.jpg"]?.origin?.location == directory.url("a/photo.jpg"))
    }

    @Test func updateReplacesOnlyOutputsOfAnEarlierVersionOfTheSameName() async throws {
        let storage = InMemoryStorage()
        _ = try await handler(storage).run(job("photo.jpg", "version 1"))
        let updated = try await handler(storage, ScriptedCompressor(), .init(update: true)).run(job("photo.jpg", "version 2"))
        #expect(updated.status == .done)
        #expect(storage.objects["photo-large.jpg"]?.origin?.sha256 == updated.sha256)
        let other = try await handler(storage, ScriptedCompressor(), .init(keyTemplate: try KeyTemplate("photo-{variant}.{ext}"), update: true))
            .run(job("elsewhere.jpg", "another picture"))
        #expect(other.errorCode == .keyCollision, "another name is another original, even with --update")
    }
}

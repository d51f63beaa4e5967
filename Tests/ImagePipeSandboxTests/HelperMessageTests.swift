import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import ImagePipeSandbox

/// The messages between a worker and its helpers: what one side writes the other reads back the
/// same, and what a hostile helper could send instead is refused, never trusted.
@Suite struct HelperMessageTests {
    static let variants = [
        try! VariantSpec(parsing: "large=2048x2048,jpeg,q82"), try! VariantSpec(parsing: "thumb=320x320,webp,auto,cover"),
    ]

    @Test func everyRequestReadsBackAsWritten() throws {
        let requests: [HelperRequest] = [
            .setup(variants: Self.variants, limits: CompressionLimits(maxPixels: 1234, maxFrames: 56)),
            .compress(
                HelperSource(
                    nonce: 0xDEAD_BEEF_0123_4567, name: "Été/IMG 0001.HEIC", focus: FocalPoint(x: 0.25, y: 0.75), isFile: true, advance: 8 << 20)),
            .readHeader(HelperSource(nonce: .max, name: "a.jpg", focus: nil, isFile: false)),
            .grant(nonce: 7, bytes: 128 << 20),
            .compressBatch([
                HelperSource(nonce: 1, name: "a.jpg", focus: nil, isFile: false, inline: [0xFF, 0xD8, 0xFF], advance: 8 << 20),
                HelperSource(nonce: 2, name: "b/c.png", focus: FocalPoint(x: 0.5, y: 0.1), isFile: false, inline: [0x89, 0x50], advance: 8 << 20),
            ]),
        ]
        for request in requests {
            #expect(try HelperRequest(decoding: request.encoded()) == request)
        }
    }

    @Test func everyReplyReadsBackAsWritten() throws {
        var result = HelperResult(
            CompressedImage(
                sourceFormat: .heic, sourceSize: PixelSize(width: 4032, height: 3024), variants: [],
                decodeTime: .milliseconds(120), encodeTime: .nanoseconds(987_654_321)))
        result.placeholder = Placeholder(thumbHash: "1QcSHQRnh493V4dIh4eXh1h4kJUI", color: "#7f8c8d")
        result.gainMap = GainMap(kind: .appleHEIC, notCarried: .noHeadroom)
        result.facts = HostileHelperTests.facts
        result.variants = [
            .init(encoding: VariantEncoding(size: PixelSize(width: 2048, height: 1536), quality: 82, score: 87.25), byteCount: 345_678),
            .init(
                encoding: VariantEncoding(size: PixelSize(width: 320, height: 320), encodes: 3, keptOriginal: true, frames: 12), byteCount: 9_876),
        ]
        result.steps = [
            ImageStep(.decode, start: 10, end: 20), ImageStep(.encode(variant: 1), start: 20, end: 20),
            ImageStep(.gainMap(variant: 0), start: 21, end: 30),
        ]
        var hdr = result
        hdr.gainMap = GainMap(kind: .ultraHDRJPEG, carried: true, headroom: 3.5)
        hdr.variants[0].encoding.hdrHeadroom = 3.5
        let failure = ImagePipeError(.corruptImage, "premature end of JPEG file")
        let replies: [HelperReply] = [
            .compressed(nonce: 1, hdr), .ready(sandboxed: true, landlock: 7), .startFailed("Landlock: Operation not permitted"),
            .need(nonce: .max, bytes: 88 << 20), .compressed(nonce: 0x0123_4567_89AB_CDEF, result),
            .header(nonce: 3, SourceHeader(format: .avif, size: PixelSize(width: 10, height: 20))), .header(nonce: 4, nil),
            .failed(nonce: 5, failure),
            .batch([.compressed(nonce: 6, result), .compressed(nonce: 7, result), .failed(nonce: 8, failure)]),
        ]
        for reply in replies {
            #expect(try HelperReply(decoding: reply.encoded()) == reply)
        }
    }

    @Test func aBatchHoldsOnlySourcesInsideTheMessageAndABoundedCount() throws {
        let outside = HelperRequest.compressBatch([HelperSource(nonce: 1, name: "a.jpg", focus: nil, isFile: false)]).encoded()
        #expect(throws: WireReader.Malformed.self) { try HelperRequest(decoding: outside) }
        let source = HelperSource(name: "a.jpg", focus: nil, isFile: false, inline: [1])
        let many = HelperRequest.compressBatch(Array(repeating: source, count: HelperRequest.maxBatch + 1)).encoded()
        #expect(throws: WireReader.Malformed.self) { try HelperRequest(decoding: many) }
        let failure = HelperReply.batch([]).encoded()
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: failure) }
    }

    /// The fuzz target's seeds: one message of each kind, as they are written now.
    static var seedMessages: [(name: String, bytes: [UInt8])] {
        var result = HelperResult(
            CompressedImage(
                sourceFormat: .jpeg, sourceSize: PixelSize(width: 1800, height: 1200), variants: [],
                decodeTime: .milliseconds(40), encodeTime: .milliseconds(60)))
        result.placeholder = Placeholder(thumbHash: "1QcSHQRnh493V4dIh4eXh1h4kJUI", color: "#7f8c8d")
        result.facts = HostileHelperTests.facts
        result.variants = [
            .init(encoding: VariantEncoding(size: PixelSize(width: 1800, height: 1200), quality: 82, score: 71.5), byteCount: 300_000),
            .init(
                encoding: VariantEncoding(size: PixelSize(width: 320, height: 320), quality: 70, encodes: 3), byteCount: 30,
                inline: Array(repeating: 7, count: 30)),
        ]
        let t: UInt64 = 1_796_000_000_000_000_000
        result.steps = [
            ImageStep(.header, start: t, end: t + 1_000_000), ImageStep(.decode, start: t + 1_000_000, end: t + 40_000_000),
            ImageStep(.analyses, start: t + 40_000_000, end: t + 41_000_000),
            ImageStep(.encode(variant: 0), start: t + 41_000_000, end: t + 90_000_000),
            ImageStep(.gainMap(variant: 0), start: t + 90_000_000, end: t + 95_000_000),
            ImageStep(.encode(variant: 1), start: t + 95_000_000, end: t + 100_000_000),
        ]
        var hdr = result
        hdr.sourceFormat = .heic
        hdr.gainMap = GainMap(kind: .appleHEIC, carried: true, headroom: 3.1)
        hdr.variants[0].encoding.hdrHeadroom = 3.1
        var dropped = result
        dropped.gainMap = GainMap(kind: .ultraHDRJPEG, notCarried: .dropped, headroom: 4)
        let failure = ImagePipeError(.corruptImage, "premature end of JPEG file")
        let variants = Preset.web + [try! VariantSpec(parsing: "sdr=800x800,jpeg,q80,hdr=drop")]
        let replies: [(String, HelperReply)] = [
            ("ready", .ready(sandboxed: true, landlock: 4)), ("start-failed", .startFailed("Landlock: Operation not permitted")),
            ("need", .need(nonce: 0x1F2E_3D4C_5B6A_7988, bytes: 88 << 20)), ("compressed", .compressed(nonce: 0x1F2E_3D4C_5B6A_7988, result)),
            ("compressed-gain-map", .compressed(nonce: 1, hdr)), ("compressed-gain-map-dropped", .compressed(nonce: 2, dropped)),
            ("header", .header(nonce: 3, SourceHeader(format: .heic, size: PixelSize(width: 4032, height: 3024)))),
            ("no-header", .header(nonce: 4, nil)), ("failed", .failed(nonce: 5, failure)),
            ("batch", .batch([.compressed(nonce: 6, result), .failed(nonce: 7, failure)])),
        ]
        let requests: [(String, HelperRequest)] = [
            ("start", .start(hasLogo: true)), ("setup", .setup(variants: variants, limits: .default)),
            (
                "compress",
                .compress(
                    HelperSource(
                        nonce: 0x1F2E_3D4C_5B6A_7988, name: "photos/a.jpg", focus: FocalPoint(x: 0.3, y: 0.6), isFile: true, advance: 8 << 20))
            ),
            (
                "compress-batch",
                .compressBatch([
                    HelperSource(nonce: 9, name: "a.png", focus: nil, isFile: false, inline: [0x89, 0x50, 0x4E, 0x47], advance: 8 << 20)
                ])
            ),
            ("grant", .grant(nonce: 0x1F2E_3D4C_5B6A_7988, bytes: 64 << 20)),
        ]
        return replies.map { ($0.0 + ".bin", $0.1.encoded()) } + requests.map { ("request-" + $0.0 + ".bin", $0.1.encoded()) }
    }

    /// The fuzz target's seeds are messages as they are written now: a layout that changes makes
    /// them over (run this test with IMAGEPIPE_WRITE_FUZZ_SEEDS=1 to write them), or they would only
    /// test the first check that refuses them.
    @Test func everySeedOfTheFuzzTargetIsAMessageOfTheCurrentLayout() throws {
        let folder = Fixtures.repository + "/fixtures/fuzz/helper-message/"
        if ProcessInfo.processInfo.environment["IMAGEPIPE_WRITE_FUZZ_SEEDS"] == "1" {
            for seed in Fixtures.files(in: "fuzz/helper-message") { try FileManager.default.removeItem(atPath: folder + seed) }
            for (name, bytes) in Self.seedMessages { try Data(bytes).write(to: URL(fileURLWithPath: folder + name)) }
        }
        #expect(Set(Fixtures.files(in: "fuzz/helper-message")) == Set(Self.seedMessages.map(\.name)))
        // Read back as the message written now (a setup's JSON may order its keys otherwise).
        for (name, bytes) in Self.seedMessages {
            let seed = [UInt8](Fixtures.data("fuzz/helper-message/" + name))
            if name.hasPrefix("request-") {
                #expect(try HelperRequest(decoding: seed) == HelperRequest(decoding: bytes), "\(name) is not as written now")
            } else {
                #expect(try HelperReply(decoding: seed) == HelperReply(decoding: bytes), "\(name) is not as written now")
            }
        }
    }

    @Test func aReplyCutShortOrWithBytesLeftOverIsRefused() throws {
        let bytes = HelperReply.need(nonce: 42, bytes: 42).encoded()
        for end in 0..<bytes.count {
            #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: Array(bytes[..<end])) }
        }
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: bytes + [0]) }
    }

    @Test func aReplyOfUnknownKindOrOutOfRangeValuesIsRefused() throws {
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: [99]) }
        // A request's kind is no reply.
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: HelperRequest.grant(nonce: 1, bytes: 1).encoded()) }
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: HelperReply.need(nonce: 1, bytes: -1).encoded()) }
        var writer = WireWriter(kind: 15)  // failed, with a code no imagepipe version has
        writer.nonce(1)
        writer.string("rm_rf")
        writer.string("reason")
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: writer.bytes) }
        var huge = WireWriter(kind: 11)  // a reason whose length says a terabyte follows
        huge.int(1 << 40)
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: huge.bytes) }
    }

    @Test func aResultMayNotDescribeMoreVariantsThanAMessageCarriesDescriptorsFor() throws {
        var result = HelperResult(
            CompressedImage(sourceFormat: .jpeg, sourceSize: PixelSize(width: 1, height: 1), variants: [], decodeTime: .zero, encodeTime: .zero))
        result.variants = Array(
            repeating: .init(encoding: VariantEncoding(size: PixelSize(width: 1, height: 1), quality: 80), byteCount: 1),
            count: HelperResult.maxVariants + 1)
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: HelperReply.compressed(nonce: 1, result).encoded()) }
    }
}

/// What a helper taken over by a hostile image might send, refused before the worker acts on it.
@Suite struct HostileHelperTests {
    func result(score: Double? = 80, thumbHash: String = "1QcSHQRnh493V4dIh4eXh1h4kJUI", color: String = "#7f8c8d") -> [UInt8] {
        var result = HelperResult(
            CompressedImage(sourceFormat: .jpeg, sourceSize: PixelSize(width: 10, height: 10), variants: [], decodeTime: .zero, encodeTime: .zero))
        result.placeholder = Placeholder(thumbHash: thumbHash, color: color)
        result.variants = [
            .init(encoding: VariantEncoding(size: PixelSize(width: 10, height: 10), quality: 80, score: score), byteCount: 100)
        ]
        return HelperReply.compressed(nonce: 1, result).encoded()
    }

    /// The steps a helper reports are only placed in a trace, but they are strangers' numbers too:
    /// a known kind, a variant the job has, an end not before its start, no more than the job's
    /// steps can be.
    @Test func stepsOfNoKnownKindOrVariantOrEndingBeforeTheyStartOrTooManyAreRefused() throws {
        func reply(_ steps: [ImageStep]) -> HelperReply {
            var result = HelperResult(
                CompressedImage(sourceFormat: .jpeg, sourceSize: PixelSize(width: 10, height: 10), variants: [], decodeTime: .zero, encodeTime: .zero)
            )
            result.variants = [.init(encoding: VariantEncoding(size: PixelSize(width: 10, height: 10), quality: 80), byteCount: 100)]
            result.steps = steps
            return .compressed(nonce: 1, result)
        }
        let fine = reply([ImageStep(.header, start: 1, end: 2), ImageStep(.encode(variant: 0), start: 2, end: 9)])
        #expect(try HelperReply(decoding: fine.encoded()) == fine)
        for bad in [
            [ImageStep(.encode(variant: 1), start: 1, end: 2)],  // the job has one variant
            [ImageStep(.decode, start: 5, end: 4)],  // ends before it starts
            Array(repeating: ImageStep(.decode, start: 1, end: 2), count: ImageStep.limit(variants: 1) + 1),
        ] {
            #expect(throws: WireReader.Malformed.self, "\(bad.prefix(2))") { try HelperReply(decoding: reply(bad).encoded()) }
        }
        // A kind past the last: the step's kind is the first number after its count.
        var bytes = reply([ImageStep(.decode, start: 1, end: 2)]).encoded()
        let kind = reply([]).encoded().count
        bytes[kind] = 9
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: bytes) }
    }

    @Test func aScoreThatJSONCannotHoldIsRefused() throws {
        #expect(throws: Never.self) { try HelperReply(decoding: result(score: 87.5)) }
        for score in [Double.nan, .infinity, -.infinity, 101] {
            #expect(throws: WireReader.Malformed.self, "\(score)") { try HelperReply(decoding: result(score: score)) }
        }
    }

    @Test func aGainMapIsItsKindWhetherCarriedAndWhyNotAndTheWordsAreTheWorkers() throws {
        var result = HelperResult(
            CompressedImage(
                sourceFormat: .jpeg, sourceSize: PixelSize(width: 400, height: 300), variants: [], decodeTime: .zero, encodeTime: .zero))
        result.variants = [
            .init(encoding: VariantEncoding(size: PixelSize(width: 10, height: 10), quality: 80), byteCount: 100)
        ]
        // A helper sends the code of why; the manifest's words are the worker's for that code.
        result.gainMap = GainMap(kind: .ultraHDRJPEG, notCarried: .geometry, headroom: 2)
        let decoded = try HelperReply(decoding: HelperReply.compressed(nonce: 1, result).encoded())
        guard case .compressed(_, let read) = decoded else {
            Issue.record("not a result: \(decoded)")
            return
        }
        #expect(read.gainMap == GainMap(kind: .ultraHDRJPEG, carried: false, reason: GainMap.Reason.geometry.words, headroom: 2))
        func refused(_ change: (inout HelperResult) -> Void, _ why: String) {
            var forged = result
            change(&forged)
            #expect(throws: WireReader.Malformed.self, "\(why)") { try HelperReply(decoding: HelperReply.compressed(nonce: 1, forged).encoded()) }
        }
        // A kind or a reason the worker does not know.
        let bytes = HelperReply.compressed(nonce: 1, result).encoded()
        for (known, unknown) in [("ultra_hdr_jpeg", "ultra_hdr_jpeX"), ("geometry", "geometrY")] {
            let at = try #require(bytes.firstRange(of: Array(known.utf8))).lowerBound
            var forged = bytes
            forged.replaceSubrange(at..<(at + known.utf8.count), with: Array(unknown.utf8))
            #expect(throws: (any Error).self, "\(unknown)") { try HelperReply(decoding: forged) }
        }
        refused({ $0.gainMap = GainMap(kind: .ultraHDRJPEG, carried: false, reason: "anything a helper might say") }, "not carried, no reason")
        refused({ $0.gainMap = GainMap(kind: .ultraHDRJPEG, carried: true) }, "carried, no headroom")
        refused({ $0.gainMap = GainMap(kind: .ultraHDRJPEG, carried: true, reason: GainMap.Reason.dropped.words, headroom: 2) }, "both")
        for headroom in [Double.nan, .infinity, 0.5, 1, 1000] {
            refused({ $0.gainMap = GainMap(kind: .ultraHDRJPEG, carried: true, headroom: headroom) }, "headroom \(headroom)")
            refused(
                {
                    $0.gainMap = GainMap(kind: .ultraHDRJPEG, carried: true, headroom: 2)
                    $0.variants[0].encoding.hdrHeadroom = headroom
                }, "variant headroom \(headroom)")
        }
        // An HDR variant of an original whose gain map was not carried, or had none.
        refused({ $0.variants[0].encoding.hdrHeadroom = 2 }, "an HDR variant of no carried map")
        refused(
            {
                $0.gainMap = nil
                $0.variants[0].encoding.hdrHeadroom = 2
            }, "an HDR variant of no map")
    }

    static let facts: ImageFacts = ImageFacts(
        pdq: ImageFacts.PDQ(hash: "f8f8f0cee0f4a84f06370a22038f63f0b36e2ed596621e1d33e6b39c4e9c9b22", quality: 100),
        palette: [
            ImageFacts.Colour(color: "#1f2a44", share: 0.5), ImageFacts.Colour(color: "#e8d5b0", share: 0.3),
            ImageFacts.Colour(color: "#7f8c8d", share: 0.2),
        ],
        provenance: ImageFacts.Provenance(c2pa: true, digitalSourceType: "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"))

    /// A helper's facts end up in HTML (`report`), JSON and object metadata: each of the shapes a
    /// taken-over helper might send instead is refused whole, and every analysis's part is optional.
    @Test func factsOfAnyOtherShapeThanTheirOwnAreRefused() throws {
        func reply(_ change: (inout ImageFacts) -> Void) -> [UInt8] {
            var result = HelperResult(
                CompressedImage(
                    sourceFormat: .jpeg, sourceSize: PixelSize(width: 400, height: 300), variants: [], decodeTime: .zero, encodeTime: .zero))
            var facts = Self.facts
            change(&facts)
            result.facts = facts
            return HelperReply.compressed(nonce: 1, result).encoded()
        }
        for part in 0..<3 {
            var facts = Self.facts
            if part == 0 { facts.pdq = nil } else if part == 1 { facts.palette = nil } else { facts.provenance = nil }
            let read = try HelperReply(decoding: reply { $0 = facts })
            guard case .compressed(_, let result) = read else {
                Issue.record("not a result")
                continue
            }
            #expect(result.facts == facts)
        }
        let forged: [(String, (inout ImageFacts) -> Void)] = [
            ("a short hash", { $0.pdq?.hash = "f8f8" }),
            ("a hash in capitals", { facts in facts.pdq?.hash = HostileHelperTests.facts.pdq!.hash.uppercased() }),
            ("markup in the hash", { $0.pdq?.hash = "<script>" + String(repeating: "a", count: 56) }),
            ("a quality past 100", { $0.pdq?.quality = 101 }),
            ("seven colours", { $0.palette = Array(repeating: .init(color: "#000000", share: 0.1), count: 7) }),
            ("a colour name", { $0.palette?[0].color = "red" }),
            ("a colour with markup", { $0.palette?[0].color = "#fff\"><" }),
            ("a negative share", { $0.palette?[0].share = -0.2 }),
            ("a share of nothing", { $0.palette?[0].share = 0 }),
            ("shares adding up past 1", { $0.palette?[0].share = 0.9 }),
            ("a source type with a quote", { $0.provenance?.digitalSourceType = "http://x/\"onload=" }),
            ("a source type that is no URI", { $0.provenance?.digitalSourceType = "trainedAlgorithmicMedia" }),
            ("a long source type", { $0.provenance?.digitalSourceType = "http://" + String(repeating: "a", count: 300) }),
            ("a header break in the source type", { $0.provenance?.digitalSourceType = "http://a/\r\nx-amz-acl: public" }),
        ]
        for (why, change) in forged {
            #expect(throws: WireReader.Malformed.self, "\(why)") { try HelperReply(decoding: reply(change)) }
        }
        // A share that is no number at all is refused before it is rounded.
        var bytes = reply { _ in }
        func bits(_ value: Double) -> [UInt8] { withUnsafeBytes(of: value.bitPattern.littleEndian) { Array($0) } }
        let at = try #require(bytes.firstRange(of: bits(0.5)))
        bytes.replaceSubrange(at, with: bits(.nan))
        #expect(throws: WireReader.Malformed.self) { try HelperReply(decoding: bytes) }
    }

    @Test func aPlaceholderThatIsNoThumbHashAndColourIsRefused() throws {
        for (hash, color) in [
            ("\"><script>alert(1)</script>", "#7f8c8d"), ("1QcSHQRnh493V4dIh4eXh1h4kJUI", "red\r\nx-amz-acl: public-read"),
            (String(repeating: "A", count: 4096), "#7f8c8d"), ("1QcSHQRnh493V4dIh4eXh1h4kJUI", "#7F8C8D"),
        ] {
            #expect(throws: WireReader.Malformed.self, "\(hash.prefix(20)) \(color)") {
                try HelperReply(decoding: result(thumbHash: hash, color: color))
            }
        }
    }

    @Test func anOutputLargerThanItsVariantCanHoldIsOverTheLimit() throws {
        let limits = CompressionLimits.default
        let thumb = try VariantSpec(parsing: "thumb=320x320,webp,q70")
        // 320x320 at 4 bytes a pixel, every frame an animation may have, and a mebibyte.
        #expect(SandboxedCompressor.outputLimit(for: thumb, limits: limits, sourceBytes: 5_000) == 320 * 320 * 4 * 1000 + (1 << 20))
        let jpeg = try VariantSpec(parsing: "large=2048x2048,jpeg,q82")
        // A JPEG that may carry a gain map: a byte more a pixel, for the map.
        #expect(SandboxedCompressor.outputLimit(for: jpeg, limits: limits, sourceBytes: 5_000) == 2048 * 2048 * 5 + (1 << 20))
        let sdr = jpeg.applying(hdr: .drop)
        #expect(SandboxedCompressor.outputLimit(for: sdr, limits: limits, sourceBytes: 5_000) == 2048 * 2048 * 4 + (1 << 20))
        // A kept original is the source's own bytes.
        #expect(SandboxedCompressor.outputLimit(for: jpeg, limits: limits, sourceBytes: 40 << 20) == (40 << 20) + (1 << 20))
        // An open side is bounded by the pixel limit, and nothing passes the file size limit.
        let wide = try VariantSpec(parsing: "wide=4000x,png")
        #expect(SandboxedCompressor.outputLimit(for: wide, limits: limits, sourceBytes: 0) == limits.maxPixels * 4 + (1 << 20))
        let moving = try VariantSpec(parsing: "moving=4000x,webp,q70")
        #expect(SandboxedCompressor.outputLimit(for: moving, limits: limits, sourceBytes: 0) == SandboxedCompressor.maxOutputBytes)
    }
}

/// The channel between a worker and a helper, on a real socket pair.
@Suite struct HelperChannelTests {
    @Test func aPeerThatStopsReadingCostsTheSenderItsDeadlineNotItsThread() throws {
        let (worker, helperEnd) = try HelperChannel.pair()
        defer { close(helperEnd) }
        // The helper's end never reads: the socket fills, and a send then gives up at its deadline.
        let message = HelperRequest.grant(nonce: 1, bytes: 1).encoded()
        var sent = 0
        var failure: ChannelFailure?
        let started = ContinuousClock.now
        while failure == nil && sent < 100_000 {
            do {
                try worker.send(message, timeout: .milliseconds(50))
                sent += 1
            } catch {
                failure = error
            }
        }
        #expect(failure == .timedOut, "after \(sent) messages")
        #expect(sent > 10, "messages fit before the socket filled")
        #expect(ContinuousClock.now - started < .seconds(30), "the send returned")
    }

    @Test func aPeerThatClosedIsSeenWhileIdleAndOnTheNextSend() throws {
        let (worker, helperEnd) = try HelperChannel.pair()
        #expect(!worker.peerClosedOrSpoke)
        close(helperEnd)
        // A process that another test of this one is starting holds a copy of every descriptor until
        // its exec closes it: the peer is gone once the last copy is.
        #expect(eventually(seconds: 10) { worker.peerClosedOrSpoke })
        #expect(throws: ChannelFailure.closed) { try worker.send(HelperRequest.grant(nonce: 1, bytes: 1).encoded()) }
    }

    /// A helper that cannot start says why and exits, often before it read the worker's start
    /// message: the kernel then fails the worker's next receive with ECONNRESET ahead of the reason.
    @Test func whatAPeerSentBeforeEndingWithOurMessageUnreadIsStillReceived() throws {
        let (worker, helperEnd) = try HelperChannel.pair()
        let helper = HelperChannel(taking: helperEnd)
        try worker.send(HelperRequest.start(hasLogo: false).encoded())
        try helper.send(HelperReply.startFailed("no Landlock here").encoded())
        _ = consume helper  // closed with the start message unread
        let received = try worker.receive(timeout: .seconds(5))
        #expect(try HelperReply(decoding: received.bytes) == .startFailed("no Landlock here"))
        #expect(throws: ChannelFailure.closed) { try worker.receive(timeout: .seconds(5)) }
    }

    @Test func descriptorsTravelWithTheirMessageAndMoreThanFitAreRefused() throws {
        let (worker, helperEnd) = try HelperChannel.pair()
        let helper = HelperChannel(taking: helperEnd)
        var pipe: [Int32] = [-1, -1]
        #expect(Glibc.pipe(&pipe) == 0)
        defer { close(pipe[0]); close(pipe[1]) }
        let message = HelperRequest.grant(nonce: 1, bytes: 1).encoded()
        try worker.send(message, descriptors: [pipe[0]])
        let received = try helper.receive(timeout: .seconds(5))
        #expect(received.bytes == message && received.descriptors.count == 1)
        received.closeDescriptors()
        #expect(throws: ChannelFailure.self) {
            try worker.send(message, descriptors: Array(repeating: pipe[0], count: HelperChannel.maxDescriptors + 1))
        }
    }
}

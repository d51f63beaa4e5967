// Content Credentials detection and the IPTC AI label: found where each format keeps them, and nothing else taken for them.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import ImagePipeVips
import Testing

/// ``ProvenanceScan``: C2PA manifest stores found in JPEG, PNG, ISO BMFF and WebP containers
/// without trapping on any length, and the IPTC digital source type read from XMP.
@Suite struct ProvenanceTests {
    /// The IPTC code for a picture made by a generative model, the label the fixtures carry.
    static let trainedAlgorithmicMedia = "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"

    /// Scans `bytes` as a file of their length. The reader hands back slices that do not start at
    /// index 0, as a `Data` cut from a larger buffer would, and counts its calls in `reads`.
    static func carriesC2PA(_ bytes: Data, reads: inout Int) -> Bool {
        let buffer = Data([0xAA, 0xBB]) + bytes
        let file = buffer.dropFirst(2)
        var count = 0
        let found = ProvenanceScan.carriesC2PA(size: file.count) { offset, length in
            count += 1
            guard offset >= 0, length >= 0, offset <= file.count else { return nil }
            let start = file.startIndex + offset
            return file[start..<(start + min(length, file.count - offset))]
        }
        reads = count
        return found
    }

    /// Scans `bytes` as a file of their length, not counting reads.
    static func carriesC2PA(_ bytes: Data) -> Bool {
        var reads = 0
        return carriesC2PA(bytes, reads: &reads)
    }

    // MARK: - Fixtures

    /// Each fixture's store is found from a few header reads.
    @Test(arguments: ["provenance/c2pa-signed.jpg", "provenance/c2pa-chunk.png", "provenance/c2pa-box.avif"])
    func storesAreFound(_ relative: String) {
        var reads = 0
        #expect(Self.carriesC2PA(Fixtures.data(relative), reads: &reads), "\(relative)")
        // Headers alone are read: a handful of small reads, however large the file.
        #expect(reads <= 8, "\(relative): \(reads) reads")
    }

    /// Ordinary pictures in every format, and the labelled JPEG (XMP, no store), have none.
    @Test func filesWithoutAStoreAreNotTakenForOne() {
        var names = ["provenance/ai-labelled.jpg"]
        for name in Fixtures.files(in: "images/formats") where ["jpg", "png", "webp", "avif", "heic"].contains((name as NSString).pathExtension) {
            names.append("images/formats/" + name)
        }
        #expect(names.count > 10)
        for name in names {
            #expect(!Self.carriesC2PA(Fixtures.data(name)), "\(name)")
        }
    }

    /// A file cut before its store ends has no store; one cut after it (pixels missing) still has it.
    /// Where each store ends: the JPEG's first APP11 segment (bytes 20–45,903), the PNG's caBX chunk
    /// after the signature and IHDR (33 + 50 bytes), the AVIF's uuid box after ftyp (32 + 83 bytes).
    @Test(arguments: [("provenance/c2pa-signed.jpg", 45_904), ("provenance/c2pa-chunk.png", 83), ("provenance/c2pa-box.avif", 115)])
    func truncatedStoresAreNotFound(_ relative: String, storeEnd: Int) {
        let data = Fixtures.data(relative)
        // The shortest prefix that holds the store, found by halving; the loop below then checks
        // that every length (a sample of them for the JPEG) falls on the side of it that it should.
        var low = 0, high = data.count
        while low < high {
            let middle = low + (high - low) / 2
            if Self.carriesC2PA(data.prefix(middle)) { high = middle } else { low = middle + 1 }
        }
        #expect(low == storeEnd, "\(relative)")
        let smallest = low
        let step = data.count > 10_000 ? 97 : 1
        for length in stride(from: 0, through: data.count, by: step) {
            #expect(Self.carriesC2PA(data.prefix(length)) == (length >= smallest), "\(relative) cut to \(length) bytes")
        }
    }

    /// Noise behind each format's magic is no store; damaged stores are read without trapping.
    @Test func randomBytesAreNoStoreAndDoNotTrap() {
        var random = SeededRandom.fromEnvironment()
        let magics: [[UInt8]] = [
            [], [0xFF, 0xD8], [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A],
            [0, 0, 0, 0x18] + Array("ftypavif".utf8), Array("RIFF".utf8) + [0xFF, 0xFF, 0xFF, 0xFF] + Array("WEBP".utf8),
        ]
        for round in 0..<5_000 {
            let tail = (0..<Int.random(in: 0...600, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let bytes = Data(magics[round % magics.count] + tail)
            #expect(!Self.carriesC2PA(bytes), "seed \(random.seed), round \(round)")
        }
        // Damaged stores: whatever the answer, reading them must not trap.
        for relative in ["provenance/c2pa-signed.jpg", "provenance/c2pa-chunk.png", "provenance/c2pa-box.avif"] {
            let original = [UInt8](Fixtures.data(relative))
            for _ in 0..<500 {
                var bytes = original
                for _ in 0..<Int.random(in: 1...8, using: &random) {
                    bytes[Int.random(in: 0..<min(bytes.count, 2048), using: &random)] = [0x00, 0x01, 0x7F, 0x80, 0xFF].randomElement(using: &random)!
                }
                _ = Self.carriesC2PA(Data(bytes))
            }
        }
    }

    /// A reader that fails, falls short or gives too much, and sizes that cannot be, are handled.
    @Test func readerFailuresMeanNoStore() {
        let signed = Fixtures.data("provenance/c2pa-signed.jpg")
        #expect(!ProvenanceScan.carriesC2PA(size: signed.count) { _, _ in nil })
        #expect(!ProvenanceScan.carriesC2PA(size: -5) { _, _ in Data([0xFF, 0xD8]) })
        // A reader that gives one byte less than asked reads no header whole.
        #expect(!ProvenanceScan.carriesC2PA(size: signed.count) { offset, count in signed.dropFirst(offset).prefix(max(0, count - 1)) })
        // One that gives more than asked is cut to the count.
        #expect(ProvenanceScan.carriesC2PA(size: signed.count) { offset, count in signed.dropFirst(offset).prefix(count + 50) })
        #expect(!Self.carriesC2PA(Data()) && !Self.carriesC2PA(Data([0xFF])) && !Self.carriesC2PA(Data([0xFF, 0xD8])))
    }

    // MARK: - Built containers

    /// A 32-bit big-endian integer's bytes.
    static func bigEndian32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
    /// A 64-bit big-endian integer's bytes.
    static func bigEndian64(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
    /// A 32-bit little-endian integer's bytes.
    static func littleEndian32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }

    /// A BMFF `ftyp` box for AVIF.
    static let ftyp = bigEndian32(16) + Array("ftypavif".utf8) + bigEndian32(0)
    /// C2PA's `uuid` user type.
    static let c2paUserType: [UInt8] = [0xD8, 0xFE, 0xC3, 0xD6, 0x1B, 0x0E, 0x48, 0x3C, 0x92, 0x97, 0x58, 0x28, 0x87, 0x7E, 0xC4, 0x81]

    /// Box sizes past the end, below their header or beyond an Int stop the walk; 0 and 64-bit sizes are followed.
    @Test func bmffBoxSizesAreChecked() {
        let free = Array("free".utf8), uuid = Array("uuid".utf8)
        let user = Self.c2paUserType
        // Sizes that cannot be: past the end, below their header, 64-bit ones too large for an Int.
        for box in [
            Self.bigEndian32(1) + free + Self.bigEndian64(.max) + user,
            Self.bigEndian32(1) + free + Self.bigEndian64(1 << 63) + user,
            Self.bigEndian32(1) + free + Self.bigEndian64(8) + user,
            Self.bigEndian32(0xFFFF_FFFF) + free + user,
            Self.bigEndian32(4) + free + user,
            Self.bigEndian32(23) + uuid + user.dropLast(),
        ] {
            #expect(!Self.carriesC2PA(Data(Self.ftyp + box)))
        }
        #expect(Self.carriesC2PA(Data(Self.ftyp + Self.bigEndian32(0) + uuid + user)), "size 0: to the end")
        #expect(Self.carriesC2PA(Data(Self.ftyp + Self.bigEndian32(1) + uuid + Self.bigEndian64(32) + user)), "64-bit size")
        let large = Self.bigEndian32(1) + free + Self.bigEndian64(24) + [UInt8](repeating: 0, count: 8)
        #expect(Self.carriesC2PA(Data(Self.ftyp + large + Self.bigEndian32(24) + uuid + user)), "after a 64-bit-sized box")
        // Inside another box is not top level.
        #expect(!Self.carriesC2PA(Data(Self.ftyp + Self.bigEndian32(0) + free + Self.bigEndian32(24) + uuid + user)))
    }

    /// A walk gives up after 10,000 blocks (`ProvenanceScan.maxBlocks`), one read each, whatever follows.
    @Test func theWalkIsBounded() {
        var boxes = Self.ftyp
        for _ in 0..<20_000 { boxes += Self.bigEndian32(8) + Array("free".utf8) }
        boxes += Self.bigEndian32(24) + Array("uuid".utf8) + Self.c2paUserType
        var reads = 0
        #expect(!Self.carriesC2PA(Data(boxes), reads: &reads))
        #expect(reads <= 10_001, "\(reads) reads")

        var fills: [UInt8] = [0xFF, 0xD8] + [UInt8](repeating: 0xFF, count: 30_000)
        fills += Self.jpegSegment(0xEB, Self.minimalStore)
        #expect(!Self.carriesC2PA(Data(fills), reads: &reads))
        #expect(reads <= 10_001, "\(reads) reads")
    }

    /// PNG chunk lengths are held to the file and to PNG's limit, and the walk ends at IEND.
    @Test func pngChunks() {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let zeros = [UInt8](repeating: 0, count: 20)
        #expect(!Self.carriesC2PA(Data(signature + Self.bigEndian32(0xFFFF_FFFF) + Array("IHDR".utf8) + zeros)))
        #expect(!Self.carriesC2PA(Data(signature + Self.bigEndian32(0x8000_0000) + Array("caBX".utf8) + zeros)))
        #expect(!Self.carriesC2PA(Data(signature + Self.bigEndian32(100) + Array("caBX".utf8) + zeros)), "runs past the end")
        #expect(Self.carriesC2PA(Data(signature + Self.bigEndian32(0) + Array("caBX".utf8) + Self.bigEndian32(0))))
        let iend = Self.bigEndian32(0) + Array("IEND".utf8) + Self.bigEndian32(0)
        #expect(!Self.carriesC2PA(Data(signature + iend + Self.bigEndian32(0) + Array("caBX".utf8) + Self.bigEndian32(0))), "after IEND")
    }

    /// WebP chunks are padded to even lengths and end with the RIFF form.
    @Test func webPChunks() {
        let riff = Array("RIFF".utf8) + Self.littleEndian32(0xFFFF_FFFF) + Array("WEBP".utf8)
        #expect(!Self.carriesC2PA(Data(riff + Array("VP8 ".utf8) + Self.littleEndian32(0xFFFF_FFFF) + [UInt8](repeating: 0, count: 20))))
        let vp8x = Array("VP8X".utf8) + Self.littleEndian32(10) + [UInt8](repeating: 0, count: 10)
        #expect(Self.carriesC2PA(Data(riff + vp8x + Array("C2PA".utf8) + Self.littleEndian32(3) + [1, 2, 3])))
        // An odd-sized chunk is followed by a pad byte.
        #expect(Self.carriesC2PA(Data(riff + Array("EXIF".utf8) + Self.littleEndian32(1) + [0, 0] + Array("C2PA".utf8) + Self.littleEndian32(0))))
        // Past the RIFF form's own size is not part of the file.
        let short = Array("RIFF".utf8) + Self.littleEndian32(13) + Array("WEBP".utf8)
        #expect(!Self.carriesC2PA(Data(short + Array("VP8 ".utf8) + Self.littleEndian32(1) + [0, 0] + Array("C2PA".utf8) + Self.littleEndian32(0))))
    }

    /// An APP11 payload holding the start of a C2PA store: "JP", instance 1, sequence 1, a `jumb`
    /// whose `jumd` has the type UUID "c2pa"… (bytes 24–27) and toggles 0x03 (byte 40) with the
    /// label "c2pa" (bytes 41–45).
    static let minimalStore: [UInt8] =
        Array("JP".utf8) + [0, 1] + bigEndian32(1) + bigEndian32(38) + Array("jumb".utf8) + bigEndian32(30) + Array("jumd".utf8)
        + Array("c2pa".utf8) + [0x00, 0x11, 0x00, 0x10, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71] + [0x03] + Array("c2pa".utf8) + [0]

    /// A JPEG marker segment.
    static func jpegSegment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
        [0xFF, marker, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
    }

    /// A JPEG of these segments, then a scan and its end.
    static func jpeg(_ segments: [UInt8]...) -> Data {
        Data([0xFF, 0xD8] + segments.joined() + [0xFF, 0xDA, 0x00, 0x02, 0xFF, 0xD9])
    }

    /// An APP11 JUMBF store is known by its UUID or its label, only before the scan and only whole.
    @Test func jpegAPP11Stores() {
        #expect(Self.carriesC2PA(Self.jpeg(Self.jpegSegment(0xE0, [0, 0, 0]), Self.jpegSegment(0xEB, Self.minimalStore))))
        var labelOnly = Self.minimalStore
        labelOnly[24] = 0x41
        #expect(Self.carriesC2PA(Self.jpeg(Self.jpegSegment(0xEB, labelOnly))), "the label alone")
        var uuidOnly = Self.minimalStore
        uuidOnly[41] = 0x41
        #expect(Self.carriesC2PA(Self.jpeg(Self.jpegSegment(0xEB, uuidOnly))), "the type UUID alone")
        var neither = labelOnly
        neither[41] = 0x41
        #expect(!Self.carriesC2PA(Self.jpeg(Self.jpegSegment(0xEB, neither))), "another kind of JUMBF")
        var unlabelled = labelOnly
        unlabelled[40] = 0x01
        #expect(!Self.carriesC2PA(Self.jpeg(Self.jpegSegment(0xEB, unlabelled))), "a label its toggles do not announce")
        #expect(!Self.carriesC2PA(Self.jpeg(Self.jpegSegment(0xE1, Self.minimalStore))), "APP1, not APP11")
        #expect(!Self.carriesC2PA(Data([0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02] + Self.jpegSegment(0xEB, Self.minimalStore))), "after the scan")
        #expect(!Self.carriesC2PA(Data([0xFF, 0xD8, 0xFF, 0xEB, 0xFF, 0xFF] + Self.minimalStore)), "length past the end")
        #expect(!Self.carriesC2PA(Data([0xFF, 0xD8, 0xFF, 0xEB, 0x00, 0x01] + Self.minimalStore)), "length 1")
        #expect(Self.carriesC2PA(Data([0xFF, 0xD8, 0xFF, 0xFF, 0xFF] + Self.jpegSegment(0xEB, Self.minimalStore))), "after fill bytes")
    }

    // MARK: - Digital source type

    /// The XMP packet of a JPEG: the payload of its APP1 segment named by XMP's signature.
    static func xmp(ofJPEG jpeg: Data) -> Data? {
        let bytes = [UInt8](jpeg)
        let signature = Array("http://ns.adobe.com/xap/1.0/\0".utf8)
        var at = 2
        while at + 4 <= bytes.count, bytes[at] == 0xFF, bytes[at + 1] != 0xDA {
            let length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            guard length >= 2, at + 2 + length <= bytes.count else { return nil }
            let payload = bytes[(at + 4)..<(at + 2 + length)]
            if bytes[at + 1] == 0xE1, payload.starts(with: signature) { return Data(payload.dropFirst(signature.count)) }
            at += 2 + length
        }
        return nil
    }

    /// A packet around `description`, in which "NS" becomes the declaration of `prefix` bound to
    /// `namespace` and "P:" becomes `prefix:`.
    static func packet(
        _ description: String, prefix: String = "Iptc4xmpExt", namespace: String = "http://iptc.org/std/Iptc4xmpExt/2008-02-29/"
    ) -> Data {
        let body = description.replacingOccurrences(of: "NS", with: "xmlns:\(prefix)=\"\(namespace)\"")
            .replacingOccurrences(of: "P:", with: "\(prefix):")
        return Data(
            """
            <?xpacket begin="\u{FEFF}" id="W5M0MpCehiHzreSzNTczkc9d"?>
            <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
            \(body)
            </rdf:RDF></x:xmpmeta>
            <?xpacket end="w"?>
            """.utf8)
    }

    /// The labelled fixture's own XMP gives the IPTC code.
    @Test func theLabelledFixtureCarriesTheLabel() throws {
        let xmp = try #require(Self.xmp(ofJPEG: Fixtures.data("provenance/ai-labelled.jpg")))
        #expect(ProvenanceScan.digitalSourceType(xmp: xmp) == Self.trainedAlgorithmicMedia)
    }

    /// Attribute, element, rdf:resource and CDATA forms, under any prefix bound to the IPTC namespace.
    @Test func everyWayOfWritingThePropertyIsRead() {
        let url = Self.trainedAlgorithmicMedia
        let found: [(String, Data)] = [
            ("attribute", Self.packet("<rdf:Description rdf:about=\"\" NS P:DigitalSourceType=\"\(url)\"/>")),
            ("attribute in single quotes", Self.packet("<rdf:Description rdf:about=\"\" NS P:DigitalSourceType='\(url)'></rdf:Description>")),
            (
                "element",
                Self.packet("<rdf:Description rdf:about=\"\" NS>\n <P:DigitalSourceType>\n  \(url)\n </P:DigitalSourceType></rdf:Description>")
            ),
            ("attribute, prefix iptcExt", Self.packet("<rdf:Description rdf:about=\"\" NS P:DigitalSourceType=\"\(url)\"/>", prefix: "iptcExt")),
            (
                "element, prefix ns1",
                Self.packet("<rdf:Description rdf:about=\"\" NS><P:DigitalSourceType>\(url)</P:DigitalSourceType></rdf:Description>", prefix: "ns1")
            ),
            ("rdf:resource", Self.packet("<rdf:Description rdf:about=\"\" NS><P:DigitalSourceType rdf:resource=\"\(url)\"/></rdf:Description>")),
            (
                "CDATA",
                Self.packet("<rdf:Description rdf:about=\"\" NS><P:DigitalSourceType><![CDATA[\(url)]]></P:DigitalSourceType></rdf:Description>")
            ),
            (
                "default namespace",
                Self.packet(
                    "<rdf:Description rdf:about=\"\"><DigitalSourceType xmlns=\"http://iptc.org/std/Iptc4xmpExt/2008-02-29/\">\(url)</DigitalSourceType></rdf:Description>"
                )
            ),
            (
                "after a commented-out one",
                Self.packet(
                    "<rdf:Description rdf:about=\"\" NS><!-- <P:DigitalSourceType>http://x/y</P:DigitalSourceType> --><P:DigitalSourceType>\(url)</P:DigitalSourceType></rdf:Description>"
                )
            ),
        ]
        for (form, xmp) in found {
            #expect(ProvenanceScan.digitalSourceType(xmp: xmp) == url, "\(form)")
        }
        let escaped = Self.packet(
            "<rdf:Description rdf:about=\"\" NS><P:DigitalSourceType>http://example.com/a?b=1&amp;c=2</P:DigitalSourceType></rdf:Description>")
        #expect(ProvenanceScan.digitalSourceType(xmp: escaped) == "http://example.com/a?b=1&c=2")
    }

    /// Another namespace, an unbound prefix, or a value that is no short plain URI gives nil.
    /// A label the worker would refuse is left out by the helper, not sent to fail the image: every
    /// value the helper reads passes the worker's own check.
    @Test func whatTheHelperReadsTheWorkerTakes() {
        let attribute = "<rdf:Description rdf:about=\"\" NS P:DigitalSourceType=\"VALUE\"/>"
        for value in [
            "http://x.org/a{b}", "http://x.org/a|b", "http://x.org/a\\b", "http://x.org/a`b", "http://x.org/a^b", Self.trainedAlgorithmicMedia,
        ] {
            let read = ProvenanceScan.digitalSourceType(xmp: Self.packet(attribute.replacingOccurrences(of: "VALUE", with: value)))
            if let read { #expect(ImageFacts.isSourceType(read), "\(value) read as \(read)") }
            #expect((read != nil) == (value == Self.trainedAlgorithmicMedia), "\(value)")
        }
    }

    @Test func otherNamespacesAndBadValuesAreNotTheLabel() {
        let url = Self.trainedAlgorithmicMedia
        let attribute = "<rdf:Description rdf:about=\"\" NS P:DigitalSourceType=\"VALUE\"/>"
        let refused: [(String, Data)] = [
            (
                "prefix bound to another namespace",
                Self.packet(attribute.replacingOccurrences(of: "VALUE", with: url), namespace: "http://example.com/other/")
            ),
            ("undeclared prefix", Self.packet("<rdf:Description rdf:about=\"\" P:DigitalSourceType=\"\(url)\"/>")),
            (
                "prefix declared on a sibling",
                Self.packet("<rdf:Description rdf:about=\"\" NS/><rdf:Description rdf:about=\"\" P:DigitalSourceType=\"\(url)\"/>")
            ),
            ("attribute without a prefix", Self.packet("<rdf:Description rdf:about=\"\" DigitalSourceType=\"\(url)\" NS/>")),
            ("a quote", Self.packet(attribute.replacingOccurrences(of: "VALUE", with: "http://x/&quot;y"))),
            (
                "an angle bracket",
                Self.packet("<rdf:Description rdf:about=\"\" NS><P:DigitalSourceType>http://x/&lt;y</P:DigitalSourceType></rdf:Description>")
            ),
            ("300 bytes", Self.packet(attribute.replacingOccurrences(of: "VALUE", with: "http://" + String(repeating: "a", count: 293)))),
            ("a space", Self.packet(attribute.replacingOccurrences(of: "VALUE", with: "http://a b"))),
            ("no scheme", Self.packet(attribute.replacingOccurrences(of: "VALUE", with: "trainedAlgorithmicMedia"))),
            ("a scheme starting with a digit", Self.packet(attribute.replacingOccurrences(of: "VALUE", with: "1http://x"))),
            ("nothing after the scheme", Self.packet(attribute.replacingOccurrences(of: "VALUE", with: "http://"))),
            ("a non-ASCII character", Self.packet(attribute.replacingOccurrences(of: "VALUE", with: "http://caf&#233;"))),
            ("an unknown entity", Self.packet(attribute.replacingOccurrences(of: "VALUE", with: "http://a&bogus;"))),
            (
                "a structured value",
                Self.packet(
                    "<rdf:Description rdf:about=\"\" NS><P:DigitalSourceType><rdf:Description><rdf:value>\(url)</rdf:value></rdf:Description></P:DigitalSourceType></rdf:Description>"
                )
            ),
            ("deep nesting", Data(String(repeating: "<a>", count: 10_000).utf8)),
            ("nothing", Data()),
            ("a cut tag", Data("<a b='".utf8)),
            ("a cut comment", Data("<!--".utf8)),
        ]
        for (what, xmp) in refused {
            #expect(ProvenanceScan.digitalSourceType(xmp: xmp) == nil, "\(what)")
        }
        let longest = Self.packet(attribute.replacingOccurrences(of: "VALUE", with: "http://" + String(repeating: "a", count: 193)))
        #expect(ProvenanceScan.digitalSourceType(xmp: longest)?.utf8.count == 200)
    }

    /// Packets with markup characters sprinkled in, or cut anywhere, are read without trapping.
    @Test func damagedPacketsDoNotTrap() {
        var random = SeededRandom.fromEnvironment()
        let seed = [UInt8](
            Self.packet(
                "<rdf:Description rdf:about=\"\" NS><P:DigitalSourceType>\(Self.trainedAlgorithmicMedia)</P:DigitalSourceType></rdf:Description>"))
        let markup = Array("<>/=\"'&;:! x".utf8)
        for _ in 0..<5_000 {
            var bytes = seed
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = markup.randomElement(using: &random)!
            }
            if let value = ProvenanceScan.digitalSourceType(xmp: Data(bytes)) {
                #expect(value.utf8.count <= 200 && !value.contains("\"") && !value.contains(" "), "seed \(random.seed)")
            }
            _ = ProvenanceScan.digitalSourceType(xmp: Data(bytes.prefix(Int.random(in: 0...bytes.count, using: &random))))
        }
    }

    // MARK: - Writing

    /// A written packet has XMP's wrapper and gives its value back.
    @Test func aWrittenPacketReadsBack() throws {
        let packet = ProvenanceScan.xmpPacket(digitalSourceType: Self.trainedAlgorithmicMedia)
        #expect(ProvenanceScan.digitalSourceType(xmp: packet) == Self.trainedAlgorithmicMedia)
        let text = String(decoding: packet, as: UTF8.self)
        #expect(text.hasPrefix("<?xpacket begin=\"\u{FEFF}\""))
        #expect(text.hasSuffix("<?xpacket end=\"w\"?>"))
        #expect(text.contains("<x:xmpmeta") && text.contains("<rdf:RDF") && text.contains("<rdf:Description"))
    }

    /// Markup in the value is escaped, and what XML cannot hold is left out.
    @Test func aWrittenPacketEscapesItsValue() {
        let packet = ProvenanceScan.xmpPacket(digitalSourceType: "http://example.com/?a=1&b=<2>\"'\u{1}\t")
        let text = String(decoding: packet, as: UTF8.self)
        // Markup as entities, the tab as a reference, U+0001 (which XML cannot hold) left out.
        #expect(text.contains(">http://example.com/?a=1&amp;b=&lt;2&gt;&quot;&#39;&#9;</Iptc4xmpExt:DigitalSourceType>"))
    }
}

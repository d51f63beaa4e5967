import Foundation
import ImagePipe
import Testing

/// The facts as records and object metadata hold them: read back as written, and refused whole in
/// any shape a record could not hold, since a store's metadata can be edited by anyone who can
/// write the object.
@Suite struct ImageFactsTests {
    static let facts = ImageFacts(
        pdq: ImageFacts.PDQ(hash: "6773ac04b91ca3cfcb1b0b66ea42684c42d9f39386938526e48e6d263b6dd2db", quality: 100),
        palette: [ImageFacts.Colour(color: "#9fbee6", share: 0.114), ImageFacts.Colour(color: "#5a6c7b", share: 0.109)],
        provenance: ImageFacts.Provenance(c2pa: true, digitalSourceType: "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"))

    @Test func anOriginsFactsTravelInObjectMetadataAndReadBack() throws {
        let origin = Origin(
            sha256: String(repeating: "a", count: 64), source: "trip/beach.jpg",
            image: Origin.Image(width: 1800, height: 1200, format: .jpeg, facts: Self.facts))
        let fields = origin.metadataFields
        let value = try #require(fields["imagepipe-facts"])
        #expect(value.utf8.count < 300 && value.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "short, printable ASCII: \(value)")
        #expect(Origin(metadataFields: fields)?.image?.facts == Self.facts)
        // And in the JSON a local file's origin is kept as.
        let json = try JSONEncoder().encode(origin)
        #expect(try JSONDecoder().decode(Origin.self, from: json).image?.facts == Self.facts)
    }

    /// A hand-edited record (a manifest, a local output's origin, a database row) keeps its facts'
    /// parts that have their shape and loses the others, and stays readable.
    @Test func aRecordsFactsOfAnotherShapeAreLeftOutAndTheRecordIsKept() throws {
        let record = String(decoding: try JSONEncoder().encode(JobResult(source: "a.jpg", status: .done)), as: UTF8.self)
        let line =
            "{" + ##""facts":{"pdq":{"hash":"not hex <script>","quality":-5},"palette":[{"color":"#ffffff","share":1e300}],"##
            + ##""provenance":{"c2pa":true,"digital_source_type":"http://x/\u001b[2J"}},"## + record.dropFirst()
        let result = try JSONDecoder().decode(JobResult.self, from: Data(line.utf8))
        #expect(result.source == "a.jpg")
        #expect(result.facts == ImageFacts())
        let kept = try JSONDecoder().decode(ImageFacts.self, from: JSONEncoder().encode(Self.facts))
        #expect(kept == Self.facts)
        let partly = #"{"pdq":{"hash":"\#(Self.facts.pdq!.hash)","quality":100},"palette":"red"}"#
        #expect(try JSONDecoder().decode(ImageFacts.self, from: Data(partly.utf8)) == ImageFacts(pdq: Self.facts.pdq))
    }

    /// A picture with no opaque pixel has an empty palette; its other facts still travel.
    @Test func anEmptyPaletteTravelsInObjectMetadataWithTheRest() {
        var facts = Self.facts
        facts.palette = []
        let read = ImageFacts(headerValue: facts.headerValue)
        #expect(read?.pdq == facts.pdq && read?.provenance == facts.provenance, "\(facts.headerValue)")
    }

    @Test func editedMetadataOfAnyOtherShapeGivesNoFacts() {
        for value in [
            "pdq=zz:100", "pdq=\(Self.facts.pdq!.hash):101", "palette=9fbee6:2", "palette=red:0.5", "palette=9fbee6:nan",
            "dst=%22onload%3D", "dst=" + String(repeating: "a", count: 300), "c2pa=1;dst=javascript", "pdq", "",
        ] {
            #expect(ImageFacts(headerValue: value) == nil, "\(value)")
        }
        // A part a later version writes is passed over.
        #expect(ImageFacts(headerValue: "c2pa=1;future=x")?.provenance == ImageFacts.Provenance(c2pa: true))
    }

    @Test func aGenerativeSourceTypeSaysAIMadeAndACapturedOneDoesNot() {
        let base = "http://cv.iptc.org/newscodes/digitalsourcetype/"
        for term in ["trainedAlgorithmicMedia", "compositeWithTrainedAlgorithmicMedia", "compositeSynthetic", "algorithmicMedia"] {
            #expect(ImageFacts.Provenance(c2pa: false, digitalSourceType: base + term).saysAIMade, "\(term)")
        }
        for term in ["digitalCapture", "negativeFilm", "minorHumanEdits", "compositeCapture"] {
            #expect(!ImageFacts.Provenance(c2pa: false, digitalSourceType: base + term).saysAIMade, "\(term)")
        }
        #expect(!ImageFacts.Provenance(c2pa: true).saysAIMade)
    }

    @Test func factKindsReadTheirNamesAndRefuseOthers() throws {
        #expect(try FactKinds(parsing: "all") == .all)
        #expect(try FactKinds(parsing: "none") == .none)
        #expect(try FactKinds(parsing: "pdq, provenance") == [.pdq, .provenance])
        #expect(try FactKinds(parsing: FactKinds([.palette, .pdq]).text) == [.palette, .pdq])
        #expect(throws: ImagePipeError.self) { try FactKinds(parsing: "pdq,exif") }
    }
}

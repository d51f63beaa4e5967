import Foundation
import ImagePipe
import Testing

/// The placeholder as records carry it: its data URI written with every result, made again from the
/// ThumbHash when read, and left out of an output's origin.
@Suite struct PlaceholderRecordTests {
    /// A landscape photo's ThumbHash, as imagepipe recorded it.
    let placeholder = Placeholder(thumbHash: "HtcJFYJrK2qvaIh7lYiGZrRAIg0F", color: "#96bae7")

    @Test func aResultRecordCarriesTheDataURIAndReadsBackTheSame() throws {
        var result = JobResult(source: "a.jpg", status: .done, width: 900, height: 600)
        result.placeholder = placeholder
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.jsonLine().utf8)) as? [String: Any])
        let recorded = try #require(object["placeholder"] as? [String: String])
        #expect(recorded["thumbhash"] == placeholder.thumbHash && recorded["color"] == placeholder.color)
        #expect(recorded["data_uri"] == placeholder.dataURI && recorded["data_uri"]?.hasPrefix("data:image/png;base64,") == true)
        #expect(try JSONDecoder().decode(JobResult.self, from: Data(result.jsonLine().utf8)).placeholder == placeholder)
    }

    /// A line written before the data URI existed reads as well, and its placeholder gives the
    /// same picture a new record carries.
    @Test func aRecordOfAnEarlierVersionGetsTheSamePicture() throws {
        var result = JobResult(source: "a.jpg", status: .done, width: 900, height: 600)
        result.placeholder = placeholder
        // The line as an earlier imagepipe wrote it: the placeholder's ThumbHash and colour alone.
        var object = try #require(try JSONSerialization.jsonObject(with: Data(result.jsonLine().utf8)) as? [String: Any])
        object["placeholder"] = ["thumbhash": placeholder.thumbHash, "color": placeholder.color]
        let read = try JSONDecoder().decode(JobResult.self, from: try JSONSerialization.data(withJSONObject: object))
        #expect(read.placeholder == placeholder)
        #expect(read.placeholder?.dataURI != nil && read.placeholder?.dataURI == placeholder.dataURI)
    }

    /// What a page gets is always the ThumbHash's picture, whatever a record edited by hand says.
    @Test func aRecordedDataURIIsNotTakenOnTrust() throws {
        let line = ##"{"color":"#96bae7","data_uri":"javascript:alert(1)","thumbhash":"HtcJFYJrK2qvaIh7lYiGZrRAIg0F"}"##
        #expect(try JSONDecoder().decode(Placeholder.self, from: Data(line.utf8)).dataURI == placeholder.dataURI)
    }

    /// A recorded colour reaches a page's CSS only when it is `#rrggbb`: a hand-edited one cannot add
    /// declarations of its own.
    @Test(arguments: ["#fff;background:url(https://x/)", "red", "#96bae", "#96bae7\"", "#96bag7", ""])
    func aRecordedColourThatIsNoColourIsNotPutInAPage(_ colour: String) throws {
        let line =
            #"{"color":"# + String(decoding: try JSONEncoder().encode(colour), as: UTF8.self) + #","thumbhash":"HtcJFYJrK2qvaIh7lYiGZrRAIg0F"}"#
        let read = try JSONDecoder().decode(Placeholder.self, from: Data(line.utf8))
        #expect(read.cssColor == nil, "\(colour)")
        #expect(placeholder.cssColor == "#96bae7" && Placeholder(thumbHash: "", color: "#96BAE7").cssColor == "#96BAE7")
    }

    /// A ThumbHash that cannot be read gives no picture, and its record no `data_uri`, instead of failing.
    @Test(arguments: ["", "AAAA", "not base64!", "HtcJFYJrK2qvaIh7", "HtcJEIJrK2qvaIh7lYiGZrRAIg0F"])
    func anUnreadableThumbHashGivesNoPicture(_ hash: String) throws {
        let broken = Placeholder(thumbHash: hash, color: "#000000")
        #expect(broken.dataURI == nil, "\(hash)")
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(broken)) as? [String: String])
        #expect(object["data_uri"] == nil && object["thumbhash"] == hash)
    }

    /// Every output of an original records it in its origin (an extended attribute read back from
    /// 4 KiB): the ThumbHash there is enough to make the picture again.
    @Test func anOutputsOriginRecordsTheThumbHashAlone() throws {
        let origin = Origin(
            sha256: String(repeating: "a", count: 64), source: "a.jpg", width: 450, height: 300, variant: "large=2048x2048,jpeg,q82",
            image: Origin.Image(width: 900, height: 600, format: .jpeg, placeholder: placeholder))
        let json = try JSONEncoder().encode(origin)
        #expect(!String(decoding: json, as: UTF8.self).contains("data_uri"))
        let read = try JSONDecoder().decode(Origin.self, from: json)
        #expect(read == origin && read.image?.placeholder?.dataURI == placeholder.dataURI)
    }
}

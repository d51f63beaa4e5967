// Fuzz targets for what object stores answer: S3's XML, listing pages, Supabase's JSON, encoded keys.
import Foundation
import ImagePipe
import ImagePipeRemoteStorage

enum RemoteTargets {
    /// Error bodies, the multipart answers (`UploadId`, an error inside a 200) and entity decoding.
    static func s3XML(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        _ = S3ErrorResponse.failure(status: 403, body: text)
        _ = S3ErrorResponse.embeddedError(HTTPResponse(status: 200, headers: [], body: data))
        _ = XMLText.first("UploadId", in: text)
        _ = XMLText.all("ETag", in: text)
        // What the multipart completion escapes reads back as it was.
        let escaped = XMLText.escape(text)
        require(XMLText.unescape(escaped) == text, "escaping does not read back")
        require(XMLText.first("ETag", in: "<ETag>\(escaped)</ETag>") == text, "an escaped element does not read back")
        // A DeleteObjects answer (prune): each key it says was not removed, the prefix taken off.
        if let failures = try? S3Storage.deleteFailures(text, bucket: "media", prefix: "web/") {
            require(failures.count == XMLText.elements("Error", in: text).count, "an <Error> lost")
            for failure in failures { require(!failure.reason.isEmpty, "a failure without a reason") }
        } else {
            require(!text.contains("<DeleteResult"), "a DeleteResult refused")
        }
    }

    /// A ListObjectsV2 page of a folder, as the S3 source lists it.
    static func s3Listing(_ data: Data) {
        let folder = ObjectLocation(scheme: "s3", bucket: "media", key: "orig/")
        guard let page = try? S3SourceRepository.listingPage(String(decoding: data, as: UTF8.self), in: folder) else { return }
        for object in page.objects {
            require(object.location.scheme == "s3" && object.location.bucket == "media", "listed \(object.location)")
        }
    }

    /// Supabase's list answers (a JSON array of entries) and its JSON error bodies.
    static func supabaseJSON(_ data: Data) {
        let folder = ObjectLocation(scheme: "supabase", bucket: "media", key: "orig/")
        let response = HTTPResponse(status: 200, headers: [], body: data)
        if let entries = SupabaseSourceRepository.entries(response) {
            let listed = SupabaseSourceRepository.listed(entries, prefix: "orig/", in: folder)
            // Compared as bytes: a name that starts with a combining mark joins the `/` in one character.
            let prefix = Array("orig/".utf8)
            // A folder is deeper than the one listed (`orig//` for an empty name), so none is listed twice.
            for key in listed.folders {
                require(key.utf8.starts(with: prefix) && key.utf8.count > 5 && key.utf8.last == UInt8(ascii: "/"), "folder key '\(key)'")
            }
            for object in listed.objects { require(object.location.key.utf8.starts(with: prefix), "object key '\(object.location.key)'") }
        }
        _ = SupabaseErrorResponse.failure(HTTPResponse(status: 400, headers: [], body: data))
        // An object-info answer (a prune's look-up, a source's size and ETag): a size is never negative.
        let info = SupabaseStorage.objectInfo(data)
        let existing = SupabaseStorage.existingObject(info: info, url: "https://example.test/o")
        require(existing.bytes >= 0 && (SupabaseStorage.size(inObjectInfo: info) ?? 0) >= 0, "a negative size from \(info)")
        // A bulk removal's answer: the names it lists, or none.
        _ = SupabaseStorage.removedNames(data)
    }

    /// Keys as listings send them (`encoding-type=url`), keys as requests encode them, and the origin
    /// a stored object's metadata headers carry.
    static func percentDecoding(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        _ = S3SourceRepository.urlDecoded(text)
        // Any key encoded for the wire decodes back to itself, spaces and plus signs included.
        let encoded = PercentEncoding.encode(text)
        require(S3SourceRepository.urlDecoded(encoded) == text, "'\(text)' encodes to '\(encoded)', which decodes otherwise")
        let path = PercentEncoding.encodePath(text)
        let slash = UInt8(ascii: "/")
        require(path.utf8.filter { $0 == slash }.count == text.utf8.filter { $0 == slash }.count, "'\(text)' has other slashes as '\(path)'")
        // Metadata headers: one `name: value` per line.
        var fields: [String: String] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = String(line[line.index(after: colon)...])
        }
        if let origin = Origin(metadataFields: fields) {
            require(origin.sha256.count == 64, "an origin without a full hash")
        }
        // An uploader's focal point (`x-amz-meta-focus`), read from any header's value: a crop of an
        // image (sizes taken from the input) is as near centred on it as the image's edges allow.
        let sizes = data.reduce(into: (7, 3)) { $0 = (($0.0 &* 31 &+ Int($1)) % 5000, ($0.1 &* 17 &+ Int($1)) % 5000) }
        let image = PixelSize(width: sizes.0 + 1, height: 4000), box = PixelSize(width: sizes.1 % (sizes.0 + 1) + 1, height: 10)
        for value in fields.values {
            guard let point = try? FetchedObject.focus(metadata: value) else { continue }
            let left = CropPlacement.offset(of: box, in: image, focus: point).left
            require((0...(image.width - box.width)).contains(left), "a crop at \(left) leaves the image for '\(value)'")
            // Off-centre by more than half a pixel only where an edge stops it.
            let offCentre = Double(left) + Double(box.width) / 2 - point.x * Double(image.width)
            require(
                abs(offCentre) <= 0.5 || (left == 0 && offCentre > 0) || (left == image.width - box.width && offCentre < 0),
                "a crop at \(left) of \(box) in \(image) is not centred on \(point) ('\(value)')")
        }
    }
}

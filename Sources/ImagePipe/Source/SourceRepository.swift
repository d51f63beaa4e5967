// The seam between the FileHandler and object stores that hold originals: list a folder, look an object up, read it.
public import Foundation

/// A place that holds sources under URLs: S3 buckets, Supabase Storage.
///
/// It sits beside the ``StorageRepository``: that one takes what imagepipe writes, this one gives
/// what a job reads when its source is `s3://BUCKET/KEY` or `supabase://BUCKET/KEY` instead of a
/// local file. Reads happen in the FileHandler's first stage, on the pipeline's I/O queue, so they
/// count against the pipeline's in-flight limit like local reads.
///
/// All methods block until done and are called from several threads at once.
public protocol SourceRepository: Sendable {
    /// The URL scheme it reads: `s3` or `supabase`.
    var scheme: String { get }

    /// Every object under `folder` (its key is empty or ends in `/`), in all its subfolders.
    ///
    /// - Throws: `configuration` naming the bucket and the reason when it cannot be listed (a
    ///   missing bucket, refused credentials, an unreachable store), so a batch stops before
    ///   anything is processed.
    func list(_ folder: ObjectLocation) throws(ImagePipeError) -> [ListedObject]

    /// The object at `location`, or nil when there is none; nothing is downloaded.
    ///
    /// - Throws: as ``read(_:maxBytes:)``.
    func info(_ location: ObjectLocation) throws(ImagePipeError) -> ListedObject?

    /// The object's bytes and ETag. An object declaring more than `maxBytes` is refused before its
    /// body is read, and one that turns out longer while it is read is abandoned.
    ///
    /// - Throws: `source_not_found` (404), `source_forbidden` (401, 403), `image_too_large` (over
    ///   `maxBytes`), `storage_unavailable` when retrying transient failures did not help,
    ///   `unreadable_source` for other refusals. Each reason names the object.
    func read(_ location: ObjectLocation, maxBytes: Int) throws(ImagePipeError) -> FetchedObject
}

/// An object found by listing a folder or looking up a key.
public struct ListedObject: Sendable, Hashable {
    /// Where it is.
    public var location: ObjectLocation
    /// Its size as the store reported it then; nil when not known.
    public var bytes: Int?
    /// Its ETag as the store reported it then, without quotes; nil when not known.
    public var etag: String?

    /// Creates a record of an object.
    public init(location: ObjectLocation, bytes: Int? = nil, etag: String? = nil) {
        self.location = location
        self.bytes = bytes
        self.etag = etag
    }
}

/// An object's content, read whole.
public struct FetchedObject: Sendable {
    /// The bytes.
    public var data: Data
    /// The ETag the store sent with them, without quotes.
    public var etag: String?
    /// The `focus` value the uploader stored in the object's metadata, as sent: read as a focal
    /// point (``focus(metadata:)``) only once the bytes are known to be an image and the job has no
    /// point of its own, which wins.
    public var focusMetadata: String?

    /// Creates a read object.
    public init(data: Data, etag: String?, focusMetadata: String? = nil) {
        self.data = data
        self.etag = etag
        self.focusMetadata = focusMetadata
    }

    /// The metadata key uploaders set to give an object's focal point, as `X,Y` fractions from the
    /// left and top (`aws s3 cp --metadata focus=0.3,0.6`; S3 sends it as `x-amz-meta-focus`).
    public static let focusMetadataKey = "focus"

    /// The focal point in a `focus` metadata value; nil without one.
    ///
    /// - Throws: `invalid_job_options` naming the value when it is not two fractions from 0 to 1:
    ///   an uploader's point that cannot be used fails the image rather than being passed over.
    public static func focus(metadata value: String?) throws(ImagePipeError) -> FocalPoint? {
        guard let value else { return nil }
        guard let point = FocalPoint(parsing: value.trimmingCharacters(in: .whitespaces)) else {
            throw ImagePipeError(
                .invalidJobOptions, "the object's metadata \(focusMetadataKey)='\(value)' is no focal point: give X,Y, two fractions from 0 to 1")
        }
        return point
    }

    /// An ETag header value without its quotes (and without the `W/` of a weak one).
    public static func unquoted(_ etag: String?) -> String? {
        guard var value = etag?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if value.hasPrefix("W/") { value.removeFirst(2) }
        if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
        return value
    }
}

extension ImagePipeError {
    /// A source in object storage larger than the limit, refused without reading its body.
    ///
    /// - Parameter bytes: its size as declared (listing, HEAD or the GET's Content-Length); nil
    ///   when it declared none and only turned out too long while being read.
    public static func sourceTooLarge(_ source: String, bytes: Int?, limit: Int) -> ImagePipeError {
        let size =
            bytes.map { "is \($0) bytes, more than the \(limit) bytes --max-source-bytes allows; it was not downloaded" }
            ?? "turned out longer than the \(limit) bytes --max-source-bytes allows while it was read; the read was abandoned"
        return ImagePipeError(.imageTooLarge, "\(source) \(size)")
    }
}

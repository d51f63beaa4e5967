// Listing the destination's keys (ListObjectsV2, paged) and removing them in batches (DeleteObjects) for `imagepipe prune`.
import Foundation
public import ImagePipe

extension S3Storage: PrunableStorage {
    /// The most keys one DeleteObjects request takes.
    public static let deleteBatchLimit = 1000

    /// Every key under the prefix, `pageSize` a page, the prefix taken off.
    public func allKeys(pageSize: Int) throws(ImagePipeError) -> [String] {
        let destination = configuration.destination
        let folder = ObjectLocation(scheme: "s3", bucket: destination.bucket, key: destination.prefix)
        let listed = try s3.listAll(
            folder, pageSize: pageSize, permissions: "list it (s3:ListBucket), read its objects and delete them")
        return listed.map { $0.location.key.afterPrefixBytes(destination.prefix) }
    }

    /// DeleteObjects, at most `batchSize` keys (and never more than 1000) a request, in quiet mode:
    /// the answer lists only the keys it did not remove, each with S3's code and message. A key XML
    /// cannot carry (a control character) is removed on its own.
    public func delete(_ keys: [String], batchSize: Int) throws(ImagePipeError) -> [KeyFailure] {
        let size = min(batchSize, Self.deleteBatchLimit)
        let (carried, single) = (keys.filter(Self.fitsXML), keys.filter { !Self.fitsXML($0) })
        return try KeyFailure.removingInBatches(carried, of: size, deleteBatch) + deleteOneByOne(single)
    }

    /// One DeleteObjects request, retried as a whole (removing a key twice is harmless).
    private func deleteBatch(_ keys: [String]) throws(ImagePipeError) -> [KeyFailure] {
        let prefix = configuration.destination.prefix
        let body = Data(
            ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>"
                + keys.map { "<Object><Key>\(XMLText.escape(prefix + $0))</Key></Object>" }.joined() + "</Delete>").utf8)
        // S3 requires an integrity header on DeleteObjects: Content-MD5 is the one every S3-compatible store takes.
        let headers = [("Content-MD5", Data(Digests.md5(body)).base64EncodedString()), ("Content-Type", "application/xml")]
        let bucket = configuration.destination.bucket
        let answer = try run("DeleteObjects of \(keys.count) keys under", prefix) { (_) throws(RequestFailure) in
            try s3.send(
                "POST", bucket: bucket, key: nil, query: [("delete", "")], headers: headers, body: body,
                payloadHash: Digests.sha256(body).hexString
            ).text
        }
        return try Self.deleteFailures(answer, bucket: bucket, prefix: prefix)
    }

    /// The keys a DeleteObjects answer says were not removed, each with S3's code and message, the
    /// prefix taken off.
    ///
    /// - Throws: `storage_rejected` for a 200 whose body is no DeleteResult: it says nothing of which
    ///   keys went, and none is taken as gone.
    package static func deleteFailures(_ answer: String, bucket: String, prefix: String) throws(ImagePipeError) -> [KeyFailure] {
        guard answer.contains("<DeleteResult") else {
            throw ImagePipeError(
                .storageRejected, "DeleteObjects under s3://\(bucket)/\(prefix) answered without a DeleteResult: \(answer.prefix(200))")
        }
        return XMLText.elements("Error", in: answer).map { error in
            let key = XMLText.first("Key", in: error) ?? "?"
            let code = XMLText.first("Code", in: error) ?? "error"
            let message = XMLText.first("Message", in: error) ?? ""
            return KeyFailure(
                key: key.afterPrefixBytes(prefix),
                reason: "DeleteObjects refused s3://\(bucket)/\(key): \(code)\(message.isEmpty ? "" : " (\(message))")")
        }
    }

    /// Whether XML 1.0 can carry the key: no control characters but tab, line feed and carriage return
    /// (which an XML reader would turn into spaces or line feeds anyway, so those go alone too).
    private static func fitsXML(_ key: String) -> Bool {
        !key.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || (0xFFFE...0xFFFF).contains($0.value) }
    }
}

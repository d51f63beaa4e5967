// Multipart upload for large objects: create, upload parts with checksums, complete, or abort on failure.
import Foundation
import ImagePipe
import Logging

extension S3Storage {
    /// S3 allows at most this many parts.
    static let maxParts = 10_000

    /// Uploads `object` in parts; on any failure the upload is aborted so no parts stay billed.
    /// False when the object was to be new and the key was taken before the upload completed
    /// (`If-None-Match: *` on the completion).
    func putMultipart(_ object: StorageObject, key: String) throws(ImagePipeError) -> Bool {
        let body = object.body
        let partSize = max(configuration.partSize, (body.count + Self.maxParts - 1) / Self.maxParts)

        let created = try run("CreateMultipartUpload", key) { (_) throws(RequestFailure) in
            let response = try send("POST", key: key, query: [("uploads", "")], headers: objectHeaders(object))
            guard let uploadID = XMLText.first("UploadId", in: response.text), !uploadID.isEmpty else {
                throw S3ErrorResponse.embeddedError(response)
                    ?? .server(status: response.status, code: "MissingUploadId", message: "no UploadId in the answer", retryable: true)
            }
            return uploadID
        }

        do {
            var parts: [(number: Int, etag: String)] = []
            var digests: [UInt8] = []
            var offset = 0
            while offset < body.count {
                let number = parts.count + 1
                let range = (body.startIndex + offset)..<(body.startIndex + min(offset + partSize, body.count))
                // A slice shares the object's storage: the part is sent without copying.
                let part = body[range]
                let md5 = Digests.md5(part)
                let payloadHash = Digests.sha256(part).hexString
                let query: [(name: String, value: String)] = [("partNumber", String(number)), ("uploadId", created)]
                let etag = try run("UploadPart \(number) of", key) { (_) throws(RequestFailure) in
                    let response = try send(
                        "PUT", key: key, query: query,
                        headers: [("Content-MD5", Data(md5).base64EncodedString())],
                        body: part, payloadHash: payloadHash)
                    // Part ETags are not MD5s on every S3-compatible store, so parts rely on the
                    // store's Content-MD5 and SHA-256 checks alone.
                    guard let etag = response.header("ETag") else {
                        throw .server(status: response.status, code: "MissingETag", message: "no ETag for the part", retryable: true)
                    }
                    return etag
                }
                parts.append((number, etag))
                digests += md5
                offset += part.count
            }
            let completed = try complete(key: key, uploadID: created, parts: parts, digests: digests, ifAbsent: object.policy == .create)
            if !completed { abort(key: key, uploadID: created) }
            return completed
        } catch {
            abort(key: key, uploadID: created)
            throw error
        }
    }

    private func complete(
        key: String, uploadID: String, parts: [(number: Int, etag: String)], digests: [UInt8],
        ifAbsent: Bool
    ) throws(ImagePipeError) -> Bool {
        let xml =
            "<CompleteMultipartUpload>"
            + parts.map { "<Part><PartNumber>\($0.number)</PartNumber><ETag>\(XMLText.escape($0.etag))</ETag></Part>" }.joined()
            + "</CompleteMultipartUpload>"
        let body = Data(xml.utf8)
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "application/xml"), ("Content-MD5", Data(Digests.md5(body)).base64EncodedString()),
        ]
        if ifAbsent { headers.append(("If-None-Match", "*")) }
        // S3's ETag of a completed upload is the MD5 of the parts' MD5s and the part count.
        let expectedETag = "\(Digests.md5(digests).hexString)-\(parts.count)"
        var answerLost = false
        return try run("CompleteMultipartUpload", key) { (_) throws(RequestFailure) -> Bool in
            do throws(RequestFailure) {
                let response = try send(
                    "POST", key: key, query: [("uploadId", uploadID)], headers: headers,
                    body: body, payloadHash: Digests.sha256(body).hexString)
                // Completion can fail after S3 has already answered 200, with the error in the body.
                if let failure = S3ErrorResponse.embeddedError(response) { throw failure }
                return true
            } catch .server(412, _, _, _) where ifAbsent && !answerLost {
                return false
            } catch .server(404, "NoSuchUpload", let message, let retryable) where answerLost {
                // An earlier attempt may have completed the upload and lost only its answer.
                guard completedObjectMatches(key: key, expectedETag: expectedETag) else {
                    throw .server(status: 404, code: "NoSuchUpload", message: message, retryable: retryable)
                }
                return true
            } catch {
                if case .transport = error { answerLost = true }
                throw error
            }
        }
    }

    private func completedObjectMatches(key: String, expectedETag: String) -> Bool {
        guard let response = try? send("HEAD", key: key), let etag = response.header("ETag") else { return false }
        return etag.trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased() == expectedETag
    }

    /// Aborts an upload, retrying like any request; a failure is logged, not thrown, as the put has failed already.
    func abort(key: String, uploadID: String) {
        do {
            try run("AbortMultipartUpload", key) { (_) throws(RequestFailure) in
                _ = try send("DELETE", key: key, query: [("uploadId", uploadID)])
            }
        } catch {
            logger.error(
                "a multipart upload is left behind; a lifecycle rule with AbortIncompleteMultipartUpload removes such parts",
                metadata: ["key": "s3://\(configuration.destination.bucket)/\(key)", "upload_id": "\(uploadID)", "error": "\(error.reason)"])
        }
    }
}

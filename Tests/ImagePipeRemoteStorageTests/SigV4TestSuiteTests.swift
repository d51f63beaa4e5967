import Foundation
import ImagePipeTestSupport
import ImagePipeRemoteStorage
import Testing
import ImagePipe

/// The signer against AWS's published Signature Version 4 test suite (fixtures/aws-sigv4-test-suite),
/// and S3's own canonicalisation rules, which differ from the generic ones the suite checks.
@Suite(.offThePool) struct SigV4TestSuiteTests {
    static let suite = Fixtures.root + "/aws-sigv4-test-suite"
    static let credentials = AWSCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    static let token =
        "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="
    /// 2015-08-30T12:36:00Z, the date of every vector.
    static let date = Date(timeIntervalSince1970: 1_440_938_160)

    /// Every vector: the folders holding a `.req` file.
    static let vectors: [String] = {
        let enumerator = FileManager.default.enumerator(atPath: suite)
        var names: [String] = []
        while let item = enumerator?.nextObject() as? String {
            if item.hasSuffix(".req") { names.append(String(item.dropLast(4))) }
        }
        return names.sorted()
    }()

    @Test func theWholeSuiteIsThere() {
        #expect(Self.vectors.count == 31)
    }

    @Test(arguments: vectors)
    func matchesTheVector(_ vector: String) throws {
        func read(_ ext: String) throws -> String { try String(contentsOfFile: "\(Self.suite)/\(vector).\(ext)", encoding: .utf8) }
        var request = try Self.parse(read("req"))
        let name = vector.split(separator: "/").last.map(String.init) ?? vector
        let credentials =
            name.hasPrefix("post-sts-")
            ? AWSCredentials(accessKeyID: Self.credentials.accessKeyID, secretAccessKey: Self.credentials.secretAccessKey, sessionToken: Self.token)
            : Self.credentials
        let signer = SigV4Signer(
            credentials: credentials, region: "us-east-1", service: "service", pathRule: .normalized,
            tokenPlacement: name == "post-sts-header-after" ? .afterSigning : .signed)
        var unsigned = request
        let signature = signer.sign(&request, at: Self.date)
        let creq = try read("creq"), sts = try read("sts")
        #expect(signature.canonicalRequest == creq)
        #expect(request.headers.last?.value == signature.authorization)

        switch name {
        case "post-x-www-form-urlencoded":
            // Its .creq signs the Content-Length of its .req, but its .sts and .authz were made without it.
            unsigned.headers.removeAll { $0.name == "Content-Length" }
            let withoutLength = signer.sign(&unsigned, at: Self.date)
            #expect(withoutLength.stringToSign == sts)
            #expect(withoutLength.authorization == (try read("authz")).trimmingCharacters(in: .newlines))
        case "post-x-www-form-urlencoded-parameters":
            // Its .sts does not carry the hash of its own .creq, so only the canonical request can be checked.
            #expect(!sts.hasSuffix(Digests.sha256(Array(creq.utf8)).hexString), "the published vector was fixed: check it whole")
        default:
            #expect(signature.stringToSign == sts)
            #expect(signature.authorization == (try read("authz")).trimmingCharacters(in: .newlines))
        }
    }

    /// Parses a `.req` file: request line, headers (indented lines continue the previous header as
    /// another value), blank line, body.
    static func parse(_ text: String) throws -> SigV4Signer.Request {
        let (head, body) = text.range(of: "\n\n").map { (String(text[..<$0.lowerBound]), String(text[$0.upperBound...])) } ?? (text, "")
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let requestLine = lines.removeFirst()
        let method = String(requestLine.prefix { $0 != " " })
        let target = String(requestLine.dropFirst(method.count + 1).dropLast(" HTTP/1.1".count))
        let path = String(target.prefix { $0 != "?" })
        let query: [(name: String, value: String)] = target.dropFirst(path.count + 1).split(separator: "&").map { pair in
            let name = pair.prefix { $0 != "=" }
            return (String(name), String(pair.dropFirst(name.count + 1)))
        }
        var headers: [(name: String, value: String)] = []
        for line in lines where !line.isEmpty {
            if line.first == " " || line.first == "\t", let last = headers.last {
                headers.append((last.name, line.trimmingCharacters(in: .whitespaces)))
            } else {
                let name = line.prefix { $0 != ":" }
                headers.append((String(name), String(line.dropFirst(name.count + 1))))
            }
        }
        return SigV4Signer.Request(
            method: method, path: path, query: query, headers: headers,
            payloadHash: Digests.sha256(Array(body.utf8)).hexString)
    }

    // MARK: S3's rules

    let s3 = SigV4Signer(credentials: credentials, region: "us-east-1", service: "s3")

    @Test func s3PathsAreEncodedOnceAndNeverNormalised() {
        #expect(s3.canonicalPath("/bucket/Été 2024/a+b (1)!.jpg") == "/bucket/%C3%89t%C3%A9%202024/a%2Bb%20%281%29%21.jpg")
        #expect(s3.canonicalPath("/bucket/a//b/./c/../d~_-.png") == "/bucket/a//b/./c/../d~_-.png")
        // The same encoder builds the URL on the wire, so what is signed is what is sent.
        #expect(PercentEncoding.encodePath("/bucket/Été 2024/a+b (1)!.jpg") == s3.canonicalPath("/bucket/Été 2024/a+b (1)!.jpg"))
        #expect(SigV4Signer.canonicalQuery([("uploadId", "a+b/c="), ("partNumber", "2")]) == "partNumber=2&uploadId=a%2Bb%2Fc%3D")
    }

    @Test func s3SignsThePayloadHashHeaderAndTheSessionToken() {
        let signer = SigV4Signer(
            credentials: AWSCredentials(accessKeyID: "AKID", secretAccessKey: "secret", sessionToken: "token"),
            region: "eu-west-1", service: "s3")
        var request = SigV4Signer.Request(
            method: "PUT", path: "/b/k",
            headers: [
                ("Host", "127.0.0.1:9000"), ("Content-Type", "image/webp"), ("x-amz-content-sha256", "abc"),
            ], payloadHash: "abc")
        let signature = signer.sign(&request, at: Self.date)
        #expect(signature.signedHeaders == "content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token")
        #expect(signature.canonicalRequest.hasSuffix("\nabc"))
        #expect(signature.authorization.hasPrefix("AWS4-HMAC-SHA256 Credential=AKID/20150830/eu-west-1/s3/aws4_request, "))
        #expect(!signature.authorization.contains("secret"))
    }

    /// The GET example from Amazon S3's SigV4 documentation (header-based authentication).
    @Test func s3DocumentationExample() {
        let signer = SigV4Signer(
            credentials: AWSCredentials(
                accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            region: "us-east-1", service: "s3")
        let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        var request = SigV4Signer.Request(
            method: "GET", path: "/test.txt",
            headers: [
                ("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"), ("x-amz-content-sha256", empty),
            ], payloadHash: empty)
        let signature = signer.sign(&request, at: Date(timeIntervalSince1970: 1_369_353_600))
        #expect(signature.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }
}

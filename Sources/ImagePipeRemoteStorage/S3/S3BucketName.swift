// S3's rules for bucket names, checked before anything is sent so a typo is a configuration error.
import ImagePipe

/// Validates bucket names by the rules of Amazon S3's general purpose buckets, which MinIO, R2 and
/// Ceph (in its default strict mode) follow too.
enum S3BucketName {
    /// Throws `configuration` with the rule a name breaks.
    static func validate(_ name: String) throws(ImagePipeError) {
        func bad(_ why: String) -> ImagePipeError {
            .configuration("invalid S3 bucket name '\(name)': \(why)")
        }
        guard (3...63).contains(name.count) else { throw bad("it must be 3 to 63 characters long") }
        guard name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-" || $0 == ".") }) else {
            throw bad("only lowercase letters, digits, '-' and '.' are allowed")
        }
        guard let first = name.first, let last = name.last, first.isLetter || first.isNumber, last.isLetter || last.isNumber else {
            throw bad("it must begin and end with a letter or digit")
        }
        guard !name.contains("..") else { throw bad("two periods may not be adjacent") }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4, parts.allSatisfy({ UInt8($0) != nil }) { throw bad("it must not look like an IP address") }
        for prefix in ["xn--", "sthree-", "amzn-s3-demo-"] where name.hasPrefix(prefix) {
            throw bad("the prefix '\(prefix)' is reserved")
        }
        for suffix in ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"] where name.hasSuffix(suffix) {
            throw bad("the suffix '\(suffix)' is reserved")
        }
    }
}

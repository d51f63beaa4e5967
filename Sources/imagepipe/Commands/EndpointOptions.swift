// Where an S3-compatible service is and which region signs for it: for destinations and sources alike.
import ArgumentParser

/// `--endpoint` and `--region`, shared by every command that reaches object storage, so each
/// resolves a bucket the same way.
struct EndpointOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "S3-compatible endpoint URL (MinIO, R2, Ceph, ...); addressed path-style. Default: AWS, or AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL.",
            valueName: "url"))
    var endpoint: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "S3 signing region. Default: AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else us-east-1.",
            valueName: "region"))
    var region: String?
}

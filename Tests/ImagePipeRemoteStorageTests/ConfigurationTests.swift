import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Testing

/// Destinations, the AWS environment and files, endpoints and URLs.
@Suite(.offThePool) struct ConfigurationTests {
    let directory = TemporaryDirectory()

    var isolated: [String: String] {
        ["HOME": directory.path]
    }

    @Test func environmentCredentialsWinOverTheProfile() throws {
        directory.write(".aws/credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n")
        let configuration = try S3Configuration.resolve(
            destination: "s3://photos/web/v2/", endpoint: nil, region: nil, publicBaseURL: nil,
            environment: isolated.merging([
                "AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "envsecret",
                "AWS_SESSION_TOKEN": "envtoken", "AWS_REGION": "eu-central-1",
            ]) { $1 })
        #expect(configuration.credentials == AWSCredentials(accessKeyID: "ENVKEY", secretAccessKey: "envsecret", sessionToken: "envtoken"))
        #expect(configuration.destination == (try RemoteDestination(bucket: "photos", prefix: "web/v2/")))
        #expect(configuration.region == "eu-central-1")
        #expect(configuration.addressing == .virtualHosted)
        #expect(configuration.objectURL(forKey: "web/v2/a b.jpg") == "https://photos.s3.eu-central-1.amazonaws.com/web/v2/a%20b.jpg")
        #expect(configuration.retry.maxAttempts == 3)
    }

    @Test func aNamedProfileFromTheSharedFiles() throws {
        directory.write(
            "creds",
            """
            [default]
            aws_access_key_id = DEFAULTKEY
            aws_secret_access_key = defaultsecret

            [media]
            # the upload user
            aws_access_key_id = MEDIAKEY
            aws_secret_access_key = mediasecret
            """)
        directory.write(
            "config",
            """
            [profile media]
            region = ap-southeast-2
            endpoint_url = https://minio.internal:9000/
            max_attempts = 5
            s3 =
              addressing_style = path
            """)
        let configuration = try S3Configuration.resolve(
            destination: "s3://bucket.with.dots", endpoint: nil, region: nil, publicBaseURL: nil,
            environment: isolated.merging([
                "AWS_PROFILE": "media", "AWS_SHARED_CREDENTIALS_FILE": directory.url("creds"),
                "AWS_CONFIG_FILE": directory.url("config"),
            ]) { $1 })
        #expect(configuration.credentials.accessKeyID == "MEDIAKEY")
        #expect(configuration.region == "ap-southeast-2")
        #expect(configuration.endpoint == ServiceEndpoint(scheme: "https", host: "minio.internal", port: 9000))
        #expect(configuration.addressing == .path)
        #expect(configuration.retry.maxAttempts == 5)
        #expect(configuration.retry.maxDelay == .seconds(20), "the standard mode's cap on backoff")
        #expect(configuration.destination.prefix == "")
        #expect(configuration.objectURL(forKey: "k.png") == "https://minio.internal:9000/bucket.with.dots/k.png")
    }

    @Test func flagsWinOverTheEnvironment() throws {
        let configuration = try S3Configuration.resolve(
            destination: "s3://b1b", endpoint: "http://[::1]:9000/storage/v1/s3", region: "auto",
            publicBaseURL: "https://cdn.example.com",
            environment: isolated.merging([
                "AWS_ACCESS_KEY_ID": "K", "AWS_SECRET_ACCESS_KEY": "S",
                "AWS_ENDPOINT_URL_S3": "http://ignored:1", "AWS_REGION": "us-west-2",
            ]) { $1 })
        #expect(configuration.region == "auto")
        #expect(configuration.endpoint.authority == "[::1]:9000")
        #expect(configuration.endpoint.basePath == "/storage/v1/s3")
        #expect(configuration.objectURL(forKey: "a.jpg") == "https://cdn.example.com/a.jpg")
        var direct = configuration
        direct.publicBaseURL = nil
        #expect(direct.objectURL(forKey: "a.jpg") == "http://[::1]:9000/storage/v1/s3/b1b/a.jpg")
    }

    @Test func awsEndpointsWithoutARegionDefaultToUsEast1() throws {
        let configuration = try S3Configuration.resolve(
            destination: "s3://b1b/p", endpoint: nil, region: nil, publicBaseURL: nil,
            environment: isolated.merging(["AWS_ACCESS_KEY_ID": "K", "AWS_SECRET_ACCESS_KEY": "S"]) { $1 })
        #expect(configuration.objectURL(forKey: "p/x.jpg") == "https://b1b.s3.us-east-1.amazonaws.com/p/x.jpg")
    }

    @Test(arguments: [
        ("s3://", "names no bucket"),
        ("s3://bad bucket/x", "invalid bucket name"),
        ("s3://ab", "3 to 63 characters"),
        ("s3://-bad", "begin and end with a letter or digit"),
        ("s3://Bad_Bucket", "only lowercase letters"),
        ("s3://a..b", "two periods"),
        ("s3://192.168.1.1", "IP address"),
        ("s3://xn--abc", "reserved"),
        ("s3://b1b/../x", "invalid prefix"),
        ("s3://b1b/a//b", "invalid prefix"),
        ("s3://b1b/x?y=1", "without a query"),
    ])
    func badDestinationsAreConfigurationErrors(_ destination: String, _ message: String) throws {
        let error = try #require(throws: ImagePipeError.self) {
            try S3Configuration.resolve(
                destination: destination, endpoint: nil, region: nil, publicBaseURL: nil,
                environment: isolated.merging(["AWS_ACCESS_KEY_ID": "K", "AWS_SECRET_ACCESS_KEY": "S"]) { $1 })
        }
        #expect(error.code == .configuration)
        #expect(error.reason.contains(message), "\(error.reason)")
    }

    @Test func missingOrBrokenSettingsAreConfigurationErrors() throws {
        func failure(_ environment: [String: String], endpoint: String? = nil, publicBaseURL: String? = nil) -> ImagePipeError? {
            do {
                _ = try S3Configuration.resolve(
                    destination: "s3://b1b", endpoint: endpoint, region: nil,
                    publicBaseURL: publicBaseURL, environment: isolated.merging(environment) { $1 })
                return nil
            } catch {
                return error
            }
        }
        #expect(failure([:])?.reason.contains("no AWS credentials") == true)
        #expect(failure(["AWS_ACCESS_KEY_ID": "K"])?.reason.contains("must be set together") == true)
        #expect(failure(["AWS_PROFILE": "nope"])?.reason.contains("profile 'nope' not found") == true)
        let both = ["AWS_ACCESS_KEY_ID": "K", "AWS_SECRET_ACCESS_KEY": "topsecret"]
        #expect(failure(both, endpoint: "ftp://x")?.reason.contains("--endpoint must be an http") == true)
        #expect(failure(both, endpoint: "https://user:pw@host")?.reason.contains("must not contain a user name") == true)
        #expect(failure(both, publicBaseURL: "cdn.example.com")?.code == .configuration)
        #expect(failure(both.merging(["AWS_MAX_ATTEMPTS": "0"]) { $1 })?.code == .configuration)
        #expect(failure(both, endpoint: "nonsense")?.reason.contains("topsecret") == false)
        // A file path set to something without end is read only to the 1 MiB limit.
        #expect(
            failure(both.merging(["AWS_CONFIG_FILE": "/dev/zero"]) { $1 })?.reason
                == "/dev/zero is longer than the 1048576 bytes an AWS config or credentials file may have")
    }

    @Test func supabaseSettingsComeFromTheEnvironment() throws {
        let configuration = try SupabaseConfiguration.resolve(
            destination: "supabase://avatars/users", publicBaseURL: nil,
            environment: ["SUPABASE_URL": "https://abc.supabase.co/", "SUPABASE_KEY": "k1", "SUPABASE_SERVICE_ROLE_KEY": "k2"])
        #expect(configuration.key == "k2", "the service role key wins")
        #expect(
            configuration.objectURL(forKey: "users/Été.png") == "https://abc.supabase.co/storage/v1/object/public/avatars/users/%C3%89t%C3%A9.png")
        #expect(!"\(configuration)".contains("k2"))

        for (environment, message) in [
            ([String: String](), "SUPABASE_URL is not set"),
            (["SUPABASE_URL": "https://abc.supabase.co"], "no Supabase key"),
            (["SUPABASE_URL": "abc", "SUPABASE_KEY": "k"], "SUPABASE_URL must be"),
        ] {
            let error = try #require(throws: ImagePipeError.self) {
                try SupabaseConfiguration.resolve(destination: "supabase://avatars", publicBaseURL: nil, environment: environment)
            }
            #expect(error.code == .configuration && error.reason.contains(message), "\(error.reason)")
        }
    }

    @Test func xmlAnswersAreReadWithEntities() {
        let xml = "<Error><Code>SignatureDoesNotMatch</Code><Message>a &lt;b&gt; &amp; &#39;c&#x27;</Message></Error>"
        #expect(XMLText.first("Code", in: xml) == "SignatureDoesNotMatch")
        #expect(XMLText.first("Message", in: xml) == "a <b> & 'c'")
        #expect(XMLText.first("UploadId", in: xml) == nil)
        #expect(XMLText.escape("\"e\"&<") == "&quot;e&quot;&amp;&lt;")
    }
}

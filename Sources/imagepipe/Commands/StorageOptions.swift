// Options naming where variants are stored and how objects are written there.
import ArgumentParser
import ImagePipe

/// The destination and its settings.
struct StorageOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where variants are stored: a directory path, file://, s3://BUCKET/PREFIX or supabase://BUCKET/PREFIX.",
            valueName: "dest"))
    var dest: String

    @OptionGroup var endpoints: EndpointOptions

    /// `--endpoint`, see ``EndpointOptions``.
    var endpoint: String? { endpoints.endpoint }
    /// `--region`, see ``EndpointOptions``.
    var region: String? { endpoints.region }

    @Option(
        name: .customLong("public-base-url"),
        help: ArgumentHelp(
            "Base of the URLs recorded for stored objects (e.g. a CDN); the object's key in the bucket is appended.",
            valueName: "url"))
    var publicBaseURL: String?

    @Option(name: .customLong("cache-control"), help: "Cache-Control stored with every object on HTTP object stores.")
    var cacheControl: String = "public, max-age=31536000, immutable"

    @Flag(
        name: .customLong("with-original"),
        help:
            "Also store the untouched original, keyed by --key with {variant} = original and {ext} = its own extension (its bytes' format's when its name has no image extension)."
    )
    var withOriginal = false
}

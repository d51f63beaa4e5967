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
            "Base of the URLs recorded for stored objects (a CDN, or the web server serving a local --dest); the object's key in the bucket or folder is appended.",
            valueName: "url"))
    var publicBaseURL: String?

    /// Nil when not given: the value then follows the key template (``CacheControl/default(for:)``),
    /// so it is resolved where the template is known.
    @Option(
        name: .customLong("cache-control"),
        help: ArgumentHelp(
            "Cache-Control stored with every object on S3 and Supabase (default: '\(CacheControl.immutable)' when --key has {hash} or {sha256}, else '\(CacheControl.revalidating)').",
            valueName: "value"))
    var cacheControl: String?

    @Flag(
        name: .customLong("with-original"),
        help:
            "Also store the untouched original, keyed by --key with {variant} = original and {ext} = its own extension (its bytes' format's when its name has no image extension)."
    )
    var withOriginal = false
}

// Options naming where variants are stored and how objects are written there.
import ArgumentParser
import ImagePipe

/// The destination and its settings.
struct StorageOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Where variants are stored: a directory path or file:// URL.", valueName: "dest"))
    var dest: String

    @Option(name: .customLong("cache-control"), help: "Cache-Control stored with every object on HTTP object stores.")
    var cacheControl: String = "public, max-age=31536000, immutable"

    @Flag(name: .customLong("with-original"), help: "Also store the untouched original under {dir}/{stem}.{original extension}.")
    var withOriginal = false
}

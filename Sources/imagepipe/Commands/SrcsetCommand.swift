// `imagepipe srcset`: per original in a manifest, a `<picture>` snippet with `srcset`s and its placeholder, or JSON.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeRemoteStorage

struct SrcsetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "srcset",
        abstract: "Print a <picture> element with srcsets and a placeholder for every original in a manifest.",
        discussion: """
            Reads a manifest written by `batch --manifest` (or the done/ records of a queue, one per line) and \
            prints, for each original done, a <picture> with a <source> per modern format (AVIF, WebP) and an \
            <img> in the fallback format, each with a srcset of the variants' URLs and widths. Variants cropped \
            to another aspect ratio (cover thumbnails) are left out of the srcsets. The placeholder is the \
            <img>'s background colour and its data-thumbhash attribute. With --json, one JSON object per \
            original (sources, candidates, crops, placeholder) for a template engine.
            Each URL is the one recorded for the variant: for S3 and Supabase, its public URL (--public-base-url \
            at batch time); for a local folder, a file:// URL no visitor can load. --base-url puts the variant's \
            key after a base of your choosing instead (the URL or path where the destination folder is served); \
            without it, variants in a local folder are reported on standard error.
            """)

    @Argument(help: "The manifest (JSON lines; '-' for standard input).")
    var manifest: String

    @Flag(help: "Print one JSON object per line instead of HTML.")
    var json = false

    @Option(help: "The sizes attribute.")
    var sizes: String = "100vw"

    @Option(
        name: .customLong("base-url"),
        help: ArgumentHelp(
            "Where the destination is served (https://cdn.example.com/images, or /images): each URL becomes it, "
                + "a slash and the variant's key. Without it, the URLs recorded in the manifest.",
            valueName: "url"))
    var baseURL: String?

    func run() throws {
        var localURLs = 0
        for var result in try ManifestReader.read(manifest) {
            if let baseURL {
                for index in result.variants.indices {
                    result.variants[index].url = RemoteDestination.publicURL(base: baseURL, key: result.variants[index].key)
                }
            }
            guard let markup = PictureMarkup(result) else { continue }
            localURLs += result.variants.filter { $0.url.hasPrefix("file:") || $0.url.hasPrefix("/") }.count
            if json {
                print(JSONLine.encode(markup))
            } else {
                print("<!-- \(PictureMarkup.escape(markup.source).replacingOccurrences(of: "--", with: "&#45;&#45;")) -->")
                print(markup.html(sizes: sizes, alt: ""))
            }
        }
        // A local destination records file:// URLs: fine to look at, useless on a web page. Said once,
        // on standard error, so the markup on standard output stays as it is.
        if baseURL == nil, localURLs > 0 {
            FileHandle.standardError.write(
                Data(
                    ("imagepipe srcset: note: the variants are in a local folder, so their URLs are file:// URLs a visitor's "
                        + "browser cannot load; give --base-url with where that folder is served (--base-url /images or "
                        + "--base-url https://cdn.example.com/images)\n").utf8))
        }
    }
}

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
            prints, for each original done or up to date, a <picture> with a <source> per modern format (JPEG XL, AVIF, WebP) and an \
            <img> in the fallback format, each with a srcset of the variants' URLs and widths; a <source> also \
            offers the widths only later formats have, so no browser gets a smaller image for taking a newer \
            format. A line that is not a manifest record is an error naming it, and so is a manifest with no \
            image to show (exit status 2). Variants cropped \
            to another aspect ratio (cover thumbnails) are left out of the srcsets. The placeholder is the \
            <img>'s background: its colour and, for an opaque original, a tiny blurred picture as a data: URI \
            (shown with no script), with the ThumbHash in data-thumbhash. Every <img> loads lazily but the \
            first --eager ones, loaded at once and first (the picture that is the page's largest paint). \
            With --json, one JSON object per original (sources, candidates, crops, placeholder with its \
            data_uri, eager) for a template engine.
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

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "How many pictures, from the first, load at once with high priority (loading=\"eager\" "
                + "fetchpriority=\"high\"), for the one that is the page's largest paint; the others load lazily.",
            valueName: "n"))
    var eager = 0

    func validate() throws {
        guard eager >= 0 else {
            throw ValidationError("--eager cannot be negative (got \(eager)): it counts the pictures, from the first, that load at once")
        }
    }

    func run() throws {
        var results = try ManifestReader.read(manifest)
        if let baseURL {
            for resultIndex in results.indices {
                for index in results[resultIndex].variants.indices {
                    let key = results[resultIndex].variants[index].key
                    results[resultIndex].variants[index].url = RemoteDestination.publicURL(base: baseURL, key: key)
                }
            }
        }
        var pictures = results.compactMap(PictureMarkup.init)
        for index in pictures.indices.prefix(eager) { pictures[index].eager = true }
        // Printing nothing with exit 0 would look like a page with no images to fill.
        if pictures.isEmpty { throw ManifestContents(results: results, name: manifest == "-" ? "standard input" : manifest).nothingToShow }
        let localURLs = results.reduce(0) { count, result in
            count + result.variants.filter { $0.url.hasPrefix("file:") || $0.url.hasPrefix("/") }.count
        }
        for markup in pictures {
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

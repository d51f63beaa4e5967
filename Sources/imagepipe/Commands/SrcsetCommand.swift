// `imagepipe srcset`: per original in a manifest, a `<picture>` snippet with `srcset`s and its placeholder, or JSON.
import ArgumentParser
import Foundation
import ImagePipe

struct SrcsetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "srcset",
        abstract: "Print a <picture> element with srcsets and a placeholder for every original in a manifest.",
        discussion: """
            Reads a manifest written by `batch --manifest` (or the done/ records of a queue, one per line) and \
            prints, for each original done or up to date, a <picture> with a <source> per modern format (AVIF, WebP) and an \
            <img> in the fallback format, each with a srcset of the variants' URLs and widths; a <source> also \
            offers the widths only later formats have, so no browser gets a smaller image for taking a newer \
            format. A line that is not a manifest record is an error naming it, and so is a manifest with no \
            image to show (exit status 2). Variants cropped \
            to another aspect ratio (cover thumbnails) are left out of the srcsets. The placeholder is the \
            <img>'s background colour and its data-thumbhash attribute. With --json, one JSON object per \
            original (sources, candidates, crops, placeholder) for a template engine.
            """)

    @Argument(help: "The manifest (JSON lines; '-' for standard input).")
    var manifest: String

    @Flag(help: "Print one JSON object per line instead of HTML.")
    var json = false

    @Option(help: "The sizes attribute.")
    var sizes: String = "100vw"

    func run() throws {
        let results = try ManifestReader.read(manifest)
        let pictures = results.compactMap(PictureMarkup.init)
        // Printing nothing with exit 0 would look like a page with no images to fill.
        if pictures.isEmpty { throw ManifestContents(results: results, name: manifest == "-" ? "standard input" : manifest).nothingToShow }
        for markup in pictures {
            if json {
                print(JSONLine.encode(markup))
            } else {
                print("<!-- \(PictureMarkup.escape(markup.source).replacingOccurrences(of: "--", with: "&#45;&#45;")) -->")
                print(markup.html(sizes: sizes, alt: ""))
            }
        }
    }
}

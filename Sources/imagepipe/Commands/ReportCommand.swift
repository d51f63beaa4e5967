// `imagepipe report`: one self-contained HTML page about a manifest, to look at.
import ArgumentParser
import Foundation
import ImagePipe

struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write one self-contained HTML page about a manifest: totals, bytes per variant and format, images, failures.",
        discussion: """
            The page needs no network and no other file: styles and the chart are inline, and thumbnails \
            are embedded from variants stored in a local folder (file:// URLs, up to 256 kB each); images \
            stored elsewhere show their placeholder colour. Chosen qualities and scores appear when the \
            variants used `auto` (or --score). Originals a re-run found up to date are shown with the outputs \
            in place. A line that is not a manifest record is an error naming it, and so is an empty manifest.
            """)

    @Argument(help: "The manifest (JSON lines; '-' for standard input).")
    var manifest: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Where to write the page.", valueName: "file"))
    var output: String = "report.html"

    func run() throws {
        let results = try ManifestReader.read(manifest)
        if results.isEmpty { throw ManifestContents(results: results, name: manifest).nothingToShow }
        let page = ReportPage(results: results, title: manifest == "-" ? "standard input" : manifest, thumbnail: Self.inline)
        do {
            try Data(page.html.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            throw ImagePipeError.configuration("cannot write \(output): \(IOErrorText.reason(of: error))")
        }
        Console.shared.line("imagepipe: wrote \(output) (\(results.count) originals, \(page.shown.count) with their outputs)")
    }

    /// A local variant as a `data:` URL; nil for remote ones and large files.
    static func inline(_ variant: VariantRecord) -> String? {
        guard let url = URL(string: variant.url), url.isFileURL,
            let data = try? Data(contentsOf: url), data.count <= 256 << 10
        else { return nil }
        return "data:\(variant.format.contentType);base64,\(data.base64EncodedString())"
    }
}

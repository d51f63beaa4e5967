// A `<picture>` element with `srcset`s for one original's variants, or the same as data for a template engine.
import ImagePipe
import Foundation

/// What a page needs to show one original responsively: its variants grouped by format, widest
/// last, and its placeholder.
///
/// Only variants with the original's aspect ratio (within 1%) go into the `srcset`s: a browser picks
/// any of them for the same box, so a square `cover` thumbnail among them would crop the picture at
/// some widths. Such crops are listed apart (``crops``) for pages that show them on purpose.
struct PictureMarkup: Sendable, Codable, Equatable {
    /// One candidate image.
    struct Candidate: Sendable, Codable, Equatable {
        var url: String
        var width: Int
        var height: Int
        var variant: String
    }

    /// The candidates of one format, narrowest first.
    struct Source: Sendable, Codable, Equatable {
        var format: OutputFormat
        var type: String
        var candidates: [Candidate]

        /// `url 320w, url 1024w`.
        var srcset: String { candidates.map { "\($0.url) \($0.width)w" }.joined(separator: ", ") }
    }

    /// The original's name.
    var source: String
    /// Its displayed size.
    var width: Int
    var height: Int
    /// Modern formats first (AVIF, WebP), the fallback (JPEG or PNG) last.
    var sources: [Source]
    /// Variants cropped to another aspect ratio.
    var crops: [Candidate]
    /// The placeholder, when the result has one.
    var placeholder: Placeholder?

    /// The markup of a done result; nil for failed and skipped ones, or one without variants.
    init?(_ result: JobResult) {
        guard result.status == .done, let width = result.width, let height = result.height, width > 0, height > 0,
            !result.variants.isEmpty
        else { return nil }
        source = result.source
        self.width = width
        self.height = height
        placeholder = result.placeholder
        let ratio = Double(width) / Double(height)
        var byFormat: [OutputFormat: [Candidate]] = [:]
        crops = []
        for variant in result.variants {
            let candidate = Candidate(url: variant.url, width: variant.width, height: variant.height, variant: variant.name)
            if abs(Double(variant.width) / Double(variant.height) / ratio - 1) <= 0.01 {
                byFormat[variant.format, default: []].append(candidate)
            } else {
                crops.append(candidate)
            }
        }
        let order: [OutputFormat] = [.avif, .webp, .jpeg, .png]
        sources = order.compactMap { format in
            byFormat[format].map { Source(format: format, type: format.contentType, candidates: $0.sorted { $0.width < $1.width }) }
        }
        if sources.isEmpty { return nil }
    }

    /// The HTML: a `<source>` per modern format and an `<img>` with the fallback format (the last
    /// source), its widest candidate as `src`, the original's size for layout, and the placeholder as
    /// the background colour and a `data-thumbhash` attribute for a script to paint.
    func html(sizes: String = "100vw", alt: String = "") -> String {
        let fallback = sources.last!
        var lines = ["<picture>"]
        for source in sources.dropLast() {
            lines.append("  <source type=\"\(source.type)\" srcset=\"\(Self.escape(source.srcset))\" sizes=\"\(Self.escape(sizes))\">")
        }
        var img =
            "  <img src=\"\(Self.escape(fallback.candidates.last!.url))\" srcset=\"\(Self.escape(fallback.srcset))\" "
            + "sizes=\"\(Self.escape(sizes))\" width=\"\(width)\" height=\"\(height)\" alt=\"\(Self.escape(alt))\" loading=\"lazy\" decoding=\"async\""
        if let placeholder {
            img += " style=\"background-color:\(placeholder.color)\" data-thumbhash=\"\(placeholder.thumbHash)\""
        }
        lines.append(img + ">")
        lines.append("</picture>")
        return lines.joined(separator: "\n")
    }

    /// Text escaped for an HTML attribute or element.
    static func escape(_ text: String) -> String { text.markupEscaped }
}

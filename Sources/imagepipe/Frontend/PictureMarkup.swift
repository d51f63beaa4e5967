// A `<picture>` element with `srcset`s for one original's variants, or the same as data for a template engine.
import ImagePipe
import Foundation

/// What a page needs to show one original responsively: its variants grouped by format, widest
/// last, and its placeholder.
///
/// Only variants with the original's aspect ratio (within 1%) go into the `srcset`s: a browser picks
/// any of them for the same box, so a square `cover` thumbnail among them would crop the picture at
/// some widths. Such crops are listed apart (``crops``) for pages that show them on purpose.
///
/// A `<source>` of a modern format offers every width the formats after it offer (down to the
/// fallback `<img>`), taking the others' file where it has none of that width: a browser that
/// takes WebP must never get a smaller picture than one that takes only JPEG. With the `web`
/// preset (`medium` 1024 px WebP, `large` 2048 px JPEG) the WebP source would otherwise stop at
/// 1024 px, and every WebP browser would show a wide or high-density screen a soft image.
struct PictureMarkup: Sendable, Codable, Equatable {
    /// One candidate image.
    struct Candidate: Sendable, Codable, Equatable {
        var url: String
        /// Its own format: another than its source's for a width taken from a later format.
        var format: OutputFormat
        var width: Int
        var height: Int
        var variant: String
    }

    /// The candidates of one format (with the widths it lacks from the formats after it), narrowest first.
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
    /// The original's main colours, most frequent first, with their shares (from its facts): for
    /// a template's card, border or text colour around the picture.
    var palette: [ImageFacts.Colour]?
    /// Whether the page loads it at once and first (`srcset --eager`); absent for the rest.
    var eager: Bool?

    /// The markup of a result whose outputs are stored (done, or up to date); nil for the rest.
    init?(_ result: JobResult) {
        guard result.showsOutputs, let width = result.width, let height = result.height else { return nil }
        source = result.source
        self.width = width
        self.height = height
        placeholder = result.placeholder
        palette = result.facts?.palette
        let ratio = Double(width) / Double(height)
        var byFormat: [OutputFormat: [Candidate]] = [:]
        crops = []
        for variant in result.variants {
            let candidate = Candidate(
                url: variant.url, format: variant.format, width: variant.width, height: variant.height, variant: variant.name)
            if abs(Double(variant.width) / Double(variant.height) / ratio - 1) <= 0.01 {
                byFormat[variant.format, default: []].append(candidate)
            } else {
                crops.append(candidate)
            }
        }
        let present = OutputFormat.srcsetOrder.filter { byFormat[$0] != nil }
        sources = present.enumerated().map { index, format in
            var candidates = byFormat[format]!
            // Widths this format lacks, from the most modern later format that has them.
            for later in present.dropFirst(index + 1) {
                let widths = Set(candidates.map(\.width))
                candidates += byFormat[later]!.filter { !widths.contains($0.width) }
            }
            return Source(format: format, type: format.contentType, candidates: candidates.sorted { $0.width < $1.width })
        }
        if sources.isEmpty { return nil }
    }

    /// The HTML: a `<source>` per modern format and an `<img>` with the fallback format (the last
    /// source), its widest candidate as `src`, the original's size for layout, loaded lazily unless
    /// ``eager``, and the placeholder as its background (the colour, and over it the ThumbHash's tiny
    /// picture stretched to the box, which shows with no script) and a `data-thumbhash` attribute.
    func html(sizes: String = "100vw", alt: String = "") -> String {
        let fallback = sources.last!
        var lines = ["<picture>"]
        for source in sources.dropLast() {
            lines.append("  <source type=\"\(source.type)\" srcset=\"\(Self.escape(source.srcset))\" sizes=\"\(Self.escape(sizes))\">")
        }
        var img =
            "  <img src=\"\(Self.escape(fallback.candidates.last!.url))\" srcset=\"\(Self.escape(fallback.srcset))\" "
            + "sizes=\"\(Self.escape(sizes))\" width=\"\(width)\" height=\"\(height)\" alt=\"\(Self.escape(alt))\" "
            // The picture that is the page's largest paint is asked for at once, before the others.
            + (eager == true ? "loading=\"eager\" fetchpriority=\"high\"" : "loading=\"lazy\"") + " decoding=\"async\""
        if let placeholder {
            var style = placeholder.cssColor.map { "background-color:\($0)" } ?? ""
            // The picture covers the whole original in the ThumbHash's approximate ratio: stretched to
            // the box, each blur lies under what replaces it. A transparent original would show it
            // through its clear parts once loaded, so it gets the colour alone.
            if placeholder.isOpaque, let picture = placeholder.dataURI {
                style += (style.isEmpty ? "" : ";") + "background-image:url(\(picture));background-size:100% 100%"
            }
            img += " style=\"\(Self.escape(style))\" data-thumbhash=\"\(Self.escape(placeholder.thumbHash))\""
        }
        lines.append(img + ">")
        lines.append("</picture>")
        return lines.joined(separator: "\n")
    }

    /// Text escaped for an HTML attribute or element.
    static func escape(_ text: String) -> String { text.markupEscaped }
}

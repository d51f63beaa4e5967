// One self-contained HTML page about a run: totals, bytes per variant and format, a chart, thumbnails, failures.
import ImagePipe
import Foundation

/// The page `imagepipe report` writes: no scripts, no fonts, no network — everything inline, so it
/// opens anywhere, from a CI artifact as well as a laptop.
struct ReportPage {
    /// Bytes of one group of outputs (a variant, or a format) against the originals they came from.
    struct Group: Sendable, Equatable {
        /// The variant name or the format.
        var name: String
        /// Outputs in the group.
        var count = 0
        /// Their bytes.
        var bytes = 0
        /// The bytes of the originals they were made from.
        var originalBytes = 0
        /// Qualities chosen per image, when `auto` chose them.
        var qualities: [Int] = []
        /// Their scores, when recorded.
        var scores: [Double] = []

        /// The share of the originals' bytes saved, 0…1 (negative when outputs are larger).
        var saved: Double { originalBytes > 0 ? 1 - Double(bytes) / Double(originalBytes) : 0 }
    }

    /// The results shown.
    let results: [JobResult]
    /// Where they came from, for the title.
    let title: String
    /// An inline image (a `data:` URL) for a stored variant, when it can be had without the network.
    let thumbnail: (VariantRecord) -> String?

    /// Creates a page; `thumbnail` gives inline images for variants (nil: the placeholder colour is shown).
    init(results: [JobResult], title: String, thumbnail: @escaping (VariantRecord) -> String? = { _ in nil }) {
        self.results = results
        self.title = title
        self.thumbnail = thumbnail
    }

    var done: [JobResult] { results.filter { $0.status == .done } }
    /// The originals whose outputs are stored: done in this run, or found up to date by it.
    var shown: [JobResult] { results.filter(\.showsOutputs) }
    var failed: [JobResult] { results.filter { $0.status == .failed } }
    var skipped: [JobResult] { results.filter { $0.status == .skipped } }

    /// Outputs grouped by variant name, in the order variants first appear.
    var byVariant: [Group] { groups { $0.name } }
    /// Outputs grouped by format.
    var byFormat: [Group] { groups { $0.format.rawValue } }

    private func groups(_ key: (VariantRecord) -> String) -> [Group] {
        var order: [String] = []
        var groups: [String: Group] = [:]
        for result in shown {
            for variant in result.variants {
                let name = key(variant)
                if groups[name] == nil {
                    order.append(name)
                    groups[name] = Group(name: name)
                }
                groups[name]!.count += 1
                groups[name]!.bytes += variant.bytes
                groups[name]!.originalBytes += result.bytes ?? 0
                if let quality = variant.encoding.quality { groups[name]!.qualities.append(quality) }
                if let score = variant.encoding.score { groups[name]!.scores.append(score) }
            }
        }
        return order.map { groups[$0]! }
    }

    /// The whole document.
    var html: String {
        let bytesIn = shown.reduce(0) { $0 + ($1.bytes ?? 0) }
        let bytesOut = shown.reduce(0) { $0 + $1.outputBytes }
        var page = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>imagepipe report: \(title.markupEscaped)</title>
            <style>\(Self.style)</style></head><body>
            <h1>imagepipe report</h1><p class="muted">\(title.markupEscaped)</p>
            <section class="totals" id="totals">
            <div><b>\(done.count)</b> done</div><div><b>\(failed.count)</b> failed</div><div><b>\(skipped.count)</b> skipped</div>
            <div><b>\(BatchSummary.formatBytes(bytesIn))</b> of originals</div>
            <div><b>\(BatchSummary.formatBytes(bytesOut))</b> of variants</div>
            </section>

            """
        page += table("Per variant", byVariant) + table("Per format", byFormat)
        page += chart(byVariant)
        page += grid()
        page += failures()
        page += "</body></html>\n"
        return page
    }

    private func table(_ heading: String, _ groups: [Group]) -> String {
        guard !groups.isEmpty else { return "" }
        let hasQuality = groups.contains { !$0.qualities.isEmpty || !$0.scores.isEmpty }
        var rows =
            "<h2>\(heading)</h2><table><tr><th></th><th>outputs</th><th>bytes</th><th>per image</th><th>of the originals</th>"
            + (hasQuality ? "<th>quality (min–max)</th><th>score (worst / median)</th>" : "") + "</tr>"
        for group in groups {
            rows +=
                "<tr><td>\(group.name.markupEscaped)</td><td>\(group.count)</td><td>\(BatchSummary.formatBytes(group.bytes))</td>"
                + "<td>\(BatchSummary.formatBytes(group.count > 0 ? group.bytes / group.count : 0))</td>"
                + "<td>\(String(format: "%.1f%% (saved %.1f%%)", 100 - group.saved * 100, group.saved * 100))</td>"
            if hasQuality {
                let qualities = group.qualities.isEmpty ? "–" : "\(group.qualities.min()!)–\(group.qualities.max()!)"
                let sorted = group.scores.sorted()
                let scores = sorted.isEmpty ? "–" : String(format: "%.1f / %.1f", sorted[0], sorted[sorted.count / 2])
                rows += "<td>\(qualities)</td><td>\(scores)</td>"
            }
            rows += "</tr>"
        }
        return rows + "</table>\n"
    }

    /// Horizontal bars: the originals' bytes, then each variant's.
    private func chart(_ groups: [Group]) -> String {
        guard let originals = groups.map(\.originalBytes).max(), originals > 0 else { return "" }
        let bars = [("originals", originals)] + groups.map { ($0.name, $0.bytes) }
        let largest = max(1, bars.map(\.1).max()!)
        let rowHeight = 26, labelWidth = 120, barWidth = 520
        var svg =
            "<h2>Output sizes</h2><svg role=\"img\" aria-label=\"bytes per variant\" width=\"\(labelWidth + barWidth + 110)\" "
            + "height=\(rowHeight * bars.count + 10)>"
        for (index, bar) in bars.enumerated() {
            let y = index * rowHeight + 5
            let width = max(1, barWidth * bar.1 / largest)
            svg +=
                "<text x=\"0\" y=\"\(y + 16)\">\(Self.label(bar.0, fitting: labelWidth))</text>"
                + "<rect x=\"\(labelWidth)\" y=\"\(y)\" width=\"\(width)\" height=\"20\" class=\"\(index == 0 ? "orig" : "bar")\"/>"
                + "<text x=\"\(labelWidth + width + 6)\" y=\"\(y + 16)\">\(BatchSummary.formatBytes(bar.1))</text>"
        }
        return svg + "</svg>\n"
    }

    /// A card per original shown: a thumbnail (or its placeholder colour), its size, each variant's.
    private func grid() -> String {
        guard !shown.isEmpty else { return "" }
        var cards = "<h2>Images</h2><div class=\"grid\">"
        for result in shown {
            let smallest = result.variants.min { $0.width * $0.height < $1.width * $1.height }
            let colour = result.placeholder?.cssColor ?? "#ddd"
            let image = smallest.flatMap(thumbnail).map { "<img src=\"\($0)\" alt=\"\">" } ?? ""
            cards +=
                "<figure><div class=\"thumb\" style=\"background:\(colour.markupEscaped)\">\(image)</div><figcaption>"
                + "<b class=\"name\" title=\"\(result.source.markupEscaped)\">\(result.source.markupEscaped)</b>\(result.width ?? 0)x\(result.height ?? 0) \((result.format?.rawValue ?? "").markupEscaped), "
                + "\(BatchSummary.formatBytes(result.bytes ?? 0))\(result.status == .skipped ? " (up to date)" : "")"
                + (result.gainMap.map { gainMap in
                    gainMap.carried
                        ? "<br>HDR gain map carried" + (gainMap.headroom.map { String(format: " (headroom %.2fx)", $0) } ?? "")
                        : "<br>HDR \([.pq, .hlg].contains(gainMap.kind) ? "(\(gainMap.kind.rawValue.uppercased()))" : "gain map") not carried: "
                            + (gainMap.reason ?? "").markupEscaped
                } ?? "") + Self.facts(result.facts) + "<ul>"
            for variant in result.variants {
                var line =
                    "\(variant.name.markupEscaped): \(variant.width)x\(variant.height) \(variant.format.rawValue), "
                    + BatchSummary.formatBytes(variant.bytes)
                if let quality = variant.encoding.quality { line += ", q\(quality)" }
                if let score = variant.encoding.score { line += String(format: ", score %.1f", score) }
                if let headroom = variant.encoding.hdrHeadroom { line += String(format: ", HDR %.2fx", headroom) }
                cards += "<li>\(line)</li>"
            }
            cards += "</ul></figcaption></figure>"
        }
        return cards + "</div>\n"
    }

    /// The original's palette as swatches (each with its colour and share as a tooltip), and what its
    /// provenance says: a label of AI-made content, Content Credentials. Every value was held to its
    /// shape when the helper's answer was read; escaped all the same, as a manifest can be edited.
    static func facts(_ facts: ImageFacts?) -> String {
        guard let facts else { return "" }
        var html = ""
        if let palette = facts.palette, !palette.isEmpty {
            html += "<br><span class=\"palette\" title=\"palette\">"
            for colour in palette where ImageFacts.isColour(colour.color) {
                // Held to 0–1 when read; bounded here too, as Int(_:) traps on what does not fit.
                let share = colour.share.isFinite ? Int((min(1, max(0, colour.share)) * 100).rounded()) : 0
                html +=
                    "<i style=\"background:\(colour.color);flex:\(max(1, share))\" title=\"\(colour.color) \(share)%\"></i>"
            }
            html += "</span>"
        }
        if let provenance = facts.provenance {
            // The IPTC term alone: the page names no address, even in a tooltip.
            let term = provenance.digitalSourceType.map { String($0.split(separator: "/").last ?? "").markupEscaped }
            if provenance.saysAIMade, let term {
                html += "<br><span class=\"mark ai\" title=\"IPTC digital source type\">AI-made: \(term)</span>"
            } else if let term {
                html += "<br><span class=\"mark\" title=\"IPTC digital source type\">source type: \(term)</span>"
            }
            if provenance.c2pa { html += "<br><span class=\"mark cr\">Content Credentials (not verified)</span>" }
        }
        return html
    }

    /// A chart's label, clipped with an ellipsis to what its column holds (12 px text: about 7 px a
    /// character) and whole in its tooltip: SVG text neither wraps nor clips, so a long variant name
    /// would run into its bar.
    static func label(_ name: String, fitting width: Int) -> String {
        let fits = max(2, (width - 8) / 7)
        guard name.count > fits else { return name.markupEscaped }
        return "<title>\(name.markupEscaped)</title>\(String(name.prefix(fits - 1)).markupEscaped)…"
    }

    private func failures() -> String {
        guard !failed.isEmpty else { return "" }
        var rows = "<h2>Failures</h2><table class=\"failures\"><tr><th>source</th><th>code</th><th>reason</th></tr>"
        for result in failed {
            rows +=
                "<tr><td>\(result.source.markupEscaped)</td><td>\(result.errorCode?.description ?? "")</td>"
                + "<td>\((result.error ?? "").markupEscaped)</td></tr>"
        }
        return rows + "</table>\n"
    }

    private static let style = """
        body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}h1{margin:0}.muted{color:#777}
        .totals{display:flex;gap:24px;margin:16px 0}.totals b{font-size:22px;display:block}
        table{border-collapse:collapse;margin:8px 0 16px}td,th{padding:4px 10px;border-bottom:1px solid #e4e4e4;text-align:left}
        .failures td:last-child{max-width:640px}svg text{font-size:12px}rect.bar{fill:#3b82c4}rect.orig{fill:#aaa}
        .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(220px,1fr));gap:14px}
        figure{margin:0;border:1px solid #e4e4e4;border-radius:6px;overflow:hidden}
        .thumb{height:140px;display:flex;align-items:center;justify-content:center}.thumb img{max-width:100%;max-height:140px}
        figcaption{padding:8px;font-size:12px}.name{display:block;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}ul{margin:4px 0 0;padding-left:16px}
        .palette{display:flex;height:12px;margin-top:4px;border-radius:3px;overflow:hidden}.palette i{display:block}
        .mark{display:inline-block;margin-top:3px;padding:0 5px;border-radius:3px;background:#eee}.mark.ai{background:#fde68a}.mark.cr{background:#dbeafe}
        """
}

// The options that lay a logo over the variants: the file, its position, margin, opacity and size.
import ArgumentParser
import ImagePipe

/// `--watermark FILE` and how it is drawn; each variant takes it unless it says `nowatermark`, at
/// its own size with `watermark=FRACTION`.
struct WatermarkOptions: ParsableArguments {
    @Option(
        name: .customLong("watermark"),
        help: ArgumentHelp(
            "Lay this logo (a PNG with alpha, or any image libvips reads) over every variant, after resizing and before encoding; "
                + "a variant option nowatermark leaves one without, watermark=FRACTION sets its size.",
            valueName: "file"))
    var file: String?

    @Option(
        name: .customLong("watermark-position"),
        help: ArgumentHelp("Where the logo sits: \(Watermark.positionNames) (default: southeast).", valueName: "position"))
    var position: String?

    @Option(
        name: .customLong("watermark-margin"),
        help: ArgumentHelp(
            "Pixels between the logo and the edges (default: 2% of the output's shorter side).", valueName: "pixels"))
    var margin: Int?

    @Option(
        name: .customLong("watermark-opacity"),
        help: ArgumentHelp("How much of the logo shows, 0 to 1 (default: 0.6).", valueName: "fraction"))
    var opacity: Double?

    @Option(
        name: .customLong("watermark-size"),
        help: ArgumentHelp("The logo's width as a fraction of the output's width; never enlarged (default: 0.2).", valueName: "fraction"))
    var size: Double?

    func validate() throws {
        do {
            try settings(logoSHA256: "").check()
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// The watermark these options draw with the logo whose bytes hash to `logoSHA256`.
    func settings(logoSHA256: String) throws(ImagePipeError) -> Watermark {
        let name = position ?? Watermark.defaultPosition.rawValue
        guard let position = CropPosition(option: name.lowercased()), !position.isSmart else {
            throw .configuration("--watermark-position must be one of \(Watermark.positionNames), not '\(name)'")
        }
        return Watermark(
            logoSHA256: logoSHA256, position: position, margin: margin, opacity: opacity ?? Watermark.defaultOpacity,
            size: size ?? Watermark.defaultSize)
    }

    /// Refuses watermark settings given without a logo to draw (`--watermark-opacity`, or a
    /// variant's `watermark=FRACTION`): a forgotten `--watermark` must not pass unseen. A
    /// variant's `nowatermark` says nothing is drawn, which holds without a logo too.
    func checkApplies(to variants: [VariantSpec]) throws(ImagePipeError) {
        guard file == nil else { return }
        var given: [String] = []
        if position != nil { given.append("--watermark-position") }
        if margin != nil { given.append("--watermark-margin") }
        if opacity != nil { given.append("--watermark-opacity") }
        if size != nil { given.append("--watermark-size") }
        for variant in variants {
            if case .size(let size) = variant.watermarkChoice { given.append("variant \(variant.name)'s watermark=\(size)") }
        }
        guard !given.isEmpty else { return }
        throw .configuration("\(given.joined(separator: ", ")) set a watermark, but there is no logo to draw: give --watermark FILE")
    }
}

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
        help: ArgumentHelp("Where the logo sits: \(Watermark.positionNames).", valueName: "position"))
    var position: String = Watermark.defaultPosition.rawValue

    @Option(
        name: .customLong("watermark-margin"),
        help: ArgumentHelp(
            "Pixels between the logo and the edges (default: 2% of the output's shorter side).", valueName: "pixels"))
    var margin: Int?

    @Option(
        name: .customLong("watermark-opacity"),
        help: ArgumentHelp("How much of the logo shows, 0 to 1.", valueName: "fraction"))
    var opacity: Double = Watermark.defaultOpacity

    @Option(
        name: .customLong("watermark-size"),
        help: ArgumentHelp("The logo's width as a fraction of the output's width; never enlarged.", valueName: "fraction"))
    var size: Double = Watermark.defaultSize

    func validate() throws {
        do {
            try settings(logoSHA256: "").check()
        } catch {
            throw ValidationError(error.reason)
        }
    }

    /// The watermark these options draw with the logo whose bytes hash to `logoSHA256`.
    func settings(logoSHA256: String) throws(ImagePipeError) -> Watermark {
        guard let position = CropPosition(option: position.lowercased()), !position.isSmart else {
            throw .configuration("--watermark-position must be one of \(Watermark.positionNames), not '\(position)'")
        }
        return Watermark(logoSHA256: logoSHA256, position: position, margin: margin, opacity: opacity, size: size)
    }
}

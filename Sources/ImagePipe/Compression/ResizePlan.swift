// The geometry of variants: output sizes, and the one decode size that serves them all.

/// A width and height in pixels.
public struct PixelSize: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// Creates a size.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Number of pixels.
    public var area: Int { width * height }

    public var description: String { "\(width)x\(height)" }
}

/// Where each variant's pixels come from: one decode at ``decodeSize``, then a resize per variant.
public struct ResizePlan: Sendable, Equatable {
    /// The source as displayed (after orientation).
    public let source: PixelSize
    /// The smallest size that still serves every variant (both sides at least what any variant
    /// needs); the source is decoded once at this size.
    public let decodeSize: PixelSize
    /// Whether ``decodeSize`` is reached by fitting the source's width to it (the height following
    /// from the aspect ratio), else its height.
    public let decodesByWidth: Bool
    /// The exact output size of each variant, in the order given.
    public let outputs: [PixelSize]

    /// Plans the variants for a source of the given displayed size.
    public init(source: PixelSize, variants: [VariantSpec]) {
        self.source = source
        let outputs = variants.map { ResizePlan.outputSize(source: source, variant: $0) }
        self.outputs = outputs
        let scales = zip(variants, outputs).map { ResizePlan.scale(source: source, output: $1, fit: $0.fit) }
        // Usually one `inside` variant is the largest and the others fit within it. Decoding straight
        // to its own size then makes it with no resize of its own: rounding a 6000x4000 photo's
        // 1365.33 px height up to 1366 once decoded it at 2049x1366, so the large variant was
        // resampled a second time, by a pixel, which cost a tenth of the batch's resampling.
        let largest = variants.indices.filter { variants[$0].fit == .inside }.max { scales[$0] < scales[$1] }
        if let largest, Self.serves(variants, outputs, scales, from: largest, source: source) {
            decodeSize = outputs[largest]
            decodesByWidth = Self.fitsByWidth(source, variants[largest].box)
        } else {
            // Otherwise one common scale, large enough for every variant, rounded up on both sides.
            let needed = Self.scaledUp(source, by: scales.max() ?? 1)
            // Fitting by the side with the larger scale keeps the other one at least as large too;
            // libvips rounds that other side, so the decode can be a few pixels larger than needed.
            decodesByWidth = Double(needed.width) / Double(source.width) >= Double(needed.height) / Double(source.height)
            decodeSize = Self.resized(source, to: needed, byWidth: decodesByWidth)
        }
    }

    /// Whether every other variant can be made from the variant at `largest`, decoded at its own
    /// size: it holds what each needs (a crop, the source at its scale rounded up), and each other
    /// fit comes out at its own size from it. A fit to the other side multiplies the decode's
    /// rounded short side: 12000x500 decoded at 2048x85 would make a 962x40 strip 964 px wide.
    private static func serves(
        _ variants: [VariantSpec], _ outputs: [PixelSize], _ scales: [Double], from largest: Int, source: PixelSize
    ) -> Bool {
        let decode = outputs[largest]
        return variants.indices.allSatisfy { index in
            guard index != largest else { return true }
            switch variants[index].fit {
            case .cover:
                return covers(decode, scaledUp(source, by: scales[index]))
            case .inside:
                let output = outputs[index]
                return covers(decode, output) && resized(decode, to: output, byWidth: fitsByWidth(source, variants[index].box)) == output
            }
        }
    }

    /// Whether the width limits fitting a source into `box`: the side with the smaller scale.
    public static func fitsByWidth(_ source: PixelSize, _ box: PixelSize) -> Bool {
        Double(box.width) / Double(source.width) <= Double(box.height) / Double(source.height)
    }

    /// The size libvips makes of `image` fitted to `target`'s width (`byWidth`) or height, the other
    /// side following the aspect ratio, rounded to nearest as libvips rounds (halves up).
    ///
    /// Computed in libvips' own steps, a shrink factor and then its inverse as the scale: on an exact
    /// half the two roundings part (3628x9977 fitted to 30 px wide is 82.5 px tall; libvips'
    /// `9977 × (1 / (3628 / 30))` is 82.49999999999999, so it makes 82).
    public static func resized(_ image: PixelSize, to target: PixelSize, byWidth: Bool) -> PixelSize {
        func scaled(_ side: Int, _ from: Int, _ to: Int) -> Int {
            max(1, Int((Double(side) * (1.0 / (Double(from) / Double(to)))).rounded(.toNearestOrAwayFromZero)))
        }
        if byWidth {
            return PixelSize(width: target.width, height: scaled(image.height, image.width, target.width))
        }
        return PixelSize(width: scaled(image.width, image.height, target.height), height: target.height)
    }

    /// The size at `scale`, each side rounded up, never larger than the size itself.
    static func scaledUp(_ size: PixelSize, by scale: Double) -> PixelSize {
        PixelSize(
            width: min(size.width, Int((Double(size.width) * scale - 1e-6).rounded(.up))),
            height: min(size.height, Int((Double(size.height) * scale - 1e-6).rounded(.up))))
    }

    static func covers(_ size: PixelSize, _ need: PixelSize) -> Bool {
        size.width >= need.width && size.height >= need.height
    }

    /// The output size of one variant: never larger than the source.
    ///
    /// `inside` fits the box. `cover` has the box's aspect ratio; when the source is smaller than the
    /// box, the box is scaled down until it fits the source (a 400x300 source in a 320x320 box gives 300x300).
    public static func outputSize(source: PixelSize, variant: VariantSpec) -> PixelSize {
        let sw = Double(source.width), sh = Double(source.height)
        let bw = Double(variant.width), bh = Double(variant.height)
        switch variant.fit {
        case .inside:
            // A shrink factor, then its inverse, as libvips computes it: on an exact half the other
            // way rounds apart (see ``resized(_:to:byWidth:)``). At an exact tie in exact arithmetic
            // (82.5 px) libvips' whole-factor shrink before its reduce decides the last pixel, either
            // way: the plan may be one pixel off along the other side there, and only there.
            let scale = 1 / max(1, sw / bw, sh / bh)
            return scaled(source, by: scale)
        case .cover:
            if source.width >= variant.width && source.height >= variant.height { return variant.box }
            let shrink = min(sw / bw, sh / bh)
            return PixelSize(
                width: max(1, min(source.width, Int((bw * shrink).rounded()))),
                height: max(1, min(source.height, Int((bh * shrink).rounded()))))
        }
    }

    /// Whether covering `output` is decided by the width: the side with the larger scale.
    public static func coversByWidth(_ image: PixelSize, _ output: PixelSize) -> Bool {
        Double(output.width) / Double(image.width) >= Double(output.height) / Double(image.height)
    }

    /// The size `image` is resized to before a `cover` crop to `output` is taken from it: its aspect
    /// ratio kept, one side `output`'s and the other at least as long (never larger than `image`).
    public static func coverSize(of image: PixelSize, for output: PixelSize) -> PixelSize {
        let fitted = resized(image, to: output, byWidth: coversByWidth(image, output))
        return PixelSize(
            width: min(image.width, max(output.width, fitted.width)), height: min(image.height, max(output.height, fitted.height)))
    }

    /// The scale from source to the resized image before any crop: large enough for both sides.
    static func scale(source: PixelSize, output: PixelSize, fit: Fit) -> Double {
        let x = Double(output.width) / Double(source.width)
        let y = Double(output.height) / Double(source.height)
        return min(1, max(x, y))
    }

    static func scaled(_ size: PixelSize, by scale: Double) -> PixelSize {
        PixelSize(
            width: max(1, Int((Double(size.width) * scale).rounded())),
            height: max(1, Int((Double(size.height) * scale).rounded())))
    }
}

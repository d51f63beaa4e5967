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
    /// The exact output size of each variant, in the order given.
    public let outputs: [PixelSize]

    /// Plans the variants for a source of the given displayed size.
    public init(source: PixelSize, variants: [VariantSpec]) {
        self.source = source
        self.outputs = variants.map { ResizePlan.outputSize(source: source, variant: $0) }
        let scale =
            zip(variants, outputs)
            .map { ResizePlan.scale(source: source, output: $1, fit: $0.fit) }
            .max() ?? 1
        // Rounded up, so that neither side ends up a pixel short of what a variant needs.
        self.decodeSize = PixelSize(
            width: min(source.width, Int((Double(source.width) * scale - 1e-6).rounded(.up))),
            height: min(source.height, Int((Double(source.height) * scale - 1e-6).rounded(.up))))
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
            let scale = min(1, bw / sw, bh / sh)
            return scaled(source, by: scale)
        case .cover:
            if source.width >= variant.width && source.height >= variant.height { return variant.box }
            let shrink = min(sw / bw, sh / bh)
            return PixelSize(
                width: max(1, min(source.width, Int((bw * shrink).rounded()))),
                height: max(1, min(source.height, Int((bh * shrink).rounded()))))
        }
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

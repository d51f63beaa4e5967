// Where a `cover` variant's crop is taken from: the centre, the most interesting part, or an edge or corner.

/// Which part of the image a `cover` crop keeps, once the image is scaled to fill the box.
///
/// The scaled image overflows the box on one side only (or matches it), so a position picks where
/// along that side the box sits: a compass point anchors the box to that edge or corner (`north`
/// keeps the top, centred across; `southwest` the bottom-left corner, which on a landscape photo
/// is its left edge); `attention` and `entropy` let libvips find the subject (its smartcrop: the
/// region richest in skin tones, saturated colour and edges, or in detail).
public enum CropPosition: String, Sendable, Hashable, Codable, CaseIterable {
    case centre
    case attention
    case entropy
    case north, northeast, east, southeast, south, southwest, west, northwest

    /// Reads a variant option: a position's name, or `center` for ``centre``.
    public init?(option: String) {
        if option == "center" {
            self = .centre
            return
        }
        self.init(rawValue: option)
    }

    /// Whether libvips chooses the crop by looking at the pixels.
    public var isSmart: Bool { self == .attention || self == .entropy }

    /// Where the box sits along each axis for a compass point or the centre: 0 at the left (top)
    /// edge, 0.5 centred, 1 at the right (bottom) edge. Nil for the smart positions.
    public var anchor: (x: Double, y: Double)? {
        switch self {
        case .centre: (0.5, 0.5)
        case .attention, .entropy: nil
        case .north: (0.5, 0)
        case .northeast: (1, 0)
        case .east: (1, 0.5)
        case .southeast: (1, 1)
        case .south: (0.5, 1)
        case .southwest: (0, 1)
        case .west: (0, 0.5)
        case .northwest: (0, 0)
        }
    }

    /// The names a variant accepts, for error messages.
    public static let names = allCases.map(\.rawValue).joined(separator: ", ")
}

/// A point of the image to keep in a `cover` crop, as fractions of its width and height (0 is the
/// left or top edge, 1 the right or bottom) of the image as displayed; it wins over the variant's
/// ``CropPosition``.
public struct FocalPoint: Sendable, Hashable, Codable {
    /// Across, 0–1.
    public var x: Double
    /// Down, 0–1.
    public var y: Double

    /// Creates a point; nil unless both are finite and within 0–1.
    public init?(x: Double, y: Double) {
        guard x.isFinite, y.isFinite, (0...1).contains(x), (0...1).contains(y) else { return nil }
        self.x = x
        self.y = y
    }

    /// Reads `X,Y`, e.g. `0.3,0.7`.
    public init?(parsing text: String) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 2, let x = Double(parts[0].trimmingCharacters(in: " ")),
            let y = Double(parts[1].trimmingCharacters(in: " "))
        else { return nil }
        self.init(x: x, y: y)
    }
}

/// Where a crop of `box` is taken from an `image` that covers it: the offset of its top-left corner.
public enum CropPlacement {
    /// The offset that puts `box` at `anchor` (fractions of the slack on each side, see
    /// ``CropPosition/anchor``).
    public static func offset(of box: PixelSize, in image: PixelSize, anchor: (x: Double, y: Double)) -> (left: Int, top: Int) {
        let slackX = max(0, image.width - box.width), slackY = max(0, image.height - box.height)
        return (Int((Double(slackX) * anchor.x).rounded()), Int((Double(slackY) * anchor.y).rounded()))
    }

    /// The offset that centres `box` on `focus`, moved only as far as needed to keep it inside the image.
    public static func offset(of box: PixelSize, in image: PixelSize, focus: FocalPoint) -> (left: Int, top: Int) {
        func along(_ side: Int, _ boxSide: Int, _ fraction: Double) -> Int {
            let wanted = Int((fraction * Double(side) - Double(boxSide) / 2).rounded())
            return min(max(0, wanted), max(0, side - boxSide))
        }
        return (along(image.width, box.width, focus.x), along(image.height, box.height, focus.y))
    }
}

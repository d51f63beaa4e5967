// Which facts the helper's analyses make of each original: `--facts all`, `none` or a list.
import Foundation

/// The analyses a run asks for (`--facts pdq,palette,provenance`, `all` by default, `none`). The
/// placeholder is not among them: it is made whenever an image is decoded, as before facts existed.
public struct FactKinds: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The PDQ perceptual hash (`imagepipe duplicates` groups by it).
    public static let pdq = FactKinds(rawValue: 1 << 0)
    /// Up to six main colours with their shares.
    public static let palette = FactKinds(rawValue: 1 << 1)
    /// Content Credentials and the IPTC digital source type.
    public static let provenance = FactKinds(rawValue: 1 << 2)

    public static let all: FactKinds = [.pdq, .palette, .provenance]
    public static let none: FactKinds = []

    /// The names, in the order the help gives them.
    public static let names: [(String, FactKinds)] = [("pdq", .pdq), ("palette", .palette), ("provenance", .provenance)]

    /// Whether any of them reads pixels (the provenance reads only the file).
    public var needsPixels: Bool { !isDisjoint(with: [.pdq, .palette]) }

    /// `all`, `none`, or names separated by commas; an error names what it cannot read.
    public init(parsing text: String) throws(ImagePipeError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if trimmed == "all" {
            self = .all
            return
        }
        if trimmed == "none" || trimmed.isEmpty {
            self = .none
            return
        }
        var kinds = FactKinds.none
        for part in trimmed.split(separator: ",") {
            let name = part.trimmingCharacters(in: .whitespaces)
            guard let kind = Self.names.first(where: { $0.0 == name })?.1 else {
                throw .configuration(
                    "unknown fact '\(name)' in --facts; use all, none, or some of \(Self.names.map(\.0).joined(separator: ", "))")
            }
            kinds.insert(kind)
        }
        self = kinds
    }

    /// The text ``init(parsing:)`` reads back.
    public var text: String {
        if self == .all { return "all" }
        if isEmpty { return "none" }
        return Self.names.filter { contains($0.1) }.map(\.0).joined(separator: ",")
    }
}

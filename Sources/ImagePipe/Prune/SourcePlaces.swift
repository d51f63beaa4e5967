// Where the sources of a prune lie, to tell an output made from them from one made from a folder beside them.
import Foundation

/// The folders, files and object URLs a prune is given, and whether an output's original lies among
/// them by the place it recorded (``Origin/location``).
///
/// An output records its original by a name relative to the folder its batch was given
/// (``Origin/source``), so `photos/a.jpg` of one folder and `a.jpg` of another are told apart only by
/// where they lie. Two folders often write under one prefix (`s3://media/photos`): without this, a
/// prune given one of them would take every output of the other for an orphan.
public struct SourcePlaces: Sendable {
    /// Where an output's original lies, against the sources given.
    public enum Placement: Sendable, Equatable {
        /// Under one of the sources (or one of them).
        case among
        /// Elsewhere, at this recorded location.
        case elsewhere(String)
        /// Not known: the output records no location (written before imagepipe recorded one), or
        /// one cut short (see ``Origin/recordedSourceLimit``) before the part that would tell.
        case unknown
    }

    // Each source as a path or URL, without a trailing slash (a bucket's root is `s3://bucket`).
    private let places: [String]

    /// The places of `inputs` as a batch or prune is given them: local paths made absolute (and
    /// with their links resolved as a second spelling, so `/srv/photos` given once as itself and
    /// once through a link still matches), object URLs as written.
    public init(inputs: [String]) {
        var places: [String] = []
        for input in inputs {
            if ObjectLocation.isURL(input) {
                guard let location = try? ObjectLocation(parsing: input) else { continue }
                var text = location.description
                while text.hasSuffix("/") { text.removeLast() }
                places.append(text)
                continue
            }
            let absolute = LocalPath.absolute(input)
            places.append(absolute)
            let resolved = URL(fileURLWithPath: absolute).resolvingSymlinksInPath().path
            if resolved != absolute { places.append(resolved) }
        }
        self.places = places
    }

    /// Where `origin`'s original lies. An object source recorded by an imagepipe that wrote no
    /// location still has its full URL as its name, which says where it lies.
    public func placement(of origin: Origin) -> Placement {
        let recorded: String
        if let location = origin.location {
            recorded = location
        } else if ObjectLocation.isURL(origin.source) {
            recorded = origin.source
        } else {
            return .unknown
        }
        let cut = recorded.count >= Origin.recordedSourceLimit
        for place in places {
            // `/` as a source holds every absolute path.
            let folder = place == "/" ? "/" : place + "/"
            if recorded == place || recorded.hasPrefix(folder) { return .among }
            // A location cut inside the place's own text could still lie under it.
            if cut, folder.hasPrefix(recorded) { return .unknown }
        }
        return .elsewhere(recorded)
    }
}

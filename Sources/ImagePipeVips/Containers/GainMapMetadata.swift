// How a gain map turns an SDR picture into its HDR rendition: the numbers Ultra HDR's XMP and ISO 21496-1 carry.
public import Foundation
import ImagePipe

/// A gain map's metadata in Ultra HDR's terms (Adobe's gain map specification, which `hdrgm` XMP
/// and ISO 21496-1 both express): per channel, the log2 boosts the map's 0 and 1 stand for, the
/// gamma it was encoded with and the offsets added to SDR and HDR; and the display headrooms (log2)
/// between which the map is applied in part. A display with headroom `h` shows
/// `HDR = (SDR + offsetSDR) · 2^(lerp(min, max, map^(1/gamma)) · weight(h)) − offsetHDR`.
public struct GainMapMetadata: Sendable, Hashable {
    /// One colour channel's numbers (a map of one channel has one, applied to all three).
    public struct Channel: Sendable, Hashable {
        /// log2 of the boost a map value of 0 stands for.
        public var gainMapMin: Double
        /// log2 of the boost a map value of 1 stands for.
        public var gainMapMax: Double
        /// The gamma the map's values were encoded with.
        public var gamma: Double
        /// Added to SDR before the boost, so black can be brightened.
        public var offsetSDR: Double
        /// Taken from the boosted value.
        public var offsetHDR: Double

        /// Creates a channel's numbers.
        public init(gainMapMin: Double, gainMapMax: Double, gamma: Double = 1, offsetSDR: Double = 1.0 / 64, offsetHDR: Double = 1.0 / 64) {
            self.gainMapMin = gainMapMin
            self.gainMapMax = gainMapMax
            self.gamma = gamma
            self.offsetSDR = offsetSDR
            self.offsetHDR = offsetHDR
        }
    }

    /// One channel, or three (red, green, blue).
    public var channels: [Channel]
    /// log2 of the display headroom below which the map is not applied at all.
    public var hdrCapacityMin: Double
    /// log2 of the display headroom from which the map is applied whole.
    public var hdrCapacityMax: Double

    /// Creates metadata.
    public init(channels: [Channel], hdrCapacityMin: Double = 0, hdrCapacityMax: Double) {
        self.channels = channels
        self.hdrCapacityMin = hdrCapacityMin
        self.hdrCapacityMax = hdrCapacityMax
    }

    /// The headroom the HDR rendition needs (a ratio to SDR white): what a display must offer to
    /// show all of it.
    public var headroom: Double { exp2(hdrCapacityMax) }

    /// The largest boost any channel reaches, as a ratio.
    public var maxBoost: Double { exp2(channels.map(\.gainMapMax).max() ?? 0) }

    /// The most stops a map may boost by, or a display's headroom be asked for: 8 (256 times SDR
    /// white), past every phone's and display's (phones write up to about 6). The record's bound
    /// (``GainMap/maxStops``), which the worker checks a helper's headroom against.
    public static let maxStops = GainMap.maxStops
    /// The smallest boost, and range of display headrooms, that means anything: a thousandth of a stop.
    public static let leastStops = 0.001
    /// The largest offset accepted: the specification's are small fractions of SDR white (1/64).
    public static let maxOffset = 1.0

    /// Why metadata is not used.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// In the manifest's words.
        public var description: String
        /// Creates a refusal.
        public init(_ description: String) { self.description = description }
    }

    /// This metadata if every number is one a gain map can mean: finite, the boosts within
    /// ``maxStops`` and ordered, a gamma above 0, offsets within ``maxOffset``, capacities ordered.
    /// A stranger's file says what it likes: nothing it says is used unchecked.
    public func validated() throws(Refusal) -> GainMapMetadata {
        guard channels.count == 1 || channels.count == 3 else { throw Refusal("the gain map metadata has \(channels.count) channels") }
        let numbers = channels.flatMap { [$0.gainMapMin, $0.gainMapMax, $0.gamma, $0.offsetSDR, $0.offsetHDR] } + [hdrCapacityMin, hdrCapacityMax]
        guard numbers.allSatisfy(\.isFinite) else { throw Refusal("the gain map metadata holds a number that is not finite") }
        for channel in channels {
            guard abs(channel.gainMapMin) <= Self.maxStops, abs(channel.gainMapMax) <= Self.maxStops else {
                throw Refusal("the gain map's boost is over \(Int(Self.maxStops)) stops")
            }
            guard channel.gainMapMax >= channel.gainMapMin else { throw Refusal("the gain map's largest boost is below its smallest") }
            guard channel.gamma > 0.01, channel.gamma <= 100 else { throw Refusal("the gain map's gamma is \(channel.gamma)") }
            guard abs(channel.offsetSDR) <= Self.maxOffset, abs(channel.offsetHDR) <= Self.maxOffset else {
                throw Refusal("the gain map's offsets are over \(Self.maxOffset)")
            }
        }
        // A thousandth of a stop at least: less is nothing a display shows, and is lost when written.
        guard hdrCapacityMin >= 0, hdrCapacityMax >= hdrCapacityMin + Self.leastStops, hdrCapacityMax <= Self.maxStops else {
            throw Refusal("the gain map's display headrooms (\(hdrCapacityMin), \(hdrCapacityMax) stops) are not a range it can be shown in")
        }
        guard channels.contains(where: { $0.gainMapMax >= Self.leastStops }) else {
            throw Refusal("the gain map brightens nothing (its largest boost is 1)")
        }
        return self
    }

    /// The map value (0–255, before the map's gamma is undone) at which a channel's boost is 1: what
    /// the map holds under a watermark, which stays as the SDR picture shows it. 0 when every value
    /// brightens (a smallest boost above 1), 255 when every value darkens.
    public var neutralValue: UInt8 {
        let channel = channels[0]
        guard channel.gainMapMax > channel.gainMapMin else { return 0 }
        let linear = min(1, max(0, -channel.gainMapMin / (channel.gainMapMax - channel.gainMapMin)))
        return UInt8((pow(linear, channel.gamma) * 255).rounded())
    }
}

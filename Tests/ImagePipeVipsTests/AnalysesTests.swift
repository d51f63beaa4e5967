import ImagePipeVips
import Testing

/// The palette and the PDQ hash on synthetic pictures whose answers are known without a reference
/// implementation (the PDQ hash's comparison with `pdqhash` is a test of its own).
@Suite struct AnalysesTests {
    // MARK: - Palette

    static let red: (UInt8, UInt8, UInt8) = (200, 40, 50)
    static let blue: (UInt8, UInt8, UInt8) = (30, 120, 200)
    static let yellow: (UInt8, UInt8, UInt8) = (240, 220, 90)

    /// A 100x100 picture, half `red`, then 30% `blue`, then 20% `yellow`, in reading order; each
    /// channel moved by `jitter` (given the pixel's index and the channel).
    static func threeColours(jitter: (Int, Int) -> Int = { _, _ in 0 }) -> [UInt8] {
        rgba(width: 100, height: 100) { x, y in
            let index = y * 100 + x
            let colour = index < 5000 ? red : index < 8000 ? blue : yellow
            let channels = [colour.0, colour.1, colour.2].enumerated().map { channel, value in
                UInt8(max(0, min(255, Int(value) + jitter(index, channel))))
            }
            return (channels[0], channels[1], channels[2], 255)
        }
    }

    @Test func threeFlatColoursComeOutInOrderWithTheirShares() {
        let entries = Self.palette(Self.threeColours(), width: 100, height: 100)
        #expect(entries.count == 3, "\(entries)")
        guard entries.count == 3 else { return }
        for (entry, (colour, share)) in zip(entries, [(Self.red, 0.5), (Self.blue, 0.3), (Self.yellow, 0.2)]) {
            #expect(Self.isNear(entry, colour), "\(entry)")
            #expect(abs(entry.share - share) < 0.01, "\(entry)")
        }
    }

    @Test func twoLevelsOfNoiseStillMakeThreeColours() {
        // A fixed linear congruential sequence: the same noise on every run.
        var state: UInt32 = 12345
        let noisy = Self.threeColours { _, _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return Int(state >> 16) % 5 - 2
        }
        let entries = Self.palette(noisy, width: 100, height: 100)
        #expect(entries.count == 3, "\(entries)")
        guard entries.count == 3 else { return }
        for (entry, (colour, share)) in zip(entries, [(Self.red, 0.5), (Self.blue, 0.3), (Self.yellow, 0.2)]) {
            #expect(Self.isNear(entry, colour), "\(entry)")
            #expect(abs(entry.share - share) < 0.01, "\(entry)")
        }
        // No seed, no order of a hash table: the same pixels give the same palette.
        #expect(Self.palette(noisy, width: 100, height: 100) == entries)
    }

    @Test func eightEqualColoursListTheMost() {
        let colours: [(UInt8, UInt8, UInt8)] = [
            (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255), (255, 0, 255), (0, 0, 0), (255, 255, 255),
        ]
        let picture = Self.rgba(width: 80, height: 80) { x, _ in
            let colour = colours[x / 10]
            return (colour.0, colour.1, colour.2, 255)
        }
        let entries = Self.palette(picture, width: 80, height: 80)
        #expect(entries.count == Palette.maxColours, "\(entries)")
        #expect(entries.allSatisfy { abs($0.share - 0.125) < 0.001 }, "\(entries)")
    }

    @Test func aGradientListsAtMostSixWhoseSharesSumToAtMostOne() {
        let picture = Self.rgba(width: 100, height: 100) { x, y in (UInt8(x * 255 / 99), UInt8(y * 255 / 99), 128, 255) }
        let entries = Self.palette(picture, width: 100, height: 100)
        #expect(!entries.isEmpty && entries.count <= Palette.maxColours, "\(entries)")
        #expect(entries.map(\.share).reduce(0, +) <= 1 + 1e-9, "\(entries)")
        #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.share >= $1.share }, "most frequent first: \(entries)")
    }

    @Test func pixelsLessThanHalfOpaqueAreNotCounted() {
        let clear = Self.rgba(width: 50, height: 50) { _, _ in (10, 200, 30, 0) }
        #expect(Self.palette(clear, width: 50, height: 50).isEmpty)
        // Alpha 127 is nearer clear, 128 nearer opaque: only the right half counts, and is all of it.
        let half = Self.rgba(width: 50, height: 50) { x, _ in x < 25 ? (10, 200, 30, 127) : (200, 10, 30, 128) }
        let entries = Self.palette(half, width: 50, height: 50)
        #expect(entries.count == 1 && entries.first?.share == 1, "\(entries)")
        #expect(entries.first.map { Self.isNear($0, (200, 10, 30)) } == true, "\(entries)")
    }

    @Test func coloursCloserThanTheMergeDistanceAreOneAndFarOnesTwo() {
        // In Oklab, (130, 140, 150) is 0.019 from (120, 140, 160), a just visible difference side
        // by side, and (200, 130, 90) is 0.145 from it, a different colour.
        let base: (UInt8, UInt8, UInt8) = (120, 140, 160)
        func split(_ other: (UInt8, UInt8, UInt8)) -> [PaletteEntry] {
            let picture = Self.rgba(width: 100, height: 100) { x, _ in
                let colour = x < 60 ? base : other
                return (colour.0, colour.1, colour.2, 255)
            }
            return Self.palette(picture, width: 100, height: 100)
        }
        let close = split((130, 140, 150)), far = split((200, 130, 90))
        #expect(close.count == 1 && close.first?.share == 1, "\(close)")
        #expect(far.count == 2, "\(far)")
        #expect(far.first.map { Self.isNear($0, base) && abs($0.share - 0.6) < 0.001 } == true, "\(far)")
        // Red and orange (0.16 apart), black and a 20% grey (0.32): different colours.
        let redOrange = Self.rgba(width: 100, height: 100) { x, _ in x < 50 ? (255, 0, 0, 255) : (255, 128, 0, 255) }
        let blackGrey = Self.rgba(width: 100, height: 100) { x, _ in x < 50 ? (0, 0, 0, 255) : (51, 51, 51, 255) }
        #expect(Self.palette(redOrange, width: 100, height: 100).count == 2)
        #expect(Self.palette(blackGrey, width: 100, height: 100).count == 2)
    }

    /// Whether an entry's colour is within one level of `colour` in each channel.
    static func isNear(_ entry: PaletteEntry, _ colour: (UInt8, UInt8, UInt8)) -> Bool {
        abs(Int(entry.red) - Int(colour.0)) <= 1 && abs(Int(entry.green) - Int(colour.1)) <= 1 && abs(Int(entry.blue) - Int(colour.2)) <= 1
    }

    static func palette(_ rgba: [UInt8], width: Int, height: Int) -> [PaletteEntry] {
        rgba.withUnsafeBufferPointer { Palette.colours(rgba: $0, width: width, height: height) }
    }

    /// RGBA pixels, row by row, from a function of (x, y).
    static func rgba(width: Int, height: Int, _ pixel: (Int, Int) -> (UInt8, UInt8, UInt8, UInt8)) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let value = pixel(x, y)
                bytes += [value.0, value.1, value.2, value.3]
            }
        }
        return bytes
    }

    // MARK: - PDQ

    /// A picture with edges and smooth parts, as an illustration has: coloured rectangles over a
    /// diagonal ramp. Its PDQ quality is 100, so its bits rest on real detail.
    static func illustration(width: Int, height: Int) -> [UInt8] {
        let boxes: [(left: Double, top: Double, right: Double, bottom: Double, fill: (Double, Double, Double))] = [
            (0.05, 0.1, 0.35, 0.45, (220, 60, 40)), (0.5, 0.05, 0.9, 0.3, (30, 90, 200)), (0.3, 0.55, 0.6, 0.95, (240, 210, 60)),
            (0.7, 0.45, 0.95, 0.85, (20, 20, 20)), (0.12, 0.6, 0.22, 0.9, (250, 250, 250)),
        ]
        return rgb(width: width, height: height) { x, y in
            let u = Double(x) / Double(width), v = Double(y) / Double(height)
            var colour = (60 + 120 * u, 80 + 100 * v, 140 - 60 * u)
            for box in boxes where u >= box.left && u < box.right && v >= box.top && v < box.bottom { colour = box.fill }
            return (UInt8(colour.0.rounded()), UInt8(colour.1.rounded()), UInt8(colour.2.rounded()))
        }
    }

    @Test func aPictureAndItsHalfSizeCopyHashWithin16Bits() throws {
        // 1024x768 is averaged down to 640x480 first; its half, 512x384, is hashed as it is.
        let picture = Self.illustration(width: 1024, height: 768)
        let half = Self.rgb(width: 512, height: 384) { x, y in
            var sums = [0, 0, 0]
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                for channel in 0..<3 { sums[channel] += Int(picture[((2 * y + dy) * 1024 + 2 * x + dx) * 3 + channel]) }
            }
            return (UInt8(sums[0] / 4), UInt8(sums[1] / 4), UInt8(sums[2] / 4))
        }
        let full = try #require(Self.pdq(picture, width: 1024, height: 768)), small = try #require(Self.pdq(half, width: 512, height: 384))
        #expect(full.quality == 100 && small.quality == 100)
        #expect(Self.distance(full.hex, small.hex) <= 16, "\(full.hex) vs \(small.hex)")
    }

    @Test func aFlatPictureHasQualityZero() throws {
        let flat = Self.rgb(width: 200, height: 120) { _, _ in (90, 120, 150) }
        #expect(try #require(Self.pdq(flat, width: 200, height: 120)).quality == 0)
        let large = Self.rgb(width: 900, height: 700) { _, _ in (90, 120, 150) }
        #expect(try #require(Self.pdq(large, width: 900, height: 700)).quality == 0)
    }

    @Test func stripesAndTheirQuarterTurnDifferByMoreThanHalfTheBits() throws {
        let width = 400, height = 300
        let stripes = Self.rgb(width: width, height: height) { _, y in
            let value: UInt8 = (y / 20) % 2 == 0 ? 40 : 210
            return (value, value, value)
        }
        // Turned a quarter clockwise: pixel (x, y) of the turned picture is (y, height - 1 - x) of the original.
        let turned = Self.rgb(width: height, height: width) { x, y in
            let from = ((height - 1 - x) * width + y) * 3
            return (stripes[from], stripes[from + 1], stripes[from + 2])
        }
        let one = try #require(Self.pdq(stripes, width: width, height: height))
        let other = try #require(Self.pdq(turned, width: height, height: width))
        #expect(Self.distance(one.hex, other.hex) > 64, "\(one.hex) vs \(other.hex)")
    }

    @Test func theHashIs64LowercaseHexDigits() throws {
        let picture = Self.illustration(width: 320, height: 240)
        let hex = try #require(Self.pdq(picture, width: 320, height: 240)).hex
        #expect(hex.count == 64 && hex.allSatisfy { "0123456789abcdef".contains($0) }, "\(hex)")
        // As many bits above the median as below it: a hash of real detail has 128 set.
        #expect(hex.reduce(0) { $0 + (Int(String($1), radix: 16) ?? 0).nonzeroBitCount } == 128)
        // Alpha is ignored: the same pixels with a fourth band hash the same.
        var withAlpha: [UInt8] = []
        for index in 0..<(320 * 240) {
            withAlpha.append(contentsOf: picture[(index * 3)..<(index * 3 + 3)])
            withAlpha.append(UInt8(index % 256))
        }
        let fromRGBA = withAlpha.withUnsafeBufferPointer { PDQ.hash(pixels: $0.baseAddress!, width: 320, height: 240, bands: 4) }
        #expect(fromRGBA?.hex == hex)
    }

    @Test func otherLayoutsAndEmptyPicturesHaveNoHash() {
        let bytes = [UInt8](repeating: 128, count: 64)
        bytes.withUnsafeBufferPointer { pixels in
            #expect(PDQ.hash(pixels: pixels.baseAddress!, width: 4, height: 4, bands: 2) == nil)
            #expect(PDQ.hash(pixels: pixels.baseAddress!, width: 0, height: 4, bands: 3) == nil)
            #expect(PDQ.hash(pixels: pixels.baseAddress!, width: 4, height: 0, bands: 4) == nil)
        }
    }

    static func pdq(_ rgb: [UInt8], width: Int, height: Int) -> PDQResult? {
        rgb.withUnsafeBufferPointer { PDQ.hash(pixels: $0.baseAddress!, width: width, height: height, bands: 3) }
    }

    /// How many bits two hashes' hex digits differ in.
    static func distance(_ one: String, _ other: String) -> Int {
        zip(one, other).reduce(0) { total, digits in
            total + ((Int(String(digits.0), radix: 16) ?? 0) ^ (Int(String(digits.1), radix: 16) ?? 0)).nonzeroBitCount
        }
    }

    /// RGB pixels, row by row, from a function of (x, y).
    static func rgb(width: Int, height: Int, _ pixel: (Int, Int) -> (UInt8, UInt8, UInt8)) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let value = pixel(x, y)
                bytes += [value.0, value.1, value.2]
            }
        }
        return bytes
    }
}

// The main colours of a picture and the share of it each covers, from the placeholder's pixels.
import Foundation

/// One of a picture's main colours.
package struct PaletteEntry: Sendable, Equatable {
    package var red: UInt8
    package var green: UInt8
    package var blue: UInt8
    /// The share of the counted pixels (those at least half opaque) in this colour's cluster, 0–1.
    package var share: Double
}

/// A picture's main colours: its pixels clustered in Oklab, where equal distances look about
/// equally different, so that shades no one would tell apart come out as one colour and colours
/// that look different stay apart.
///
/// The pixels are summed into a coarse grid of Oklab cells first (``cellSize`` a side), which
/// keeps the clustering's cost to the cells a picture fills (tens to a few hundred for a photo)
/// rather than its 10,000 pixels. Up to ``maxSeeds`` cells seed k-means, chosen deterministically:
/// the fullest cell first, then each time the cell with the most pixels for its distance from the
/// seeds so far, while one lies ``mergeDistance`` or more from all of them. A few rounds of k-means
/// follow, then clusters closer than ``mergeDistance`` merge. Every step is a function of the
/// pixels alone (no random seeds; ties go to the cell filled first), so a picture always gets the
/// same palette.
package enum Palette {
    /// The most colours listed.
    package static let maxColours = 6

    /// Clusters whose mean colours are closer than this in Oklab are one colour. About 0.02 is
    /// the least difference visible between two flat areas side by side; at a little over twice
    /// that they still read as one colour, a little shaded, while red and orange (0.16 apart) or
    /// black and a 20% grey (0.32) are far outside it.
    package static let mergeDistance: Float = 0.045

    /// The Oklab grid's step: a cell's diagonal (0.052) is not much over ``mergeDistance``, so no
    /// cell holds two colours a viewer would call different, while a noisy flat area fills only a
    /// handful of cells.
    static let cellSize: Float = 0.03

    /// The most clusters k-means starts from: more than ``maxColours``, so that a seventh colour
    /// does not force two listed ones into one cluster.
    static let maxSeeds = 16

    /// The most rounds of k-means: photos settle in three or four; a picture of noise, with
    /// thousands of cells, stops here having moved little since.
    static let maxRounds = 6

    /// The picture's main colours, most frequent first, from 8-bit sRGB pixels (RGBA, rows of
    /// `width * 4` bytes). Each is the mean of its cluster's pixels, taken in Oklab. Shares are of
    /// the pixels counted (those at least half opaque) and sum to 1 (up to rounding) over all
    /// clusters, so the listed ones sum to at most 1; a picture with no such pixel has no palette.
    package static func colours(rgba: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> [PaletteEntry] {
        guard width > 0, height > 0, let base = rgba.baseAddress, rgba.count / 4 / height >= width else { return [] }
        let cells = Cells(pixels: base, count: width * height)
        guard cells.counted > 0 else { return [] }
        var clusters = kMeans(cells, from: seeds(cells))
        merge(&clusters)
        // Fullest first; equal counts keep the order their seeds were found in.
        let ordered = clusters.indices.sorted { (clusters[$0].count, $1) > (clusters[$1].count, $0) }
        return ordered.prefix(maxColours).map { index in
            let cluster = clusters[index]
            let (red, green, blue) = Oklab.sRGB(cluster.mean)
            return PaletteEntry(red: red, green: green, blue: blue, share: Double(cluster.count) / Double(cells.counted))
        }
    }

    // MARK: - Cells

    /// The counted pixels, summed by the Oklab cell they fall in. Per filled cell, in the order
    /// first filled: how many pixels it holds, and the means of their L, a and b (one array per
    /// coordinate, so that the loops over cells vectorize).
    struct Cells {
        var counts: [Int] = []
        var l: [Float] = []
        var a: [Float] = []
        var b: [Float] = []
        /// How many pixels were counted.
        var counted = 0

        /// The grid's corner and size in cells: sRGB's colours lie within L 0...1, a -0.234...0.277
        /// and b -0.312...0.199.
        static let corner = (l: Float(0), a: Float(-0.24), b: Float(-0.32))
        static let size = (l: 34, a: 18, b: 18)

        /// Sums the pixels at least half opaque (alpha 128 or more: nearer opaque than clear).
        init(pixels: UnsafePointer<UInt8>, count: Int) {
            let (l, a, b) = Oklab.coordinates(of: pixels, count: count) { $0[3] >= 128 }
            counted = l.count
            // Each cell's place in the arrays, plus one (0: not filled yet).
            let cellCount = Self.size.l * Self.size.a * Self.size.b
            var places = [UInt16](repeating: 0, count: cellCount)
            // Per place, four sets of totals (pixels, then L, a and b), pixel i adding to set i % 4:
            // consecutive pixels of one colour fall in one cell, and with one set each addition
            // waited on the one before it through memory, which made this loop cost twice the
            // colour conversion. A place's totals are zeroed when it is first filled.
            let totals = UnsafeMutablePointer<Float>.allocate(capacity: 16 * min(counted, cellCount))
            defer { totals.deallocate() }
            var filled = 0
            let scale = 1 / Palette.cellSize, corner = Self.corner, size = Self.size
            places.withUnsafeMutableBufferPointer { places in
                for i in 0..<counted {
                    let index =
                        (Self.step((l[i] - corner.l) * scale, size.l) * size.a + Self.step((a[i] - corner.a) * scale, size.a))
                        * size.b + Self.step((b[i] - corner.b) * scale, size.b)
                    if places[index] == 0 {
                        (totals + 16 * filled).initialize(repeating: 0, count: 16)
                        filled += 1
                        places[index] = UInt16(filled)
                    }
                    let slot = totals + 16 * (Int(places[index]) - 1) + 4 * (i & 3)
                    slot[0] += 1
                    slot[1] += l[i]
                    slot[2] += a[i]
                    slot[3] += b[i]
                }
            }
            func total(_ place: Int, _ coordinate: Int) -> Float {
                (0..<4).reduce(Float(0)) { $0 + totals[16 * place + 4 * $1 + coordinate] }
            }
            counts = (0..<filled).map { Int(total($0, 0)) }
            self.l = (0..<filled).map { total($0, 1) / Float(counts[$0]) }
            self.a = (0..<filled).map { total($0, 2) / Float(counts[$0]) }
            self.b = (0..<filled).map { total($0, 3) / Float(counts[$0]) }
        }

        /// The cell a coordinate (in cells from the grid's corner) falls in, along an axis of
        /// `count` cells; a colour just outside the grid goes to its edge.
        @inline(__always)
        static func step(_ position: Float, _ count: Int) -> Int {
            Int(Swift.min(Swift.max(position, 0), Float(count - 1)))
        }
    }

    // MARK: - Clustering

    /// An Oklab colour.
    struct Colour: Equatable {
        var l: Float
        var a: Float
        var b: Float

        /// The squared distance to another.
        @inline(__always)
        func distanceSquared(to other: Colour) -> Float {
            (l - other.l) * (l - other.l) + (a - other.a) * (a - other.a) + (b - other.b) * (b - other.b)
        }
    }

    /// A cluster: its pixel count and the sums of their Oklab coordinates.
    struct Cluster {
        var count = 0
        var l: Double = 0
        var a: Double = 0
        var b: Double = 0

        var mean: Colour { Colour(l: Float(l / Double(count)), a: Float(a / Double(count)), b: Float(b / Double(count))) }

        mutating func add(_ other: Cluster) {
            count += other.count
            l += other.l
            a += other.a
            b += other.b
        }
    }

    /// The k-means seeds, as mean colours of cells: the fullest cell, then repeatedly the cell
    /// with the largest count times squared distance to its nearest seed (k-means++'s weighting,
    /// taken greedily rather than at random), among those at least ``mergeDistance`` from every
    /// seed. Stops at ``maxSeeds`` or when every cell is near a seed.
    static func seeds(_ cells: Cells) -> [Colour] {
        let count = cells.counts.count
        var first = 0
        for index in 0..<count where cells.counts[index] > cells.counts[first] { first = index }
        var seeds: [Colour] = []
        var nearest = [Float](repeating: .infinity, count: count)
        let apart = mergeDistance * mergeDistance
        var next = first
        while next >= 0 {
            let seed = Colour(l: cells.l[next], a: cells.a[next], b: cells.b[next])
            seeds.append(seed)
            guard seeds.count < maxSeeds else { break }
            next = -1
            var bestScore: Float = 0
            for index in 0..<count {
                let distance =
                    (cells.l[index] - seed.l) * (cells.l[index] - seed.l) + (cells.a[index] - seed.a) * (cells.a[index] - seed.a)
                    + (cells.b[index] - seed.b) * (cells.b[index] - seed.b)
                nearest[index] = min(nearest[index], distance)
            }
            for index in 0..<count where nearest[index] >= apart {
                let score = Float(cells.counts[index]) * nearest[index]
                if score > bestScore {
                    next = index
                    bestScore = score
                }
            }
        }
        return seeds
    }

    /// Rounds of k-means over the cells (each cell whole, weighted by its pixels) from `seeds`,
    /// until no cell changes cluster; the clusters left with pixels, in their seeds' order.
    /// Assignment runs centre by centre over all cells, a loop the compiler vectorizes.
    static func kMeans(_ cells: Cells, from seeds: [Colour]) -> [Cluster] {
        let count = cells.counts.count
        var centres = seeds
        var assigned = [Int32](repeating: -1, count: count), previous = assigned
        var nearest = [Float](repeating: 0, count: count)
        var clusters: [Cluster] = []
        for _ in 0..<maxRounds {
            nearest.withUnsafeMutableBufferPointer { nearest in
                assigned.withUnsafeMutableBufferPointer { assigned in
                    cells.l.withUnsafeBufferPointer { l in
                        cells.a.withUnsafeBufferPointer { a in
                            cells.b.withUnsafeBufferPointer { b in
                                nearest.initialize(repeating: .infinity)
                                for (index, centre) in centres.enumerated() {
                                    let label = Int32(index)
                                    for i in 0..<count {
                                        let distance =
                                            (l[i] - centre.l) * (l[i] - centre.l) + (a[i] - centre.a) * (a[i] - centre.a)
                                            + (b[i] - centre.b) * (b[i] - centre.b)
                                        // Strictly nearer: a tie stays with the earlier centre. In
                                        // arithmetic rather than a choice, which the compiler made a
                                        // branch that random colours mispredicted half the time.
                                        let nearer = Int32(distance < nearest[i] ? 1 : 0)
                                        nearest[i] = Swift.min(distance, nearest[i])
                                        assigned[i] &+= (label &- assigned[i]) &* nearer
                                    }
                                }
                            }
                        }
                    }
                }
            }
            // The clusters' totals (pixels, then their L, a and b) in four sets, cell i adding to set
            // i % 4, so that consecutive cells of one cluster do not each wait on the last addition.
            let k = centres.count
            var totals = [Float](repeating: 0, count: 4 * 4 * k)
            totals.withUnsafeMutableBufferPointer { totals in
                for i in 0..<count {
                    let slot = ((i & 3) * k + Int(assigned[i])) * 4, weight = Float(cells.counts[i])
                    totals[slot] += weight
                    totals[slot + 1] += weight * cells.l[i]
                    totals[slot + 2] += weight * cells.a[i]
                    totals[slot + 3] += weight * cells.b[i]
                }
            }
            clusters = (0..<k).map { centre in
                var cluster = Cluster()
                for set in 0..<4 {
                    let slot = (set * k + centre) * 4
                    cluster.add(
                        Cluster(count: Int(totals[slot]), l: Double(totals[slot + 1]), a: Double(totals[slot + 2]), b: Double(totals[slot + 3])))
                }
                return cluster
            }
            // A cluster that lost all its cells keeps its centre, and wins nothing more.
            for index in clusters.indices where clusters[index].count > 0 { centres[index] = clusters[index].mean }
            if assigned == previous { break }
            previous = assigned
        }
        return clusters.filter { $0.count > 0 }
    }

    /// Merges the two closest clusters while their means are under ``mergeDistance`` apart: k-means
    /// splits a large even area between seeds that happened to fall in it.
    static func merge(_ clusters: inout [Cluster]) {
        let limit = mergeDistance * mergeDistance
        while clusters.count > 1 {
            let means = clusters.map(\.mean)
            var pair = (0, 0), closest = Float.infinity
            for i in means.indices {
                for j in (i + 1)..<means.count {
                    let distance = means[i].distanceSquared(to: means[j])
                    if distance < closest {
                        pair = (i, j)
                        closest = distance
                    }
                }
            }
            guard closest < limit else { return }
            clusters[pair.0].add(clusters[pair.1])
            clusters.remove(at: pair.1)
        }
    }
}

/// Björn Ottosson's Oklab (2020), from and to 8-bit sRGB, with the matrices he published.
enum Oklab {
    /// What each channel's 8-bit level adds to the cone responses Oklab starts from (linear
    /// light times the published matrix's column): reds first, then greens, then blues, 256 each.
    /// The reds also carry a trace of every response (1e-12, a ten-millionth of the dimmest
    /// level's), so that no cube root is taken of 0 (see ``cubeRoot(_:)``).
    static let coneResponses: [SIMD4<Float>] = {
        let columns = [
            SIMD4<Float>(0.4122214708, 0.2119034982, 0.0883024619, 0),
            SIMD4<Float>(0.5363325363, 0.6806995451, 0.2817188376, 0),
            SIMD4<Float>(0.0514459929, 0.1073969566, 0.6299787005, 0),
        ]
        return columns.indices.flatMap { channel in
            (0..<256).map { level -> SIMD4<Float> in
                let value = Double(level) / 255
                let linear = Float(value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4))
                return columns[channel] * linear + (channel == 0 ? SIMD4(repeating: 1e-12) : .zero)
            }
        }
    }()

    /// The Oklab coordinates of the pixels (RGBA) that `include` accepts, in their order, as one
    /// array per coordinate. Two passes: the cone responses, by table, then their cube roots and
    /// the second matrix, in a loop over whole arrays the compiler vectorizes; a pixel at a time,
    /// the compiler took the vectors apart and the conversion cost nine times as much.
    static func coordinates(
        of pixels: UnsafePointer<UInt8>, count: Int, including include: (UnsafePointer<UInt8>) -> Bool
    ) -> (l: [Float], a: [Float], b: [Float]) {
        var l = [Float](repeating: 0, count: count), m = l, s = l
        var included = 0
        l.withUnsafeMutableBufferPointer { l in
            m.withUnsafeMutableBufferPointer { m in
                s.withUnsafeMutableBufferPointer { s in
                    coneResponses.withUnsafeBufferPointer { responses in
                        for i in 0..<count {
                            let pixel = pixels + 4 * i
                            guard include(pixel) else { continue }
                            let cone = responses[Int(pixel[0])] + responses[256 + Int(pixel[1])] + responses[512 + Int(pixel[2])]
                            l[included] = cone[0]
                            m[included] = cone[1]
                            s[included] = cone[2]
                            included += 1
                        }
                    }
                    for i in 0..<included {
                        let (lr, mr, sr) = (cubeRoot(l[i]), cubeRoot(m[i]), cubeRoot(s[i]))
                        l[i] = 0.2104542553 * lr + 0.7936177850 * mr - 0.0040720468 * sr
                        m[i] = 1.9779984951 * lr - 2.4285922050 * mr + 0.4505937099 * sr
                        s[i] = 0.0259040371 * lr + 0.7827717662 * mr - 0.8086757660 * sr
                    }
                }
            }
        }
        l.removeLast(count - included)
        m.removeLast(count - included)
        s.removeLast(count - included)
        return (l, m, s)
    }

    /// The cube root of a positive value, to float precision: an estimate from the exponent (a
    /// third of the bits, plus a constant that centres the error), then two of Halley's steps,
    /// each of which cubes the relative error (3% to 1e-5 to float rounding). `cbrt` three times
    /// a pixel took most of the palette's time. Not 0: from it the estimate's cube is a subnormal
    /// number, arithmetic on which is a hundred times slower on x86.
    @inline(__always)
    static func cubeRoot(_ x: Float) -> Float {
        var y = Float(bitPattern: x.bitPattern / 3 &+ 0x2A51_4067)
        for _ in 0..<2 {
            let cube = y * y * y
            y = y * (cube + 2 * x) / (2 * cube + x)
        }
        return y
    }

    /// The 8-bit sRGB colour nearest an Oklab one (each channel clamped to the gamut).
    static func sRGB(_ colour: Palette.Colour) -> (UInt8, UInt8, UInt8) {
        let (l, a, b) = (Double(colour.l), Double(colour.a), Double(colour.b))
        let lr = l + 0.3963377774 * a + 0.2158037573 * b
        let mr = l - 0.1055613458 * a - 0.0638541728 * b
        let sr = l - 0.0894841775 * a - 1.2914855480 * b
        let (cl, cm, cs) = (lr * lr * lr, mr * mr * mr, sr * sr * sr)
        let red = 4.0767416621 * cl - 3.3077115913 * cm + 0.2309699292 * cs
        let green = -1.2684380046 * cl + 2.6097574011 * cm - 0.3413193965 * cs
        let blue = -0.0041960863 * cl - 0.7034186147 * cm + 1.7076147010 * cs
        return (level(red), level(green), level(blue))
    }

    /// A linear sRGB value's nearest 8-bit level.
    private static func level(_ value: Double) -> UInt8 {
        let clamped = min(1, max(0, value))
        let encoded = clamped <= 0.0031308 ? 12.92 * clamped : 1.055 * pow(clamped, 1 / 2.4) - 0.055
        return UInt8((encoded * 255).rounded())
    }
}

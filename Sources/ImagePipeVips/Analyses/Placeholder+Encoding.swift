// A placeholder made from an original's pixels in the image helper: its ThumbHash and its dominant colour.
public import Foundation
public import ImagePipe
import Synchronization

extension Placeholder {
    /// The placeholder of an image given as at most 100x100 RGBA pixels, row by row.
    public init(width: Int, height: Int, rgba: [UInt8]) {
        let thumbHash = Self.thumbHash(width: width, height: height, rgba: rgba).base64EncodedString()
        self.init(thumbHash: thumbHash, color: Self.dominantColor(rgba))
    }

    /// The dominant colour of RGBA pixels.
    static func dominantColor(_ rgba: [UInt8]) -> String {
        // Per bin: count, then the sums of red, green and blue; on a raw buffer, as array accesses
        // in this loop cost as much as the loop.
        let bins = UnsafeMutableBufferPointer<Int>.allocate(capacity: 4096 * 4)
        defer { bins.deallocate() }
        bins.initialize(repeating: 0)
        rgba.withUnsafeBufferPointer { pixels in
            var index = 0
            while index &+ 3 < pixels.count {
                if pixels[index &+ 3] >= 128 {
                    let r = Int(pixels[index]), g = Int(pixels[index &+ 1]), b = Int(pixels[index &+ 2])
                    let bin = ((r >> 4) << 8 | (g >> 4) << 4 | b >> 4) &* 4
                    bins[bin] &+= 1
                    bins[bin &+ 1] &+= r
                    bins[bin &+ 2] &+= g
                    bins[bin &+ 3] &+= b
                }
                index &+= 4
            }
        }
        // The first of the fullest bins, as `max(by:)` over the bins in order gives.
        var fullest = 0
        for bin in 1..<4096 where bins[bin * 4] > bins[fullest * 4] { fullest = bin }
        let n = bins[fullest * 4]
        guard n > 0 else { return "#000000" }
        return String(format: "#%02x%02x%02x", bins[fullest * 4 + 1] / n, bins[fullest * 4 + 2] / n, bins[fullest * 4 + 3] / n)
    }

    /// ThumbHash's encoder, following the reference implementation (its rounding is JavaScript's
    /// `Math.round`, half up) so that its decoders read the hash back exactly; only its sums are
    /// taken in another order (below), and the tests compare the bytes with the reference encoder's.
    public static func thumbHash(width w: Int, height h: Int, rgba: [UInt8]) -> Data {
        precondition(w > 0 && h > 0 && w <= 100 && h <= 100 && rgba.count >= w * h * 4, "ThumbHash takes at most 100x100 pixels")
        func round(_ x: Double) -> Int { Int((x + 0.5).rounded(.down)) }
        let count = w * h
        // The reference's per-pixel factors depend on the alpha byte alone: computed once per value
        // with the same operations, they give the same results without two divisions per pixel.
        let factors = UnsafeMutableBufferPointer<Double>.allocate(capacity: 3 * 256)
        defer { factors.deallocate() }
        for value in 0..<256 {
            let alpha = Double(value) / 255
            factors[value] = alpha
            factors[256 + value] = alpha / 255
            factors[512 + value] = 1 - alpha
        }
        // The channels, each `count` values: luminance, yellow–blue, red–green, alpha.
        let channels = UnsafeMutableBufferPointer<Double>.allocate(capacity: 4 * count)
        defer { channels.deallocate() }
        var avgR = 0.0, avgG = 0.0, avgB = 0.0, avgA = 0.0
        rgba.withUnsafeBufferPointer { pixels in
            var opaque = true
            for i in 0..<count where pixels[i &* 4 &+ 3] != 255 {
                opaque = false
                break
            }
            if opaque {
                // Each pixel's weight for the average colour is 1 - 1 = 0, so the reference's values
                // are its level tables' (its average is then never used).
                avgA = Double(count)
                let levels = UnsafeMutableBufferPointer<Double>.allocate(capacity: 256)
                defer { levels.deallocate() }
                for value in 0..<256 { levels[value] = factors[256 + 255] * Double(value) }
                for i in 0..<count {
                    let r = levels[Int(pixels[i &* 4])], g = levels[Int(pixels[i &* 4 &+ 1])], b = levels[Int(pixels[i &* 4 &+ 2])]
                    channels[i] = (r + g + b) / 3
                    channels[count &+ i] = (r + g) / 2 - b
                    channels[2 &* count &+ i] = r - g
                }
                return
            }
            for i in 0..<count {
                let alpha = Int(pixels[i &* 4 &+ 3])
                let scale = factors[256 + alpha]
                avgR += scale * Double(pixels[i &* 4])
                avgG += scale * Double(pixels[i &* 4 &+ 1])
                avgB += scale * Double(pixels[i &* 4 &+ 2])
                avgA += factors[alpha]
            }
            if avgA > 0 {
                avgR /= avgA
                avgG /= avgA
                avgB /= avgA
            }
            for i in 0..<count {
                let alpha = Int(pixels[i &* 4 &+ 3])
                let scale = factors[256 + alpha], rest = factors[512 + alpha]
                let r = avgR * rest + scale * Double(pixels[i &* 4])
                let g = avgG * rest + scale * Double(pixels[i &* 4 &+ 1])
                let b = avgB * rest + scale * Double(pixels[i &* 4 &+ 2])
                channels[i] = (r + g + b) / 3
                channels[count &+ i] = (r + g) / 2 - b
                channels[2 &* count &+ i] = r - g
                channels[3 &* count &+ i] = factors[alpha]
            }
        }
        let hasAlpha = avgA < Double(count)
        let lLimit = hasAlpha ? 5.0 : 7.0
        let lx = max(1, round(lLimit * Double(w) / Double(max(w, h))))
        let ly = max(1, round(lLimit * Double(h) / Double(max(w, h))))
        // Each coefficient is a sum over the pixels of value × cos(x) × cos(y). The columns are first
        // summed against each vertical cosine (one pass over the pixels per row of coefficients), then
        // each coefficient is one pass over those sums: the reference's pass over every pixel per
        // coefficient and its cosine per pixel were a tenth of a small image's whole cost.
        let cosX = Self.cosines(w), cosY = Self.cosines(h)
        // The sums run on raw buffers: array accesses inside these loops (bounds and uniqueness
        // checks) made the placeholder a tenth of a small image's CPU.
        let columns = UnsafeMutableBufferPointer<Double>.allocate(capacity: w)
        defer { columns.deallocate() }
        func encodeChannel(_ index: Int, _ nx: Int, _ ny: Int) -> (dc: Double, ac: [Double], scale: Double) {
            let pixels = UnsafeBufferPointer(rebasing: channels[index * count..<(index + 1) * count])
            var dc = 0.0, ac: [Double] = [], scale = 0.0
            for cy in 0..<ny {
                columns.initialize(repeating: 0)
                cosY[cy].withUnsafeBufferPointer { fy in
                    for y in 0..<h { Self.accumulate(pixels.baseAddress! + y &* w, times: fy[y], into: columns.baseAddress!, count: w) }
                }
                var cx = 0
                while cx * ny < nx * (ny - cy) {
                    var f = 0.0
                    cosX[cx].withUnsafeBufferPointer { fx in
                        for x in 0..<w { f += columns[x] * fx[x] }
                    }
                    f /= Double(count)
                    if cx > 0 || cy > 0 {
                        ac.append(f)
                        scale = max(scale, abs(f))
                    } else {
                        dc = f
                    }
                    cx += 1
                }
            }
            if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
            return (dc, ac, scale)
        }
        let lum = encodeChannel(0, max(3, lx), max(3, ly))
        let yb = encodeChannel(1, 3, 3)
        let rg = encodeChannel(2, 3, 3)
        let alphaChannel = hasAlpha ? encodeChannel(3, 5, 5) : nil
        let isLandscape = w > h
        let header24 =
            round(63 * lum.dc) | round(31.5 + 31.5 * yb.dc) << 6 | round(31.5 + 31.5 * rg.dc) << 12
            | round(31 * lum.scale) << 18 | (hasAlpha ? 1 : 0) << 23
        let header16 = (isLandscape ? ly : lx) | round(63 * yb.scale) << 3 | round(63 * rg.scale) << 9 | (isLandscape ? 1 : 0) << 15
        var hash: [UInt8] = [
            UInt8(header24 & 255), UInt8((header24 >> 8) & 255), UInt8(header24 >> 16),
            UInt8(header16 & 255), UInt8(header16 >> 8),
        ]
        if let alphaChannel { hash.append(UInt8(round(15 * alphaChannel.dc) | round(15 * alphaChannel.scale) << 4)) }
        let acStart = hash.count
        var acIndex = 0
        for ac in [lum.ac, yb.ac, rg.ac] + (alphaChannel.map { [$0.ac] } ?? []) {
            for f in ac {
                let position = acStart + (acIndex >> 1)
                if position >= hash.count { hash.append(0) }
                hash[position] |= UInt8(round(15 * f) << ((acIndex & 1) << 2))
                acIndex += 1
            }
        }
        return Data(hash)
    }

    /// The cosines of ThumbHash's 7 frequencies at the centres of `n` pixels, computed once per side
    /// length (at most 100): computing them per image was 2% of a small image's CPU.
    private static func cosines(_ n: Int) -> [[Double]] {
        if let known = cosineTables.withLock({ $0[n] }) { return known }
        let table = (0..<7).map { c in (0..<n).map { i in cos(Double.pi / Double(n) * Double(c) * (Double(i) + 0.5)) } }
        cosineTables.withLock { $0[n] = table }
        return table
    }

    private static let cosineTables = Mutex<[[[Double]]?]>(Array(repeating: nil, count: 101))

    /// `sums[x] += values[x] * weight` for each x, four at a time: each sum takes its terms in the
    /// same order as one at a time would, so the results are the same to the last bit.
    @inline(__always)
    private static func accumulate(_ values: UnsafePointer<Double>, times weight: Double, into sums: UnsafeMutablePointer<Double>, count: Int) {
        let weights = SIMD4<Double>(repeating: weight)
        var x = 0
        while x &+ 4 <= count {
            let raw = UnsafeMutableRawPointer(sums + x)
            let sum = raw.loadUnaligned(as: SIMD4<Double>.self) + UnsafeRawPointer(values + x).loadUnaligned(as: SIMD4<Double>.self) * weights
            raw.storeBytes(of: sum, as: SIMD4<Double>.self)
            x &+= 4
        }
        while x < count {
            sums[x] += values[x] * weight
            x &+= 1
        }
    }
}

// What a page shows before an image loads: a ThumbHash and the dominant colour.
public import Foundation

/// A placeholder for one original: a ThumbHash (a ~25-byte blurred preview that keeps the aspect
/// ratio and alpha, https://evanw.github.io/thumbhash/) and the dominant colour as `#rrggbb`.
public struct Placeholder: Sendable, Codable, Equatable {
    /// The ThumbHash, base64.
    public var thumbHash: String
    /// The most common colour, `#rrggbb`: the mean of the pixels in the fullest of 4096 colour bins
    /// (4 bits per channel), transparent pixels left out, so a photo of a red car on grey asphalt
    /// gives grey, where the mean colour would give a muddy brown.
    public var color: String

    enum CodingKeys: String, CodingKey {
        case thumbHash = "thumbhash", color
    }

    /// The placeholder of an image given as at most 100x100 RGBA pixels, row by row.
    public init(width: Int, height: Int, rgba: [UInt8]) {
        thumbHash = Self.thumbHash(width: width, height: height, rgba: rgba).base64EncodedString()
        color = Self.dominantColor(rgba)
    }

    /// The dominant colour of RGBA pixels.
    static func dominantColor(_ rgba: [UInt8]) -> String {
        var counts = [Int](repeating: 0, count: 4096)
        var sums = [(Int, Int, Int)](repeating: (0, 0, 0), count: 4096)
        for index in stride(from: 0, to: rgba.count - 3, by: 4) where rgba[index + 3] >= 128 {
            let r = Int(rgba[index]), g = Int(rgba[index + 1]), b = Int(rgba[index + 2])
            let bin = (r >> 4) << 8 | (g >> 4) << 4 | b >> 4
            counts[bin] += 1
            sums[bin].0 += r
            sums[bin].1 += g
            sums[bin].2 += b
        }
        guard let fullest = counts.indices.max(by: { counts[$0] < counts[$1] }), counts[fullest] > 0 else { return "#000000" }
        let n = counts[fullest]
        return String(format: "#%02x%02x%02x", sums[fullest].0 / n, sums[fullest].1 / n, sums[fullest].2 / n)
    }

    /// ThumbHash's encoder, following the reference implementation (its rounding is JavaScript's
    /// `Math.round`, half up) so that its decoders read the hash back exactly; only its sums are
    /// taken in another order (below), and the tests compare the bytes with the reference encoder's.
    public static func thumbHash(width w: Int, height h: Int, rgba: [UInt8]) -> Data {
        precondition(w > 0 && h > 0 && w <= 100 && h <= 100 && rgba.count >= w * h * 4, "ThumbHash takes at most 100x100 pixels")
        func round(_ x: Double) -> Int { Int((x + 0.5).rounded(.down)) }
        var avgR = 0.0, avgG = 0.0, avgB = 0.0, avgA = 0.0
        for i in 0..<(w * h) {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            avgR += alpha / 255 * Double(rgba[i * 4])
            avgG += alpha / 255 * Double(rgba[i * 4 + 1])
            avgB += alpha / 255 * Double(rgba[i * 4 + 2])
            avgA += alpha
        }
        if avgA > 0 {
            avgR /= avgA
            avgG /= avgA
            avgB /= avgA
        }
        let hasAlpha = avgA < Double(w * h)
        let lLimit = hasAlpha ? 5.0 : 7.0
        let lx = max(1, round(lLimit * Double(w) / Double(max(w, h))))
        let ly = max(1, round(lLimit * Double(h) / Double(max(w, h))))
        var l = [Double](repeating: 0, count: w * h), p = l, q = l, a = l
        for i in 0..<(w * h) {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            let r = avgR * (1 - alpha) + alpha / 255 * Double(rgba[i * 4])
            let g = avgG * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 1])
            let b = avgB * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 2])
            l[i] = (r + g + b) / 3
            p[i] = (r + g) / 2 - b
            q[i] = r - g
            a[i] = alpha
        }
        // Each coefficient is a sum over the pixels of value × cos(x) × cos(y). The columns are first
        // summed against each vertical cosine (one pass over the pixels per row of coefficients), then
        // each coefficient is one pass over those sums: the reference's pass over every pixel per
        // coefficient and its cosine per pixel were a tenth of a small image's whole cost.
        let cosX = (0..<7).map { cx in (0..<w).map { x in cos(Double.pi / Double(w) * Double(cx) * (Double(x) + 0.5)) } }
        let cosY = (0..<7).map { cy in (0..<h).map { y in cos(Double.pi / Double(h) * Double(cy) * (Double(y) + 0.5)) } }
        // The sums run on raw buffers: array accesses inside these loops (bounds and uniqueness
        // checks) made the placeholder a tenth of a small image's CPU.
        let columns = UnsafeMutableBufferPointer<Double>.allocate(capacity: w)
        defer { columns.deallocate() }
        func encodeChannel(_ channel: [Double], _ nx: Int, _ ny: Int) -> (dc: Double, ac: [Double], scale: Double) {
            var dc = 0.0, ac: [Double] = [], scale = 0.0
            for cy in 0..<ny {
                columns.initialize(repeating: 0)
                channel.withUnsafeBufferPointer { pixels in
                    cosY[cy].withUnsafeBufferPointer { fy in
                        for y in 0..<h {
                            let row = y * w, weight = fy[y]
                            for x in 0..<w { columns[x] += pixels[row + x] * weight }
                        }
                    }
                }
                var cx = 0
                while cx * ny < nx * (ny - cy) {
                    var f = 0.0
                    cosX[cx].withUnsafeBufferPointer { fx in
                        for x in 0..<w { f += columns[x] * fx[x] }
                    }
                    f /= Double(w * h)
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
        let lum = encodeChannel(l, max(3, lx), max(3, ly))
        let yb = encodeChannel(p, 3, 3)
        let rg = encodeChannel(q, 3, 3)
        let alphaChannel = hasAlpha ? encodeChannel(a, 5, 5) : nil
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
}

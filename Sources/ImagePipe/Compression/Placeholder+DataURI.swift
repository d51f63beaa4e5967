// The placeholder as a picture a page shows without a script: its ThumbHash decoded to a few pixels, a PNG `data:` URI.
import Foundation

extension Placeholder {
    /// The ThumbHash's picture as a PNG `data:` URI of fewer than ``dataURILimit`` characters, at
    /// most 7 pixels on its long side: what `srcset` puts behind the `<img>` while the picture loads,
    /// and what Next.js takes as `blurDataURL` (it asks for 10 pixels or fewer). The browser's
    /// smooth enlargement of so few pixels is the blur. Nil when the ThumbHash cannot be read (a
    /// record edited by hand).
    ///
    /// Made from the ThumbHash, not recorded beside it on the wire or in an output's origin: one
    /// source of truth, nothing more for a helper to send or an origin to hold, and a record written
    /// before it existed gets the same picture as a new one. Made again for each record written, at
    /// about 5 µs (docs/performance.md, "Small images").
    public var dataURI: String? {
        guard let bytes = Data(base64Encoded: thumbHash), let picture = ThumbHashPicture([UInt8](bytes)) else { return nil }
        return picture.dataURI()
    }

    /// Whether the ThumbHash says the original has no transparent pixel. A picture behind a
    /// transparent original would stay visible through it once it loads, so the HTML gives such an
    /// original its colour alone.
    public var isOpaque: Bool {
        // The alpha flag is the top bit of the hash's third byte.
        guard let bytes = Data(base64Encoded: thumbHash), bytes.count >= 3 else { return true }
        return bytes[bytes.startIndex + 2] & 0x80 == 0
    }

    /// ``dataURI`` is shorter than this: Next.js's and sharp users' tiny placeholders are about
    /// this size, small enough to inline in every record and page.
    public static let dataURILimit = 300
}

/// A ThumbHash read back, following the reference decoder (`thumbHashToRGBA`), evaluated on a grid of
/// any size rather than its 32 pixels.
struct ThumbHashPicture {
    private let lDC: Double, pDC: Double, qDC: Double, aDC: Double
    private let lx: Int, ly: Int
    private let hasAlpha: Bool
    private let lAC: [Double], pAC: [Double], qAC: [Double], aAC: [Double]
    /// Width over height, as the hash approximates it (its coefficients' counts along each side).
    let ratio: Double

    /// Nil for bytes no ThumbHash encoder writes: too short for their header's coefficients, or
    /// with no coefficient on the short side.
    init?(_ hash: [UInt8]) {
        guard hash.count >= 5 else { return nil }
        let header24 = Int(hash[0]) | Int(hash[1]) << 8 | Int(hash[2]) << 16
        let header16 = Int(hash[3]) | Int(hash[4]) << 8
        lDC = Double(header24 & 63) / 63
        pDC = Double((header24 >> 6) & 63) / 31.5 - 1
        qDC = Double((header24 >> 12) & 63) / 31.5 - 1
        let lScale = Double((header24 >> 18) & 31) / 31
        hasAlpha = header24 >> 23 != 0
        let pScale = Double((header16 >> 3) & 63) / 63, qScale = Double((header16 >> 9) & 63) / 63
        let isLandscape = header16 >> 15 != 0
        // The encoder writes the short side's count (1...7) and implies the long side's.
        let short = header16 & 7, long = hasAlpha ? 5 : 7
        guard short > 0, !hasAlpha || hash.count >= 6 else { return nil }
        ratio = isLandscape ? Double(long) / Double(short) : Double(short) / Double(long)
        lx = max(3, isLandscape ? long : short)
        ly = max(3, isLandscape ? short : long)
        aDC = hasAlpha ? Double(hash[5] & 15) / 15 : 1
        let aScale = hasAlpha ? Double(hash[5] >> 4) / 15 : 0
        // The AC coefficients, a nibble each, channel after channel.
        var index = 0
        let start = hasAlpha ? 6 : 5
        func channel(_ nx: Int, _ ny: Int, _ scale: Double) -> [Double]? {
            var ac: [Double] = []
            for cy in 0..<ny {
                var cx = cy > 0 ? 0 : 1
                while cx * ny < nx * (ny - cy) {
                    let at = start + (index >> 1)
                    guard at < hash.count else { return nil }
                    ac.append((Double((Int(hash[at]) >> ((index & 1) << 2)) & 15) / 7.5 - 1) * scale)
                    index += 1
                    cx += 1
                }
            }
            return ac
        }
        guard let l = channel(lx, ly, lScale), let p = channel(3, 3, pScale * 1.25), let q = channel(3, 3, qScale * 1.25),
            let a = hasAlpha ? channel(5, 5, aScale) : []
        else { return nil }
        (lAC, pAC, qAC, aAC) = (l, p, q, a)
    }

    /// The PNG `data:` URI of the largest grid of the hash's ratio, at most 7 pixels on its long side,
    /// whose URI is shorter than ``Placeholder/dataURILimit``. The hash holds at most 7 luminance
    /// coefficients along a side, so more pixels would add no detail, only the smoothness the
    /// browser's enlargement gives anyway; 7x6 fits, a square 7x7 (or 7x5 with alpha) does not.
    func dataURI() -> String {
        let channels = hasAlpha ? 4 : 3
        var long = 7
        var size = grid(long: long)
        while long > 1, Self.uriLength(width: size.width, height: size.height, channels: channels) >= Placeholder.dataURILimit {
            long -= 1
            size = grid(long: long)
        }
        let png = TinyPNG.encode(width: size.width, height: size.height, channels: channels, pixels: pixels(width: size.width, height: size.height))
        return Self.prefix + Data(png).base64EncodedString()
    }

    private static let prefix = "data:image/png;base64,"

    /// The grid whose long side is `long` pixels, in the hash's ratio (as the reference sizes its 32).
    private func grid(long: Int) -> (width: Int, height: Int) {
        ratio > 1
            ? (long, max(1, Int((Double(long) / ratio).rounded())))
            : (max(1, Int((Double(long) * ratio).rounded())), long)
    }

    /// The length of the URI of a grid's PNG: the prefix and the base64 of ``TinyPNG/size(width:height:channels:)`` bytes.
    static func uriLength(width: Int, height: Int, channels: Int) -> Int {
        prefix.utf8.count + 4 * ((TinyPNG.size(width: width, height: height, channels: channels) + 2) / 3)
    }

    /// The picture's pixels (RGB, or RGBA when the hash has alpha), row by row, each evaluated at
    /// its centre as the reference decoder does, rounded to the nearest level.
    func pixels(width w: Int, height h: Int) -> [UInt8] {
        let channels = hasAlpha ? 4 : 3
        var out: [UInt8] = []
        out.reserveCapacity(w * h * channels)
        let columns = max(lx, hasAlpha ? 5 : 3), rows = max(ly, hasAlpha ? 5 : 3)
        // The cosines of each column and row, computed once rather than per pixel as the reference does.
        let cosX = Self.cosines(count: w, frequencies: columns), cosY = Self.cosines(count: h, frequencies: rows)
        func level(_ value: Double) -> UInt8 { UInt8((255 * min(1, max(0, value))).rounded()) }
        for y in 0..<h {
            let fyAt = y * rows
            for x in 0..<w {
                let fxAt = x * columns
                var l = lDC, p = pDC, q = qDC, a = aDC
                var j = 0
                for cy in 0..<ly {
                    var cx = cy > 0 ? 0 : 1
                    let fy2 = cosY[fyAt + cy] * 2
                    while cx * ly < lx * (ly - cy) {
                        l += lAC[j] * cosX[fxAt + cx] * fy2
                        cx += 1
                        j += 1
                    }
                }
                j = 0
                for cy in 0..<3 {
                    let fy2 = cosY[fyAt + cy] * 2
                    for cx in (cy > 0 ? 0 : 1)..<(3 - cy) {
                        let f = cosX[fxAt + cx] * fy2
                        p += pAC[j] * f
                        q += qAC[j] * f
                        j += 1
                    }
                }
                if hasAlpha {
                    j = 0
                    for cy in 0..<5 {
                        let fy2 = cosY[fyAt + cy] * 2
                        for cx in (cy > 0 ? 0 : 1)..<(5 - cy) {
                            a += aAC[j] * cosX[fxAt + cx] * fy2
                            j += 1
                        }
                    }
                }
                let b = l - 2.0 / 3 * p
                let r = (3 * l - b + q) / 2
                let g = r - q
                out.append(level(r))
                out.append(level(g))
                out.append(level(b))
                if hasAlpha { out.append(level(a)) }
            }
        }
        return out
    }

    /// cos(π / count × (i + 0.5) × c) for each of `count` pixels (rows of `frequencies`), each row
    /// from one cosine by cos(cθ) = 2 cos θ cos((c-1)θ) − cos((c-2)θ): a fifth of the picture's cost
    /// was computing each one, and the two differ by about 1e-16.
    private static func cosines(count: Int, frequencies: Int) -> [Double] {
        var table = [Double](repeating: 1, count: count * frequencies)
        for i in 0..<count {
            let first = cos(Double.pi / Double(count) * (Double(i) + 0.5)), row = i * frequencies
            if frequencies > 1 { table[row + 1] = first }
            for c in stride(from: 2, to: frequencies, by: 1) { table[row + c] = 2 * first * table[row + c - 1] - table[row + c - 2] }
        }
        return table
    }
}

/// A PNG writer for pictures of a few dozen pixels: 8-bit RGB or RGBA, rows unfiltered, the image
/// data in one stored (uncompressed) deflate block. At this size zlib's best compression stores the
/// block too, so this is as small as a PNG of them gets, with no library.
enum TinyPNG {
    /// The file's size: signature, IHDR, IDAT (zlib header, stored block header, rows, Adler-32), IEND.
    static func size(width: Int, height: Int, channels: Int) -> Int {
        8 + 25 + 12 + 2 + 5 + height * (1 + width * channels) + 4 + 12
    }

    /// The file of `pixels` (`channels` bytes a pixel, row by row); at most 65,535 bytes of rows.
    /// Written into one buffer of its exact size, each chunk's CRC over the bytes in place: the
    /// copies of chunk by chunk assembly were half of the picture's cost.
    static func encode(width: Int, height: Int, channels: Int, pixels: [UInt8]) -> [UInt8] {
        let rowBytes = width * channels, rowsLength = height * (1 + rowBytes)
        precondition(rowsLength <= 65_535 && pixels.count >= height * rowBytes, "one stored deflate block")
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        png.reserveCapacity(size(width: width, height: height, channels: channels))
        // Width, height, bit depth 8, colour type 2 (RGB) or 6 (RGBA), deflate, no filter method, no interlace.
        var start = beginChunk("IHDR", length: 13, in: &png)
        appendBigEndian(UInt32(width), to: &png)
        appendBigEndian(UInt32(height), to: &png)
        png += [8, channels == 4 ? 6 : 2, 0, 0, 0]
        endChunk(from: start, in: &png)
        // zlib: deflate with a 32 KiB window and no dictionary (0x78 0x01 is a multiple of 31), then
        // one final stored block (its length and the length's complement, little-endian), the rows
        // (each after its filter type, None), and the rows' Adler-32.
        start = beginChunk("IDAT", length: 2 + 5 + rowsLength + 4, in: &png)
        let length = UInt16(rowsLength)
        png += [0x78, 0x01, 0x01, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)]
        let rowsStart = png.count
        for y in 0..<height {
            png.append(0)
            png += pixels[y * rowBytes..<(y + 1) * rowBytes]
        }
        appendBigEndian(png.withUnsafeBufferPointer { adler32(UnsafeBufferPointer(rebasing: $0[rowsStart...])) }, to: &png)
        endChunk(from: start, in: &png)
        start = beginChunk("IEND", length: 0, in: &png)
        endChunk(from: start, in: &png)
        return png
    }

    /// Appends a chunk's length and type; returns where its type starts, where its CRC's bytes do.
    private static func beginChunk(_ type: StaticString, length: Int, in png: inout [UInt8]) -> Int {
        appendBigEndian(UInt32(length), to: &png)
        let start = png.count
        png += UnsafeBufferPointer(start: type.utf8Start, count: type.utf8CodeUnitCount)
        return start
    }

    /// Appends the CRC of the chunk's type and data.
    private static func endChunk(from start: Int, in png: inout [UInt8]) {
        appendBigEndian(png.withUnsafeBufferPointer { crc32(UnsafeBufferPointer(rebasing: $0[start...])) }, to: &png)
    }

    private static func appendBigEndian(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    static func adler32(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }

    /// CRC-32 (ISO 3309, as PNG and zlib use it), a byte at a time from a table.
    static func crc32(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return ~crc
    }

    private static let crcTable: [UInt32] = (0..<256).map { (value: UInt32) in
        var crc = value
        for _ in 0..<8 { crc = crc & 1 != 0 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        return crc
    }
}

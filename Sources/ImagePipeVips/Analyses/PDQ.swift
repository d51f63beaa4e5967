// Meta's PDQ perceptual hash of a decode, computed the way the reference implementation computes it.
import Foundation

/// A PDQ hash and the quality the reference reports with it.
package struct PDQResult: Sendable, Equatable {
    /// The 256 bits as 64 lowercase hex digits, in the reference's `Hash256::format` order.
    package var hex: String
    /// How much detail the hash rests on, 0–100.
    package var quality: Int
}

/// Meta's PDQ hash: luma, a tent blur (box filters along rows then columns, twice), 64x64 samples,
/// the 16x16 lowest frequencies of their DCT, and one bit per frequency for whether it is above
/// their median. Each step follows the reference (Meta's `pdqhashing.cpp` and `downscaling.cpp`,
/// which the `pdqhash` Python package wraps) down to the order of its float operations: a picture
/// repeated along one axis has half its frequencies at rounding noise, and their bits are the
/// reference's only when the noise is the same. Only the order of the loops differs, so that they
/// run over whole rows.
package enum PDQ {
    /// The longer side a larger picture is averaged down to before it is hashed. The blur reads
    /// every pixel of its input, so a 24-megapixel decode would cost tens of milliseconds; at this
    /// size it costs under one, and the hash of a full-size photo stays within about 10 bits of
    /// the reference's on average (two pictures are the same for PDQ up to 31).
    package static let workingSide = 640

    /// The reference hashes a picture narrower or shorter than this as all zeros, of quality 0.
    static let minimumSide = 5

    /// The hash of interleaved 8-bit pixels, 3 (RGB) or 4 (RGBA, alpha ignored) bands, rows of
    /// `width * bands` bytes; averaged down to ``workingSide`` first when larger. Nil for any
    /// other band count or an empty picture.
    package static func hash(pixels: UnsafePointer<UInt8>, width: Int, height: Int, bands: Int) -> PDQResult? {
        guard bands == 3 || bands == 4, width > 0, height > 0 else { return nil }
        let longer = max(width, height)
        guard longer > workingSide else { return fullSizeHash(pixels: pixels, width: width, height: height, bands: bands) }
        // Both sides shrink by the same factor, as the placeholder's do; a side never drops under
        // the reference's minimum because of it, which would turn a thin strip's hash into zeros.
        let scale = Double(longer) / Double(workingSide)
        let outWidth = max(min(width, minimumSide), Int((Double(width) / scale).rounded()))
        let outHeight = max(min(height, minimumSide), Int((Double(height) / scale).rounded()))
        let buffers = UnsafeMutablePointer<Float>.allocate(capacity: 2 * outWidth * outHeight)
        defer { buffers.deallocate() }
        // One copy of the averaging per layout, so the band count is a constant inside it; 16-bit
        // sums take half the work of 32-bit ones, and hold any block of up to 257 pixels.
        let largestBlock = ((height + outHeight - 1) / outHeight) * ((width + outWidth - 1) / outWidth)
        switch (bands, largestBlock <= 257) {
        case (4, true): blockMeanLuma(pixels, width, height, 4, UInt16.self, into: buffers, outWidth, outHeight)
        case (4, false): blockMeanLuma(pixels, width, height, 4, UInt32.self, into: buffers, outWidth, outHeight)
        case (_, true): blockMeanLuma(pixels, width, height, 3, UInt16.self, into: buffers, outWidth, outHeight)
        default: blockMeanLuma(pixels, width, height, 3, UInt32.self, into: buffers, outWidth, outHeight)
        }
        return hash(columnMajorLuma: buffers, scratch: buffers + outWidth * outHeight, rows: outHeight, columns: outWidth)
    }

    /// The hash of the pixels as they are, however large: the reference's own computation, bit for
    /// bit `pdqhash`'s, which ``hash(pixels:width:height:bands:)`` runs on a picture of at most
    /// ``workingSide``.
    package static func fullSizeHash(pixels: UnsafePointer<UInt8>, width: Int, height: Int, bands: Int) -> PDQResult? {
        guard bands == 3 || bands == 4, width > 0, height > 0 else { return nil }
        let count = width * height
        let buffers = UnsafeMutablePointer<Float>.allocate(capacity: 2 * count)
        defer { buffers.deallocate() }
        writeTransposed(rows: height, columns: width, into: buffers) { y, row in
            var pixel = pixels + y * width * bands
            for x in 0..<width {
                // In double, rounded to float once: `pdqhash` computes the luma with numpy from
                // the 8-bit array (the C++ reference's own reader works in float).
                row[x] = Float(Double(pixel[0]) * 0.299 + Double(pixel[1]) * 0.587 + Double(pixel[2]) * 0.114)
                pixel += bands
            }
        }
        return hash(columnMajorLuma: buffers, scratch: buffers + count, rows: height, columns: width)
    }

    // MARK: - The reference's computation

    /// The hash of a picture's luma, stored column by column (`luma[x * rows + y]`), which it
    /// overwrites, with `scratch` as large for the blur.
    static func hash(columnMajorLuma luma: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>, rows: Int, columns: Int) -> PDQResult {
        guard rows >= minimumSide, columns >= minimumSide else {
            return PDQResult(hex: String(repeating: "0", count: 64), quality: 0)
        }
        let samples = UnsafeMutablePointer<Float>.allocate(capacity: 64 * 64)
        defer { samples.deallocate() }
        if rows == 64, columns == 64 {
            // The reference takes a 64x64 picture as its samples, unblurred (a video frame its
            // caller has already scaled).
            transpose(luma, rows: 64, columns: 64, into: samples, stride: 64)
        } else {
            blurAndSample(luma, scratch: scratch, rows: rows, columns: columns, into: samples)
        }
        let quality = Self.quality(of: samples)
        return PDQResult(hex: hex(of: dct(of: samples)), quality: quality)
    }

    /// The reference's Jarosz filter (a box filter along the rows, then along the columns, twice)
    /// and its decimation to the 64x64 samples, the pixels at `Int((i + 0.5) * side / 64)`.
    ///
    /// A box filter adds a line's worth of values to its running sums at each step, so it runs
    /// along whichever axis is the outer one of the layout: each of the first two passes writes
    /// its result transposed, for the next. The last two compute only what the samples need: the
    /// running sums along the rows go through every column, but only the 64 sampled columns are
    /// divided out, and the last pass runs over those alone.
    static func blurAndSample(
        _ luma: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>, rows: Int, columns: Int,
        into samples: UnsafeMutablePointer<Float>
    ) {
        let alongRows = windowSize(columns), alongColumns = windowSize(rows)
        let sampledRows = (0..<64).map { Int((Double($0) + 0.5) * Double(rows) / 64) }
        let sampledColumns = (0..<64).map { Int((Double($0) + 0.5) * Double(columns) / 64) }
        let longer = max(rows, columns, 64)
        let work = UnsafeMutablePointer<Float>.allocate(capacity: 2 * 64 * rows + 5 * longer)
        defer { work.deallocate() }
        let picked = work, pickedByRow = work + 64 * rows, runningSums = pickedByRow + 64 * rows, staging = runningSums + longer

        // First round: along the rows (the columns-first picture's lines), then along the columns.
        boxFilterTransposing(luma, lines: columns, length: rows, window: alongRows, sums: runningSums, staging: staging, into: scratch)
        boxFilterTransposing(scratch, lines: rows, length: columns, window: alongColumns, sums: runningSums, staging: staging, into: luma)

        // Second round, along the rows: only the sampled columns are kept, as rows of `picked`.
        let firstPick = firstIndices(sampledColumns, count: columns)
        boxFilter(luma, lines: columns, length: rows, window: alongRows, sums: runningSums) { column in
            firstPick[column] < 0 ? nil : picked + firstPick[column] * rows
        }
        // A picture narrower than 64 samples some columns more than once.
        for j in 1..<64 where sampledColumns[j] == sampledColumns[j - 1] {
            (picked + j * rows).update(from: picked + (j - 1) * rows, count: rows)
        }

        // Along the columns, of the sampled columns only, keeping the sampled rows.
        transpose(picked, rows: 64, columns: rows, into: pickedByRow, stride: 64)
        let firstRow = firstIndices(sampledRows, count: rows)
        boxFilter(pickedByRow, lines: rows, length: 64, window: alongColumns, sums: runningSums) { row in
            firstRow[row] < 0 ? nil : samples + firstRow[row] * 64
        }
        for i in 1..<64 where sampledRows[i] == sampledRows[i - 1] {
            (samples + i * 64).update(from: samples + (i - 1) * 64, count: 64)
        }
    }

    /// For each of `count` lines, the first sample taken from it, or -1.
    static func firstIndices(_ sampled: [Int], count: Int) -> [Int] {
        var firsts = [Int](repeating: -1, count: count)
        for (index, line) in sampled.enumerated().reversed() { firsts[line] = index }
        return firsts
    }

    /// The reference's window for one axis: half the side of the pixels a sample stands for, so
    /// that two passes of it cover them all.
    static func windowSize(_ side: Int) -> Int {
        (side + 2 * 64 - 1) / (2 * 64)
    }

    /// The reference's quality: the sum of the steps between neighbouring samples, each in whole
    /// percent of the 8-bit range (truncated, so faint noise counts for nothing), scaled so that
    /// a picture with real detail reaches 100.
    static func quality(of samples: UnsafePointer<Float>) -> Int {
        var total = 0
        for i in 0..<63 {
            for j in 0..<64 { total += abs(Int((samples[i * 64 + j] - samples[(i + 1) * 64 + j]) * 100 / 255)) }
        }
        for i in 0..<64 {
            for j in 0..<63 { total += abs(Int((samples[i * 64 + j] - samples[i * 64 + j + 1]) * 100 / 255)) }
        }
        return min(100, total / 90)
    }

    /// The reference's DCT matrix: its 16 lowest frequencies after the constant one, over 64
    /// samples, computed in double and stored as float as the reference stores it.
    static let dctMatrix: [Float] = {
        let factor = Double(Float((2.0 / 64.0).squareRoot()))
        var matrix = [Float](repeating: 0, count: 16 * 64)
        for i in 0..<16 {
            for j in 0..<64 { matrix[i * 64 + j] = Float(factor * cos(Double.pi / 2 / 64 * Double(i + 1) * Double(2 * j + 1))) }
        }
        return matrix
    }()

    /// The same transposed, so that the second product's innermost loop runs along a row.
    static let dctMatrixTransposed: [Float] = (0..<(64 * 16)).map { dctMatrix[($0 % 16) * 64 + $0 / 16] }

    /// The 16x16 block `D * A * Dᵀ` of the samples' DCT. Each sum runs over k in the reference's
    /// order, so the results are its own; the loops run along rows so that they vectorize.
    static func dct(of samples: UnsafePointer<Float>) -> [Float] {
        var result = [Float](repeating: 0, count: 16 * 16)
        let half = UnsafeMutablePointer<Float>.allocate(capacity: 16 * 64)
        defer { half.deallocate() }
        half.initialize(repeating: 0, count: 16 * 64)
        dctMatrix.withUnsafeBufferPointer { matrix in
            // T = D * A, a row of T at a time: T[i][·] += D[i][k] * A[k][·].
            for i in 0..<16 {
                let row = half + i * 64
                for k in 0..<64 {
                    let weight = matrix[i * 64 + k], line = samples + k * 64
                    for j in 0..<64 { row[j] += weight * line[j] }
                }
            }
        }
        dctMatrixTransposed.withUnsafeBufferPointer { transposed in
            result.withUnsafeMutableBufferPointer { result in
                // B = T * Dᵀ: B[i][·] += T[i][k] * Dᵀ[k][·].
                for i in 0..<16 {
                    for k in 0..<64 {
                        let weight = half[i * 64 + k]
                        for j in 0..<16 { result[i * 16 + j] += weight * transposed[k * 16 + j] }
                    }
                }
            }
        }
        return result
    }

    /// The hash's hex digits: bit `i * 16 + j` set when coefficient (i, j) is above the median.
    /// The reference's median (Torben's method) is the lower middle value of the 256, so the bits
    /// set are the 128 largest (fewer when values tie).
    static func hex(of coefficients: [Float]) -> String {
        let median = coefficients.sorted()[127]
        var words = [UInt16](repeating: 0, count: 16)
        for (k, value) in coefficients.enumerated() where value > median {
            words[k >> 4] |= 1 << UInt16(k & 15)
        }
        // Hash256::format: word 15 first, each as four digits.
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(64)
        for word in words.reversed() {
            for shift in stride(from: 12, through: 0, by: -4) { text.append(digits[Int((word >> UInt16(shift)) & 15)]) }
        }
        return String(decoding: text, as: UTF8.self)
    }
}

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

    // MARK: - Averaging down

    /// Writes the luma of the integer mean of each block of `pixels` into `luma`, column by column
    /// (``hash(columnMajorLuma:scratch:rows:columns:)``'s layout). The blocks are the placeholder's:
    /// output pixel (x, y) averages the source columns from `x * width / outWidth` and the rows
    /// from `y * height / outHeight` up to the next ones.
    ///
    /// A block's rows are summed into one row of `Accumulator`s first; the sums of every run of
    /// `k` and `k + 1` neighbouring pixels (`k` the narrowest block's width) come next, from
    /// shifted copies of that row, and each block's sums are then read at its first pixel. Every
    /// step but that read is a loop over a whole row, which the compiler vectorizes: summing each
    /// block's pixels one by one took three quarters of the time of the whole hash.
    @inline(__always)
    private static func blockMeanLuma<Accumulator: FixedWidthInteger & UnsignedInteger>(
        _ pixels: UnsafePointer<UInt8>, _ width: Int, _ height: Int, _ bands: Int, _: Accumulator.Type,
        into luma: UnsafeMutablePointer<Float>, _ outWidth: Int, _ outHeight: Int
    ) {
        let rowLength = width * bands, narrowest = width / outWidth, shortest = height / outHeight
        let columnSums = UnsafeMutablePointer<Accumulator>.allocate(capacity: rowLength)
        // The runs of `k` pixels, then those of `k + 1`.
        let runSums = UnsafeMutablePointer<Accumulator>.allocate(capacity: 2 * rowLength)
        let channelSums = UnsafeMutablePointer<Accumulator>.allocate(capacity: 3 * outWidth)
        let firsts = UnsafeMutablePointer<Int>.allocate(capacity: outWidth)
        let reciprocals = UnsafeMutablePointer<Float>.allocate(capacity: 2 * outWidth)
        defer {
            columnSums.deallocate()
            runSums.deallocate()
            channelSums.deallocate()
            firsts.deallocate()
            reciprocals.deallocate()
        }
        var anyWide = false
        for x in 0..<outWidth {
            let left = x * width / outWidth, wide = (x + 1) * width / outWidth - left > narrowest
            anyWide = anyWide || wide
            firsts[x] = (wide ? rowLength : 0) + left * bands
            // Blocks are one of two heights, `shortest` rows or one more.
            let columns = Float(wide ? narrowest + 1 : narrowest)
            reciprocals[x] = 1 / (Float(shortest) * columns)
            reciprocals[outWidth + x] = 1 / (Float(shortest + 1) * columns)
        }
        // The means are taken in float, exact while a block has under about 10,000 pixels (see
        // floorOfQuotient); larger blocks, of sources some 58,000 pixels a side, divide as integers.
        let floatMeans = (shortest + 1) * (narrowest + 1) <= 8192
        let narrowRuns = rowLength - (narrowest - 1) * bands, wideRuns = rowLength - narrowest * bands
        let reds = channelSums, greens = channelSums + outWidth, blues = channelSums + 2 * outWidth
        writeTransposed(rows: outHeight, columns: outWidth, into: luma) { y, row in
            let top = y * height / outHeight, bottom = (y + 1) * height / outHeight
            sumRows(pixels, from: top, to: bottom, rowLength: rowLength, into: columnSums)
            if narrowest > 1 {
                let second = columnSums + bands
                for i in 0..<narrowRuns { runSums[i] = columnSums[i] &+ second[i] }
                for shift in stride(from: 2 * bands, to: narrowest * bands, by: bands) {
                    let shifted = columnSums + shift
                    for i in 0..<narrowRuns { runSums[i] &+= shifted[i] }
                }
            } else {
                runSums.update(from: columnSums, count: rowLength)
            }
            if anyWide {
                let wide = runSums + rowLength, next = columnSums + narrowest * bands
                for i in 0..<wideRuns { wide[i] = runSums[i] &+ next[i] }
            }
            for x in 0..<outWidth {
                let sums = runSums + firsts[x]
                reds[x] = sums[0]
                greens[x] = sums[1]
                blues[x] = sums[2]
            }
            let rows = bottom - top
            if floatMeans {
                let reciprocal = reciprocals + (rows == shortest ? 0 : outWidth)
                for x in 0..<outWidth {
                    let red = floorOfQuotient(Float(reds[x]), reciprocal[x])
                    let green = floorOfQuotient(Float(greens[x]), reciprocal[x])
                    let blue = floorOfQuotient(Float(blues[x]), reciprocal[x])
                    // The C++ reference's luma, in float.
                    row[x] = 0.299 * red + 0.587 * green + 0.114 * blue
                }
            } else {
                for x in 0..<outWidth {
                    let count = Accumulator(rows * ((x + 1) * width / outWidth - x * width / outWidth))
                    row[x] = 0.299 * Float(reds[x] / count) + 0.587 * Float(greens[x] / count) + 0.114 * Float(blues[x] / count)
                }
            }
        }
    }

    /// Sums rows `top..<bottom` of `pixels` into `sums`, two or three rows a pass: each pass reads
    /// and writes the sums once, and most blocks are two or three rows tall.
    @inline(__always)
    private static func sumRows<Accumulator: FixedWidthInteger & UnsignedInteger>(
        _ pixels: UnsafePointer<UInt8>, from top: Int, to bottom: Int, rowLength: Int, into sums: UnsafeMutablePointer<Accumulator>
    ) {
        var row = top
        let a = pixels + top * rowLength, b = a + rowLength, c = b + rowLength
        switch bottom - top {
        case 1:
            for i in 0..<rowLength { sums[i] = Accumulator(a[i]) }
            row += 1
        case 2:
            for i in 0..<rowLength { sums[i] = Accumulator(a[i]) &+ Accumulator(b[i]) }
            row += 2
        default:
            for i in 0..<rowLength { sums[i] = Accumulator(a[i]) &+ Accumulator(b[i]) &+ Accumulator(c[i]) }
            row += 3
        }
        while bottom - row >= 2 {
            let a = pixels + row * rowLength, b = a + rowLength
            for i in 0..<rowLength { sums[i] &+= Accumulator(a[i]) &+ Accumulator(b[i]) }
            row += 2
        }
        if row < bottom {
            let a = pixels + row * rowLength
            for i in 0..<rowLength { sums[i] &+= Accumulator(a[i]) }
        }
    }

    /// `floor(sum / n)` as a float, from `reciprocal` = 1/n, without a conversion to an integer
    /// (which the compiler will not vectorize). `(sum + 0.5) / n - 0.5` lies strictly between
    /// `q - 0.5` and `q + 0.5` for `q` the integer quotient, at least `0.5 / n` from either, so
    /// rounding it to the nearest integer gives `q`. Adding and taking away 1.5 × 2^23 rounds it;
    /// the float arithmetic before is off by under 5e-5, less than `0.5 / n` while n < 10,000.
    @inline(__always)
    private static func floorOfQuotient(_ sum: Float, _ reciprocal: Float) -> Float {
        let rounder: Float = 12_582_912
        return (((sum + 0.5) * reciprocal - 0.5) + rounder) - rounder
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
    private static func blurAndSample(
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
    private static func firstIndices(_ sampled: [Int], count: Int) -> [Int] {
        var firsts = [Int](repeating: -1, count: count)
        for (index, line) in sampled.enumerated().reversed() { firsts[line] = index }
        return firsts
    }

    /// The reference's window for one axis: half the side of the pixels a sample stands for, so
    /// that two passes of it cover them all.
    static func windowSize(_ side: Int) -> Int {
        (side + 2 * 64 - 1) / (2 * 64)
    }

    /// A full box filter pass whose result goes to `output` transposed (line i's value j at
    /// `output[j * lines + i]`), for the next pass to run across it. Lines come out four at a
    /// time into `staging`, and go on as 4x4 blocks while they are still in the cache.
    private static func boxFilterTransposing(
        _ input: UnsafePointer<Float>, lines: Int, length: Int, window: Int, sums: UnsafeMutablePointer<Float>,
        staging: UnsafeMutablePointer<Float>, into output: UnsafeMutablePointer<Float>
    ) {
        boxFilter(input, lines: lines, length: length, window: window, sums: sums) { line in
            staging + (line & 3) * length
        } written: { line in
            if line & 3 == 3 || line == lines - 1 {
                let first = line & ~3
                transpose(staging, rows: line - first + 1, columns: length, into: output + first, stride: lines)
            }
        }
    }

    /// Calls `fill` for each row of a `rows` x `columns` picture, with a row to write, and stores
    /// the rows column by column in `output`, four at a time, as ``boxFilterTransposing`` does.
    @inline(__always)
    private static func writeTransposed(
        rows: Int, columns: Int, into output: UnsafeMutablePointer<Float>, fill: (Int, UnsafeMutablePointer<Float>) -> Void
    ) {
        let staging = UnsafeMutablePointer<Float>.allocate(capacity: 4 * columns)
        defer { staging.deallocate() }
        for y in 0..<rows {
            fill(y, staging + (y & 3) * columns)
            if y & 3 == 3 || y == rows - 1 {
                let first = y & ~3
                transpose(staging, rows: y - first + 1, columns: columns, into: output + first, stride: rows)
            }
        }
    }

    /// The reference's box filter (`box1DFloat`) along `lines` lines of `length` values each, all
    /// lines at once: each step adds a whole line to the running sums, so the loop over the line
    /// is the vectorized one. Near either end the window shrinks rather than reading past it (the
    /// reference's four phases: fill, grow, slide, shrink). `output` gives where each line's
    /// means go, nil for a line not needed, whose sums are only carried on; `written` hears of
    /// each line written.
    @inline(__always)
    private static func boxFilter(
        _ input: UnsafePointer<Float>, lines: Int, length: Int, window: Int, sums: UnsafeMutablePointer<Float>,
        output: (Int) -> UnsafeMutablePointer<Float>?, written: (Int) -> Void = { _ in }
    ) {
        let half = (window + 2) / 2
        sums.initialize(repeating: 0, count: length)
        var added = 0, removed = 0, next = 0, size = 0
        for _ in 0..<(half - 1) {
            add(input + added * length, to: sums, length)
            added += 1
            size += 1
        }
        for _ in 0..<(window - half + 1) {
            add(input + added * length, to: sums, length)
            added += 1
            size += 1
            if let line = output(next) {
                divide(sums, by: size, into: line, length)
                written(next)
            }
            next += 1
        }
        for _ in 0..<max(0, lines - window) {
            let entering = input + added * length, leaving = input + removed * length
            if let line = output(next) {
                slide(sums, adding: entering, removing: leaving, length, dividingBy: size, into: line)
                written(next)
            } else {
                slide(sums, adding: entering, removing: leaving, length)
            }
            added += 1
            removed += 1
            next += 1
        }
        for _ in 0..<(half - 1) {
            subtract(input + removed * length, from: sums, length)
            removed += 1
            size -= 1
            if let line = output(next) {
                divide(sums, by: size, into: line, length)
                written(next)
            }
            next += 1
        }
    }

    @inline(__always)
    private static func add(_ line: UnsafePointer<Float>, to sums: UnsafeMutablePointer<Float>, _ length: Int) {
        for i in 0..<length { sums[i] += line[i] }
    }

    @inline(__always)
    private static func subtract(_ line: UnsafePointer<Float>, from sums: UnsafeMutablePointer<Float>, _ length: Int) {
        for i in 0..<length { sums[i] -= line[i] }
    }

    /// The middle phase's step, in the reference's order: add the entering value, then take away
    /// the leaving one.
    @inline(__always)
    private static func slide(
        _ sums: UnsafeMutablePointer<Float>, adding entering: UnsafePointer<Float>, removing leaving: UnsafePointer<Float>, _ length: Int
    ) {
        for i in 0..<length { sums[i] = (sums[i] + entering[i]) - leaving[i] }
    }

    /// The same, writing the means too (one loop, so the sums are read once).
    @inline(__always)
    private static func slide(
        _ sums: UnsafeMutablePointer<Float>, adding entering: UnsafePointer<Float>, removing leaving: UnsafePointer<Float>, _ length: Int,
        dividingBy size: Int, into output: UnsafeMutablePointer<Float>
    ) {
        if size & (size - 1) == 0 {
            let reciprocal = 1 / Float(size)
            for i in 0..<length {
                let sum = (sums[i] + entering[i]) - leaving[i]
                sums[i] = sum
                output[i] = sum * reciprocal
            }
        } else {
            let divisor = Float(size)
            for i in 0..<length {
                let sum = (sums[i] + entering[i]) - leaving[i]
                sums[i] = sum
                output[i] = sum / divisor
            }
        }
    }

    /// The means of a window of `size` values. A true division, as the reference's: a
    /// multiplication by the reciprocal is a unit in the last place off a third of the time,
    /// enough to flip bits that rest on rounding noise. A power of two's reciprocal is exact.
    @inline(__always)
    private static func divide(_ sums: UnsafeMutablePointer<Float>, by size: Int, into output: UnsafeMutablePointer<Float>, _ length: Int) {
        if size & (size - 1) == 0 {
            let reciprocal = 1 / Float(size)
            for i in 0..<length { output[i] = sums[i] * reciprocal }
        } else {
            let divisor = Float(size)
            for i in 0..<length { output[i] = sums[i] / divisor }
        }
    }

    /// Writes the transpose of a `rows` x `columns` matrix into `output`, whose rows are `stride`
    /// apart (value (y, x) to `output[x * stride + y]`), 4x4 blocks at a time: four rows read and
    /// four columns written as whole vectors. A value at a time cost three times as much.
    private static func transpose(
        _ input: UnsafePointer<Float>, rows: Int, columns: Int, into output: UnsafeMutablePointer<Float>, stride: Int
    ) {
        let fullRows = rows & ~3, fullColumns = columns & ~3
        let from = UnsafeRawPointer(input), to = UnsafeMutableRawPointer(output)
        let size = MemoryLayout<Float>.stride
        for y in Swift.stride(from: 0, to: fullRows, by: 4) {
            for x in Swift.stride(from: 0, to: fullColumns, by: 4) {
                let a = from.loadUnaligned(fromByteOffset: (y * columns + x) * size, as: SIMD4<Float>.self)
                let b = from.loadUnaligned(fromByteOffset: ((y + 1) * columns + x) * size, as: SIMD4<Float>.self)
                let c = from.loadUnaligned(fromByteOffset: ((y + 2) * columns + x) * size, as: SIMD4<Float>.self)
                let d = from.loadUnaligned(fromByteOffset: ((y + 3) * columns + x) * size, as: SIMD4<Float>.self)
                to.storeBytes(of: SIMD4(a[0], b[0], c[0], d[0]), toByteOffset: (x * stride + y) * size, as: SIMD4<Float>.self)
                to.storeBytes(of: SIMD4(a[1], b[1], c[1], d[1]), toByteOffset: ((x + 1) * stride + y) * size, as: SIMD4<Float>.self)
                to.storeBytes(of: SIMD4(a[2], b[2], c[2], d[2]), toByteOffset: ((x + 2) * stride + y) * size, as: SIMD4<Float>.self)
                to.storeBytes(of: SIMD4(a[3], b[3], c[3], d[3]), toByteOffset: ((x + 3) * stride + y) * size, as: SIMD4<Float>.self)
            }
            for x in fullColumns..<columns {
                for k in 0..<4 { output[x * stride + y + k] = input[(y + k) * columns + x] }
            }
        }
        for y in fullRows..<rows {
            for x in 0..<columns { output[x * stride + y] = input[y * columns + x] }
        }
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
    private static let dctMatrix: [Float] = {
        let factor = Double(Float((2.0 / 64.0).squareRoot()))
        var matrix = [Float](repeating: 0, count: 16 * 64)
        for i in 0..<16 {
            for j in 0..<64 { matrix[i * 64 + j] = Float(factor * cos(Double.pi / 2 / 64 * Double(i + 1) * Double(2 * j + 1))) }
        }
        return matrix
    }()

    /// The same transposed, so that the second product's innermost loop runs along a row.
    private static let dctMatrixTransposed: [Float] = (0..<(64 * 16)).map { dctMatrix[($0 % 16) * 64 + $0 / 16] }

    /// The 16x16 block `D * A * Dᵀ` of the samples' DCT. Each sum runs over k in the reference's
    /// order, so the results are its own; the loops run along rows so that they vectorize.
    private static func dct(of samples: UnsafePointer<Float>) -> [Float] {
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
    private static func hex(of coefficients: [Float]) -> String {
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

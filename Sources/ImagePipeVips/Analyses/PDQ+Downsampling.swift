// PDQ's first step here: the decode averaged down to at most 640 pixels a side, as luma.
import Foundation

extension PDQ {

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
    static func blockMeanLuma<Accumulator: FixedWidthInteger & UnsignedInteger>(
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
    static func sumRows<Accumulator: FixedWidthInteger & UnsignedInteger>(
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
    static func floorOfQuotient(_ sum: Float, _ reciprocal: Float) -> Float {
        let rounder: Float = 12_582_912
        return (((sum + 0.5) * reciprocal - 0.5) + rounder) - rounder
    }
}

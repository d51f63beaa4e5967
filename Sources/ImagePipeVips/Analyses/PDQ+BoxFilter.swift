// PDQ's blur: the reference's box filter, run twice along each axis, with its transposes.
import Foundation

extension PDQ {
    /// A full box filter pass whose result goes to `output` transposed (line i's value j at
    /// `output[j * lines + i]`), for the next pass to run across it. Lines come out four at a
    /// time into `staging`, and go on as 4x4 blocks while they are still in the cache.
    static func boxFilterTransposing(
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
    static func writeTransposed(
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
    static func boxFilter(
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
    static func add(_ line: UnsafePointer<Float>, to sums: UnsafeMutablePointer<Float>, _ length: Int) {
        for i in 0..<length { sums[i] += line[i] }
    }

    @inline(__always)
    static func subtract(_ line: UnsafePointer<Float>, from sums: UnsafeMutablePointer<Float>, _ length: Int) {
        for i in 0..<length { sums[i] -= line[i] }
    }

    /// The middle phase's step, in the reference's order: add the entering value, then take away
    /// the leaving one.
    @inline(__always)
    static func slide(
        _ sums: UnsafeMutablePointer<Float>, adding entering: UnsafePointer<Float>, removing leaving: UnsafePointer<Float>, _ length: Int
    ) {
        for i in 0..<length { sums[i] = (sums[i] + entering[i]) - leaving[i] }
    }

    /// The same, writing the means too (one loop, so the sums are read once).
    @inline(__always)
    static func slide(
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
    static func divide(_ sums: UnsafeMutablePointer<Float>, by size: Int, into output: UnsafeMutablePointer<Float>, _ length: Int) {
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
    static func transpose(
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
}

// The placeholder of each original (ThumbHash and dominant colour), read from pixels the compressor already holds.
import CLibVips
import CVipsShim
import ImagePipe

extension VipsCompressor {
    /// The RGBA pixels, at most 100x100, a placeholder is made from (see ``ImageAnalysis/placeholder``).
    package static func placeholderPixels(of image: VipsImageHandle) -> (width: Int, height: Int, rgba: [UInt8])? {
        let pointer = image.pointer
        guard pointer.pointee.BandFmt == VIPS_FORMAT_UCHAR, let data = vips_image_get_data(pointer) else { return nil }
        return placeholderPixels(
            of: data.assumingMemoryBound(to: UInt8.self), width: Int(pointer.pointee.Xsize), height: Int(pointer.pointee.Ysize),
            bands: Int(pointer.pointee.Bands))
    }

    /// The same from interleaved 8-bit pixels, 3 (RGB) or 4 (RGBA) bands.
    static func placeholderPixels(
        of pixels: UnsafePointer<UInt8>, width: Int, height: Int, bands: Int
    ) -> (width: Int, height: Int, rgba: [UInt8])? {
        guard bands == 3 || bands == 4, width > 0, height > 0 else { return nil }
        let scale = max(1, Double(max(width, height)) / 100)
        let outWidth = max(1, Int((Double(width) / scale).rounded())), outHeight = max(1, Int((Double(height) / scale).rounded()))
        // Each output pixel is the mean of its block of source pixels; the blocks' columns are
        // worked out once for all rows.
        let lefts = (0...outWidth).map { min(width, $0 * width / outWidth) }
        var rgba = [UInt8](repeating: 0, count: outWidth * outHeight * 4)
        let sums = UnsafeMutableBufferPointer<Int>.allocate(capacity: outWidth * 4)
        defer { sums.deallocate() }
        rgba.withUnsafeMutableBufferPointer { out in
            lefts.withUnsafeBufferPointer { lefts in
                // One copy of the loop per layout, so the band count is a constant inside it.
                if bands == 4 {
                    blockMeans(pixels, width: width, height: height, bands: 4, lefts: lefts, sums: sums, into: out)
                } else {
                    blockMeans(pixels, width: width, height: height, bands: 3, lefts: lefts, sums: sums, into: out)
                }
            }
        }
        return (outWidth, outHeight, rgba)
    }

    /// Fills `out` (RGBA, `lefts.count - 1` pixels a row) with the integer means of the blocks of
    /// `pixels`; sums of integers, so the order they are taken in cannot change a result.
    @inline(__always)
    private static func blockMeans(
        _ pixels: UnsafePointer<UInt8>, width: Int, height: Int, bands: Int, lefts: UnsafeBufferPointer<Int>,
        sums: UnsafeMutableBufferPointer<Int>, into out: UnsafeMutableBufferPointer<UInt8>
    ) {
        let outWidth = lefts.count - 1, outHeight = out.count / (outWidth * 4)
        for y in 0..<outHeight {
            let top = y * height / outHeight, bottom = max(top + 1, (y + 1) * height / outHeight)
            sums.initialize(repeating: 0)
            for row in top..<bottom {
                let line = pixels + row &* width &* bands
                for x in 0..<outWidth {
                    let left = lefts[x], right = max(left &+ 1, lefts[x &+ 1])
                    var r = 0, g = 0, b = 0, a = 0
                    var pixel = line + left &* bands
                    for _ in left..<right {
                        r &+= Int(pixel[0])
                        g &+= Int(pixel[1])
                        b &+= Int(pixel[2])
                        if bands == 4 { a &+= Int(pixel[3]) }
                        pixel += bands
                    }
                    let at = x &* 4
                    sums[at] &+= r
                    sums[at &+ 1] &+= g
                    sums[at &+ 2] &+= b
                    sums[at &+ 3] &+= bands == 4 ? a : 255 &* (right &- left)
                }
            }
            let rows = bottom - top
            for x in 0..<outWidth {
                let count = rows &* (max(lefts[x] &+ 1, lefts[x &+ 1]) &- lefts[x]), at = x &* 4, to = (y &* outWidth &+ x) &* 4
                // Blocks of 1, 2 or 4 pixels (sources up to twice the placeholder's size) divide by
                // shifting: four divisions per pixel were half of this function's time.
                if count & (count &- 1) == 0 {
                    let shift = count.trailingZeroBitCount
                    for channel in 0..<4 { out[to &+ channel] = UInt8(truncatingIfNeeded: sums[at &+ channel] &>> shift) }
                } else {
                    for channel in 0..<4 { out[to &+ channel] = UInt8(truncatingIfNeeded: sums[at &+ channel] / count) }
                }
            }
        }
    }
}

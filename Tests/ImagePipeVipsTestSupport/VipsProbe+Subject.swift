// Counting the subject of a crop test's image (SubjectImage) in a decoded output.
public import Foundation
public import ImagePipe

extension VipsProbe {
    /// How many pixels of the decoded image are strongly coloured (their channels more than 100
    /// apart): the subject of a ``SubjectImage``, never its grey field.
    public static func colouredPixels(_ data: Data) throws(ImagePipeError) -> Int {
        guard let (bands, bytes) = try decode(data).samples, bands >= 3 else {
            throw ImagePipeError(.unsupportedFormat, "not 8-bit colour")
        }
        var count = 0
        for start in stride(from: 0, to: bytes.count, by: bands) {
            let pixel = bytes[start..<start + 3]
            if Int(pixel.max()!) - Int(pixel.min()!) > 100 { count += 1 }
        }
        return count
    }
}

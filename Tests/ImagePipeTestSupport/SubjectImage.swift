// Images made for crop tests with Pillow: a flat grey field and one small, busy, saturated subject placed where the test says.
public import Foundation

/// Test images whose right crop is known: everything is flat grey but a red and yellow
/// checkerboard square, so any output pixel far from grey is part of the subject.
public enum SubjectImage {
    /// PNG bytes of a `width`x`height` grey image with a `side`-pixel subject whose top-left corner is at `x`, `y`.
    public static func png(width: Int, height: Int, subjectAt x: Int, _ y: Int, side: Int = 90) throws -> Data {
        let directory = TemporaryDirectory(prefix: "imagepipe-subject")
        let path = directory.url("subject.png")
        _ = try PythonOracle.run(
            """
            import sys
            from PIL import Image
            width, height, x, y, side, path = [int(v) for v in sys.argv[1:6]] + [sys.argv[6]]
            image = Image.new("RGB", (width, height), (128, 128, 128))
            for dy in range(side):
                for dx in range(side):
                    red = ((dx // 10) + (dy // 10)) % 2 == 0
                    image.putpixel((x + dx, y + dy), (230, 40, 40) if red else (240, 220, 30))
            image.save(path)
            """, [String(width), String(height), String(x), String(y), String(side), path])
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }
}

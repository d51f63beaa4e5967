// HDR checked against libultrahdr (PyPI's imagecodecs), pillow-heif's libheif and exiftool: none of them imagepipe's code.
public import Foundation

/// Ultra HDR sources made by libultrahdr, and what libultrahdr, libheif (pillow-heif) and exiftool
/// read of imagepipe's outputs, compared with the source through the output's geometry.
public enum HDROracle {
    /// The part of the displayed source an output shows, as fractions (x, y, width, height).
    public struct Fraction: Sendable {
        public var x, y, width, height: Double
        public init(x: Double, y: Double, width: Double, height: Double) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
        /// All of it.
        public static let whole = Fraction(x: 0, y: 0, width: 1, height: 1)

        /// What a `cover` crop to `output` shows of `source` (displayed), placed so that the point
        /// (`fx`, `fy`) is as central as the edges allow: the scale that covers the box, then the
        /// box around the point, moved back inside.
        public static func cover(
            source: (width: Int, height: Int), output: (width: Int, height: Int), fx: Double = 0.5, fy: Double = 0.5
        )
            -> Fraction
        {
            let scale = max(Double(output.width) / Double(source.width), Double(output.height) / Double(source.height))
            let width = Double(output.width) / (Double(source.width) * scale)
            let height = Double(output.height) / (Double(source.height) * scale)
            let x = min(max(fx - width / 2, 0), 1 - width)
            let y = min(max(fy - height / 2, 0), 1 - height)
            return Fraction(x: x, y: y, width: width, height: height)
        }
    }

    /// What the oracle found of one output.
    public struct Comparison: Sendable {
        /// libultrahdr recognises it as Ultra HDR.
        public var isUltraHDR: Bool
        /// The mean and 95th percentile of |log2| of the ratio between the output's decoded HDR
        /// luminance and the source's through the same geometry (in stops).
        public var meanStops: Double
        public var p95Stops: Double
        /// The brightest (99.5th percentile) luminance of the output's HDR and of the source's, in
        /// SDR white.
        public var peak: Double
        public var sourcePeak: Double
        /// Whether its SDR picture decodes to the same pixels as the `--hdr drop` output's.
        public var sameSDR: Bool?
        /// Whether the `--hdr drop` output is an Ultra HDR JPEG (it must not be).
        public var dropIsUltraHDR: Bool?
    }

    static let script = """
        import io, json, struct, subprocess, sys
        import numpy, imagecodecs
        from PIL import Image

        def segments(jpeg):
            at = 2
            while at + 4 <= len(jpeg) and jpeg[at] == 0xFF and jpeg[at + 1] not in (0xDA, 0xD9):
                length = struct.unpack(">H", jpeg[at + 2:at + 4])[0]
                yield at, jpeg[at + 1], jpeg[at + 4:at + 2 + length]
                at += 2 + length

        def encode(path, width, height, peak, orientation, square):
            # A gradient and a square `peak` times SDR white, stored as a camera turned by `orientation` stores it.
            y, x = numpy.mgrid[0:height, 0:width]
            picture = numpy.zeros((height, width, 4), numpy.float16)
            picture[..., 0] = 0.1 + 0.8 * x / width
            picture[..., 1] = 0.1 + 0.6 * y / height
            picture[..., 2] = 0.3
            x0, y0, x1, y1 = square
            picture[int(y0 * height):int(y1 * height), int(x0 * width):int(x1 * width), :3] = peak
            picture[..., 3] = 1
            data = bytearray(imagecodecs.ultrahdr_encode(picture))
            if orientation != 1:
                tiff = b"MM\\x00\\x2a\\x00\\x00\\x00\\x08" + struct.pack(">HHHIHH", 1, 0x0112, 3, 1, orientation, 0) + b"\\x00\\x00\\x00\\x00"
                payload = b"Exif\\x00\\x00" + tiff
                segment = b"\\xff\\xe1" + struct.pack(">H", len(payload) + 2) + payload
                # The primary grows by the segment, and its MP entry's size with it; the offsets count
                # from the MPF header, which moves with the gain map.
                for at, marker, body in segments(bytes(data)):
                    if marker == 0xE2 and body.startswith(b"MPF\\x00"):
                        base = at + 8
                        fmt = ">" if data[base:base + 2] == b"MM" else "<"
                        ifd = struct.unpack(fmt + "I", data[base + 4:base + 8])[0]
                        for index in range(struct.unpack(fmt + "H", data[base + ifd:base + ifd + 2])[0]):
                            entry = base + ifd + 2 + index * 12
                            if struct.unpack(fmt + "H", data[entry:entry + 2])[0] == 0xB002:
                                first = base + struct.unpack(fmt + "I", data[entry + 8:entry + 12])[0]
                                size = struct.unpack(fmt + "I", data[first + 4:first + 8])[0]
                                data[first + 4:first + 8] = struct.pack(fmt + "I", size + len(segment))
                data = data[:2] + segment + data[2:]
            open(path, "wb").write(bytes(data))
            assert imagecodecs.ultrahdr_check(bytes(data))

        def upright(array, orientation):
            # As EXIF `orientation` says to show it: libultrahdr decodes the stored picture.
            return {2: lambda a: a[:, ::-1], 3: lambda a: a[::-1, ::-1], 4: lambda a: a[::-1],
                    5: lambda a: a.transpose(1, 0, 2), 6: lambda a: numpy.rot90(a, -1),
                    7: lambda a: a[::-1, ::-1].transpose(1, 0, 2), 8: lambda a: numpy.rot90(a, 1)}.get(orientation, lambda a: a)(array)

        def resized(array, fraction, size):
            rows, cols = array.shape[:2]
            x, y, w, h = fraction
            box = (x * cols, y * rows, (x + w) * cols, (y + h) * rows)
            return numpy.stack([numpy.asarray(Image.fromarray(numpy.ascontiguousarray(array[..., c], numpy.float32), "F")
                                              .resize(size, Image.BILINEAR, box=box)) for c in range(array.shape[2])], axis=2)

        def luma(a):
            return a[..., :3] @ numpy.array([0.2126, 0.7152, 0.0722], numpy.float32)

        def hdr(data):
            return imagecodecs.ultrahdr_decode(data).astype(numpy.float32)[..., :3]

        def stops(mine, theirs):
            ratio = numpy.abs(numpy.log2((mine + 1 / 64) / (theirs + 1 / 64)))
            return float(ratio.mean()), float(numpy.percentile(ratio, 95))

        def compare(item):
            variant = open(item["variant"], "rb").read()
            out = {"check": bool(imagecodecs.ultrahdr_check(variant))}
            if out["check"]:
                mine = hdr(variant)
                theirs = resized(upright(hdr(open(item["source"], "rb").read()), item["orientation"]), item["fraction"],
                                 (mine.shape[1], mine.shape[0]))
                out["stops_mean"], out["stops_p95"] = stops(luma(mine), luma(theirs))
                out["peak"] = float(numpy.percentile(luma(mine), 99.5))
                out["source_peak"] = float(numpy.percentile(luma(theirs), 99.5))
            if item.get("drop"):
                dropped = open(item["drop"], "rb").read()
                a, b = imagecodecs.jpeg8_decode(variant), imagecodecs.jpeg8_decode(dropped)
                out["sdr_same"] = bool(a.shape == b.shape and (a == b).all())
                out["drop_is_hdr"] = bool(imagecodecs.ultrahdr_check(dropped))
            return out

        def apple(item):
            # The output's gain map (exiftool's MPImage2) as Apple's boost, against the HEIC's own
            # auxiliary image (pillow-heif's libheif) through the same geometry.
            import pillow_heif
            variant = open(item["variant"], "rb").read()
            out = {"check": bool(imagecodecs.ultrahdr_check(variant))}
            second = subprocess.run(["exiftool", "-b", "-MPImage2", item["variant"]], capture_output=True, check=True).stdout
            ours = numpy.asarray(Image.open(io.BytesIO(second)).convert("L"), numpy.float32) / 255
            heif = pillow_heif.open_heif(item["source"])
            aux = heif.get_aux_image(heif.info["aux"]["urn:com:apple:photo:2020:aux:hdrgainmap"][0])
            encoded = numpy.asarray(aux.to_pillow(), numpy.float32) / 255
            linear = numpy.where(encoded < 0.081, encoded / 4.5, ((encoded + 0.099) / 1.099) ** (1 / 0.45))
            headroom = item["headroom"]
            apple_boost = resized((1 + (headroom - 1) * linear)[..., None], item["fraction"], (ours.shape[1], ours.shape[0]))[..., 0]
            our_boost = 2 ** (numpy.log2(headroom) * ours)
            out["stops_mean"], out["stops_p95"] = stops(our_boost, apple_boost)
            out["map_size"] = [ours.shape[1], ours.shape[0]]
            if out["check"]:
                # libultrahdr's HDR over the SDR picture, in linear light: the boost it applies.
                sdr = imagecodecs.jpeg8_decode(variant).astype(numpy.float32) / 255
                linear_sdr = numpy.where(sdr <= 0.04045, sdr / 12.92, ((sdr + 0.055) / 1.055) ** 2.4)
                boost = (luma(hdr(variant)) + 1 / 64) / (luma(linear_sdr) + 1 / 64)
                out["peak"] = float(numpy.percentile(boost, 99.9))
                out["source_peak"] = float(numpy.percentile(apple_boost, 99.9))
            return out

        command = json.loads(sys.argv[1])
        if command["op"] == "encode":
            encode(command["path"], command["width"], command["height"], command["peak"], command["orientation"], command["square"])
            print("{}")
        elif command["op"] == "compare":
            print(json.dumps([compare(item) for item in command["items"]]))
        elif command["op"] == "check":
            print(json.dumps([bool(imagecodecs.ultrahdr_check(open(path, "rb").read())) for path in command["paths"]]))
        elif command["op"] == "boost":
            # libultrahdr's HDR over the SDR picture in linear light (its mean boost) inside and outside a box.
            data = open(command["path"], "rb").read()
            sdr = imagecodecs.jpeg8_decode(data).astype(numpy.float32) / 255
            linear = numpy.where(sdr <= 0.04045, sdr / 12.92, ((sdr + 0.055) / 1.055) ** 2.4)
            boost = (luma(hdr(data)) + 1 / 64) / (luma(linear) + 1 / 64)
            left, top, width, height = command["box"]
            inside = numpy.zeros(boost.shape, bool)
            inside[top:top + height, left:left + width] = True
            print(json.dumps({"inside": float(boost[inside].mean()), "inside_max": float(boost[inside].max()),
                              "outside_max": float(boost[~inside].max())}))
        elif command["op"] == "apple":
            print(json.dumps([apple(item) for item in command["items"]]))
        """

    /// Writes an Ultra HDR JPEG of `width` x `height` stored pixels made by libultrahdr at `path`:
    /// a gradient with a square `peak` times SDR white (from a sixth in and a fifth down, a third
    /// of each side, unless `square` gives its corners as fractions), its EXIF saying `orientation` (1–8).
    public static func encode(
        _ path: String, width: Int, height: Int, peak: Double, orientation: Int = 1,
        square: (Double, Double, Double, Double) = (1.0 / 6, 0.2, 0.5, 0.2 + 1.0 / 3)
    ) throws {
        _ = try call([
            "op": "encode", "path": path, "width": width, "height": height, "peak": peak, "orientation": orientation,
            "square": [square.0, square.1, square.2, square.3],
        ])
    }

    /// One output to compare: the output, its source (oriented as `orientation` says), what it
    /// shows of the source, and the same variant made with `--hdr drop`.
    public struct Item: Sendable {
        public var output: String
        public var source: String
        public var orientation: Int
        public var fraction: Fraction
        public var dropped: String?
        public init(output: String, source: String, orientation: Int = 1, fraction: Fraction = .whole, dropped: String? = nil) {
            self.output = output
            self.source = source
            self.orientation = orientation
            self.fraction = fraction
            self.dropped = dropped
        }

        var json: [String: Any] {
            var item: [String: Any] = [
                "variant": output, "source": source, "orientation": orientation,
                "fraction": [fraction.x, fraction.y, fraction.width, fraction.height],
            ]
            if let dropped { item["drop"] = dropped }
            return item
        }
    }

    /// libultrahdr's reading of each output of an Ultra HDR source, against the source's.
    public static func compare(_ items: [Item]) throws -> [Comparison] {
        let answers = try call(["op": "compare", "items": items.map(\.json)]) as? [[String: Any]] ?? []
        return answers.map { answer in
            Comparison(
                isUltraHDR: answer["check"] as? Bool ?? false, meanStops: answer["stops_mean"] as? Double ?? .infinity,
                p95Stops: answer["stops_p95"] as? Double ?? .infinity, peak: answer["peak"] as? Double ?? 0,
                sourcePeak: answer["source_peak"] as? Double ?? 0, sameSDR: answer["sdr_same"] as? Bool,
                dropIsUltraHDR: answer["drop_is_hdr"] as? Bool)
        }
    }

    /// For outputs of an iPhone HEIC: the output's gain map (read by exiftool) as Apple's boost at
    /// `headroom`, against the HEIC's auxiliary image (read by pillow-heif) through the geometry;
    /// `peak` and `sourcePeak` are the largest boost libultrahdr applies and Apple's map gives.
    public static func compareApple(_ items: [Item], headroom: Double) throws -> [(Comparison, mapSize: [Int])] {
        let json = items.map { item in item.json.merging(["headroom": headroom]) { $1 } }
        let answers = try call(["op": "apple", "items": json]) as? [[String: Any]] ?? []
        return answers.map { answer in
            (
                Comparison(
                    isUltraHDR: answer["check"] as? Bool ?? false, meanStops: answer["stops_mean"] as? Double ?? .infinity,
                    p95Stops: answer["stops_p95"] as? Double ?? .infinity, peak: answer["peak"] as? Double ?? 0,
                    sourcePeak: answer["source_peak"] as? Double ?? 0),
                answer["map_size"] as? [Int] ?? []
            )
        }
    }

    /// Whether libultrahdr recognises each file as an Ultra HDR JPEG.
    public static func isUltraHDR(_ paths: [String]) throws -> [Bool] {
        try call(["op": "check", "paths": paths]) as? [Bool] ?? []
    }

    /// The boost libultrahdr applies to the SDR picture of `path` (its HDR over its SDR in linear
    /// light): the mean and largest inside `box` (left, top, width, height), the largest outside it.
    public static func boost(_ path: String, box: (Int, Int, Int, Int)) throws -> (inside: Double, insideMax: Double, outsideMax: Double) {
        let answer = try call(["op": "boost", "path": path, "box": [box.0, box.1, box.2, box.3]]) as? [String: Double] ?? [:]
        return (answer["inside"] ?? .nan, answer["inside_max"] ?? .nan, answer["outside_max"] ?? .nan)
    }

    private static func call(_ command: [String: Any]) throws -> Any {
        let text = String(decoding: try JSONSerialization.data(withJSONObject: command), as: UTF8.self)
        let output = try PythonOracle.run(script, [text])
        return try JSONSerialization.jsonObject(with: Data(output.utf8))
    }
}

// PQ and HLG originals made by pillow-heif's libheif and imagecodecs' libavif, and the SDR they should give worked out in numpy: none of them imagepipe's code.
public import Foundation

/// 10- and 12-bit HEIC and AVIF originals coded with BT.2100's PQ or HLG (BT.2020 primaries), of a
/// scene given in display light, and the SDR picture they should give, worked out in numpy from the
/// original as an independent decoder reads it: BT.2100's PQ EOTF or HLG's inverse OETF and OOTF
/// (a 1,000 cd/m² display), BT.2020 to BT.709 from the primaries' chromaticities, each pixel's
/// brightest channel unchanged up to half of SDR white (203 cd/m²) and rolled off above it so that
/// the picture's brightest becomes white, then sRGB's encoding.
public enum ToneMapOracle {
    /// The scene's rows, each a band of the picture: `grey` a ramp from 0.5 cd/m² to SDR white
    /// (203) left to right, `highlights` one from 203 to 1,000 cd/m², `colours` three BT.709
    /// colours at 60 cd/m².
    public enum Band: String, Sendable, CaseIterable {
        case grey, highlights, colours
    }

    /// What the oracle found of one SDR output (8-bit sRGB, at the original's size).
    public struct Reading: Sendable {
        /// The mean and 99th percentile of |output − reference| over the picture, in 8-bit levels.
        public var meanError: Double
        public var p99Error: Double
        /// The highlight band's mean level in each of eight columns, left (203 cd/m²) to right (1,000).
        public var highlightSteps: [Double]
        /// The share of the highlight band's pixels at 255.
        public var clippedShare: Double
        /// The largest |output − sRGB(light / 203)| over the grey ramp up to 80 cd/m², where tone mapping
        /// changes nothing, and over the colour patches; the scene's own light, not the decode's.
        public var midtoneError: Double
        public var colourError: Double
        /// The brightest channel of the original's display light, in cd/m².
        public var sourcePeak: Double
    }

    static let script = """
        import json, sys
        import numpy, imagecodecs, pillow_heif
        from PIL import Image

        WHITE, HLG_PEAK, HLG_GAMMA = 203.0, 1000.0, 1.2
        M1, M2 = 2610 / 16384, 2523 / 4096 * 128
        C1, C2, C3 = 3424 / 4096, 2413 / 4096 * 32, 2392 / 4096 * 32
        A = 0.17883277
        B, C = 1 - 4 * A, 0.5 - A * numpy.log(4 * A)

        def to_xyz(primaries):
            # RGB to XYZ from the primaries' and D65's chromaticities.
            xy = numpy.array(primaries, float)
            xyz = numpy.stack([xy[:, 0] / xy[:, 1], numpy.ones(3), (1 - xy.sum(1)) / xy[:, 1]])
            white = numpy.array([0.3127 / 0.3290, 1, (1 - 0.3127 - 0.3290) / 0.3290])
            return xyz * numpy.linalg.solve(xyz, white)

        BT709 = to_xyz([(0.64, 0.33), (0.30, 0.60), (0.15, 0.06)])
        BT2020 = to_xyz([(0.708, 0.292), (0.170, 0.797), (0.131, 0.046)])
        TO_2020 = numpy.linalg.solve(BT2020, BT709)
        TO_709 = numpy.linalg.solve(BT709, BT2020)
        LUMA_2020 = BT2020[1]

        def pq_signal(nits):
            y = (numpy.maximum(nits, 0) / 10000) ** M1
            return ((C1 + C2 * y) / (1 + C3 * y)) ** M2

        def pq_nits(signal):
            p = numpy.maximum(signal, 0) ** (1 / M2)
            return 10000 * (numpy.maximum(p - C1, 0) / (C2 - C3 * p)) ** (1 / M1)

        def hlg_signal(scene):
            scene = numpy.maximum(scene, 0)
            return numpy.where(scene <= 1 / 12, numpy.sqrt(3 * scene), A * numpy.log(numpy.maximum(12 * scene - B, 1e-12)) + C)

        def hlg_scene(signal):
            return numpy.where(signal <= 0.5, signal * signal / 3, (numpy.exp((signal - C) / A) + B) / 12)

        def srgb(linear):
            linear = numpy.clip(linear, 0, 1)
            return 255 * numpy.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear ** (1 / 2.4) - 0.055)

        def scene(width, height):
            # Display light in BT.709 primaries, cd/m2, a band a third of the height each.
            light = numpy.zeros((height, width, 3))
            third = height // 3
            light[:third] = numpy.linspace(0.5, WHITE, width)[None, :, None]
            light[third:2 * third] = numpy.linspace(WHITE, 1000, width)[None, :, None]
            colours = [(0.8, 0.3, 0.1), (0.1, 0.6, 0.2), (0.2, 0.3, 0.9)]
            for index, colour in enumerate(colours):
                light[2 * third:, index * width // 3:(index + 1) * width // 3] = numpy.array(colour) * 60
            return light

        def encode(command):
            width, height, bits, transfer = command["width"], command["height"], command["bits"], command["transfer"]
            light = scene(width, height) @ TO_2020.T
            if transfer == 16:
                signal = pq_signal(light)
            else:
                # The HLG signal a 1,000 cd/m2 display shows as `light`: the OOTF's inverse, then the OETF.
                display = numpy.maximum(light @ LUMA_2020, 1e-9)
                scene_luma = (display / HLG_PEAK) ** (1 / HLG_GAMMA)
                signal = hlg_signal(light / HLG_PEAK / scene_luma[..., None] ** (HLG_GAMMA - 1))
            codes = numpy.round(numpy.clip(signal, 0, 1) * (2 ** bits - 1)).astype(numpy.uint16)
            if command["container"] == "avif":
                data = imagecodecs.avif_encode(codes, level=100, bitspersample=bits, primaries=9, transfer=transfer, matrix=9)
                open(command["path"], "wb").write(data)
            else:
                pillow_heif.options.SAVE_HDR_TO_12_BIT = bits == 12
                shifted = (codes.astype(numpy.uint32) << (16 - bits)).astype("<u2")
                picture = pillow_heif.from_bytes(mode="RGB;16", size=(width, height), data=shifted.tobytes())
                picture.save(command["path"], quality=-1, chroma=444, color_primaries=9, transfer_characteristics=transfer,
                             matrix_coefficients=9, full_range_flag=1)

        def decoded_signal(command):
            # The original's codes as an independent decoder reads them, in [0, 1].
            data = open(command["path"], "rb").read()
            if command["container"] == "avif":
                return imagecodecs.avif_decode(data).astype(float)[..., :3] / (2 ** command["bits"] - 1)
            heif = pillow_heif.open_heif(command["path"], convert_hdr_to_8bit=False)
            assert heif.info["bit_depth"] == command["bits"], heif.info["bit_depth"]
            shift = 16 - command["bits"]
            return (numpy.asarray(heif).astype(numpy.uint32) >> shift).astype(float)[..., :3] / (2 ** command["bits"] - 1)

        def roll_off(x, headroom, knee=0.5):
            # Unchanged up to the knee (in SDR white); above it extended Reinhard over the rest up to
            # the headroom, whose slope is 1 at the knee and which reaches 1 at the headroom.
            if headroom <= 1:
                return x
            u, top = numpy.maximum(x - knee, 0) / (1 - knee), (headroom - knee) / (1 - knee)
            return numpy.where(x <= knee, x, knee + (1 - knee) * u * (1 + u / top ** 2) / (1 + u))

        def reference(command):
            signal = decoded_signal(command)
            if command["transfer"] == 16:
                light = pq_nits(signal)
            else:
                scene_light = hlg_scene(signal)
                luma = scene_light @ LUMA_2020
                light = HLG_PEAK * scene_light * (numpy.maximum(luma, 0) ** (HLG_GAMMA - 1))[..., None]
            light = numpy.maximum(light @ TO_709.T, 0)
            brightest = light.max(axis=2)
            peak = float(brightest.max())
            relative = brightest / WHITE
            gain = numpy.where(relative > 0, roll_off(relative, peak / WHITE) / numpy.maximum(relative, 1e-12), 1)
            return srgb(light * gain[..., None] / WHITE), peak

        def read(command):
            expected, peak = reference(command)
            output = numpy.asarray(Image.open(command["output"]).convert("RGB"), float)
            assert output.shape == expected.shape, (output.shape, expected.shape)
            error = numpy.abs(output - numpy.round(expected))
            height, width = output.shape[:2]
            third = height // 3
            # Away from the bands' edges, where chroma sampling or resampling could mix them.
            rows = slice(third + 2, 2 * third - 2)
            highlights = output[rows].mean(axis=2)
            steps = [float(highlights[:, column * width // 8:(column + 1) * width // 8].mean()) for column in range(8)]
            light = scene(width, height)
            grey = slice(2, third - 2)
            dim = light[grey, :, 0][0] <= 80
            midtone = float(numpy.abs(output[grey][:, dim] - srgb(light[grey][:, dim] / WHITE)).max())
            patches = []
            for index in range(3):
                patch = slice(index * width // 3 + 3, (index + 1) * width // 3 - 3)
                region = (slice(2 * third + 3, height - 3), patch)
                patches.append(float(numpy.abs(output[region] - srgb(light[region] / WHITE)).max()))
            return {"mean": float(error.mean()), "p99": float(numpy.percentile(error, 99)), "steps": steps,
                    "clipped": float((output[rows] >= 255).any(axis=2).mean()), "midtone": midtone,
                    "colour": max(patches), "peak": peak}

        command = json.loads(sys.argv[1])
        if command["op"] == "encode":
            encode(command)
            print("{}")
        else:
            print(json.dumps(read(command)))
        """

    /// Writes a `width` x `height` original of ``Band``'s scene at `path`: a HEIC (pillow-heif,
    /// lossless HEVC 4:4:4) or an AVIF (imagecodecs), `bits` deep, nclx BT.2020 with `transfer`
    /// 16 (PQ) or 18 (HLG, for a 1,000 cd/m² display).
    public static func encode(_ path: String, container: String, transfer: Int, bits: Int, width: Int = 240, height: Int = 120) throws {
        _ = try call([
            "op": "encode", "path": path, "container": container, "transfer": transfer, "bits": bits, "width": width, "height": height,
        ])
    }

    /// The SDR `output` (a lossless file at the original's size) against the SDR the original at `path` should give.
    public static func read(output: String, original path: String, container: String, transfer: Int, bits: Int) throws -> Reading {
        let answer =
            try call(["op": "read", "output": output, "path": path, "container": container, "transfer": transfer, "bits": bits])
            as? [String: Any] ?? [:]
        return Reading(
            meanError: answer["mean"] as? Double ?? .infinity, p99Error: answer["p99"] as? Double ?? .infinity,
            highlightSteps: answer["steps"] as? [Double] ?? [], clippedShare: answer["clipped"] as? Double ?? 1,
            midtoneError: answer["midtone"] as? Double ?? .infinity, colourError: answer["colour"] as? Double ?? .infinity,
            sourcePeak: answer["peak"] as? Double ?? 0)
    }

    private static func call(_ command: [String: Any]) throws -> Any {
        let text = String(decoding: try JSONSerialization.data(withJSONObject: command), as: UTF8.self)
        let output = try PythonOracle.run(script, [text])
        return try JSONSerialization.jsonObject(with: Data(output.utf8))
    }
}

// What the zygote runs once before it forks helpers: a helper's code path on values of its own, without a pixel decoded.
public import Foundation
public import ImagePipe

extension HelperServer {
    /// 8x8 black images in the formats a helper reads most (made once with `vips black`, metadata
    /// stripped): bytes of imagepipe's own, not a stranger's, so the zygote may read their headers.
    static let warmUpImages: [(name: String, base64: String)] = [
        (
            "warm-up.jpg",
            "/9j/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/2wBD"
                + "AQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjL/wAARCAAIAAgD"
                + "ASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEG"
                + "E1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4"
                + "eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6"
                + "/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEI"
                + "FEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaH"
                + "iImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIR"
                + "AxEAPwD5/ooooA//2Q=="
        ),
        (
            "warm-up.png",
            "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAADElEQVQImWNgGB4AAADIAAH4"
                + "XVuUAAAAAElFTkSuQmCC"
        ),
        (
            "warm-up.webp",
            "UklGRvgAAABXRUJQVlA4WAoAAAAIAAAABwAABwAAVlA4IBgAAAAwAQCdASoIAAgAAgA0JaQAA3AA/vv9UABFWElGugAAAEV4aWYA"
                + "AElJKgAIAAAABgASAQMAAQAAAAEAAAAaAQUAAQAAAFYAAAAbAQUAAQAAAF4AAAAoAQMAAQAAAAIAAAATAgMAAQAAAAEAAABphwQA"
                + "AQAAAGYAAAAAAAAAOGMAAOgDAAA4YwAA6AMAAAYAAJAHAAQAAAAwMjEwAZEHAAQAAAABAgMAAKAHAAQAAAAwMTAwAaADAAEAAAD/"
                + "/wAAAqAEAAEAAAAIAAAAA6AEAAEAAAAIAAAAAAAAAA=="
        ),
        (
            "warm-up.gif",
            "R0lGODlhCAAIAIAAAEdwTAAAACH/C05FVFNDQVBFMi4wAwEAAAAh+QQFAAAAACwAAAAACAAIAAACB4yPqcvtXQAAOw=="
        ),
        (
            "warm-up.avif",
            "AAAAHGZ0eXBhdmlmAAAAAGF2aWZtaWYxbWlhZgAAAOptZXRhAAAAAAAAACFoZGxyAAAAAAAAAABwaWN0AAAAAAAAAAAAAAAAAAAA"
                + "AA5waXRtAAAAAAABAAAAImlsb2MAAAAAREAAAQABAAAAAAEOAAEAAAAAAAAAGAAAACNpaW5mAAAAAAABAAAAFWluZmUCAAAAAAEA"
                + "AGF2MDEAAAAAamlwcnAAAABLaXBjbwAAABNjb2xybmNseAACAAIABoAAAAAMYXYxQ4EADAAAAAAUaXNwZQAAAAAAAAAIAAAACAAA"
                + "ABBwaXhpAAAAAAMICAgAAAAXaXBtYQAAAAAAAAABAAEEgYIDhAAAACBtZGF0EgAKCBgIv2CBAQNCMgoYAAAAQAX172To"
        ),
    ]

    /// Runs, in the zygote, what every helper runs for a job, on values of its own and without
    /// decoding a pixel (which would start libvips' threads, and a fork must copy a process of one
    /// thread): the compressor's settings read, the messages read and written, each sample's header
    /// opened through libvips' choice of loader. A helper serves one job and then ends, so whatever
    /// its process fills on first use (the Swift runtime's caches of protocol conformances and type
    /// metadata, libvips' and GLib's classes) it would fill for every job; filled once here, before
    /// the forks, every helper finds them filled (docs/performance.md, "Image helpers").
    public static func warmUp(makeCompressor: (_ logo: Data?) throws(ImagePipeError) -> any ImageCompressor) {
        guard let compressor = try? makeCompressor(nil) else { return }
        var variants = Preset.web + Preset.webAuto
        for spec in ["a=320x,avif,q50", "x=320x,jxl,q70", "p=320x,png", "g=320x,gif", "s=800x800,jpeg,q80,cover,attention"] {
            if let variant = try? VariantSpec(parsing: spec) { variants.append(variant) }
        }
        let source = HelperSource(nonce: 1, name: "warm-up.jpg", focus: FocalPoint(x: 0.5, y: 0.5), isFile: false, inline: [0xFF], advance: 1)
        let requests: [HelperRequest] = [
            .start(hasLogo: false), .setup(variants: variants, limits: .default), .compress(source), .readHeader(source),
            .compressBatch([source, source]), .grant(nonce: 1, bytes: 1),
        ]
        for request in requests { _ = try? HelperRequest(decoding: request.encoded()) }
        for (name, base64) in warmUpImages {
            guard let bytes = Data(base64Encoded: base64) else { continue }
            let image = SourceImage(name: name, content: .bytes(bytes), focus: nil)
            _ = try? compressor.readHeader(image, variants: variants, limits: .default)
        }
        var result = HelperResult(
            CompressedImage(sourceFormat: .jpeg, sourceSize: PixelSize(width: 8, height: 8), variants: [], decodeTime: .zero, encodeTime: .zero))
        result.placeholder = Placeholder(thumbHash: "1QcSHQRnh493V4dIh4eXh1h4kJUI", color: "#7f8c8d")
        result.variants = [.init(encoding: VariantEncoding(size: PixelSize(width: 8, height: 8), quality: 80, score: 90), byteCount: 1, inline: [0])]
        let replies: [HelperReply] = [
            .ready(sandboxed: true, landlock: 1), .need(nonce: 1, bytes: 1), .compressed(nonce: 1, result), .header(nonce: 1, nil),
            .failed(nonce: 1, ImagePipeError(.corruptImage, "warm-up")), .batch([.compressed(nonce: 1, result)]),
        ]
        for reply in replies { _ = try? HelperReply(decoding: reply.encoded()) }
        _ = OutputHeader.size(of: [UInt8](Data(base64Encoded: warmUpImages[0].base64) ?? Data()), as: .jpeg)
    }
}

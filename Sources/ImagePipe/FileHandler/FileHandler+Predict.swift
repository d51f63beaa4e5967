// What a dry run adds after inspection (blocking I/O): the header and the file's end, read as a run would meet them, without decoding.
import Foundation

extension FileHandler {
    /// Predicts what compressing an inspected job would do from what can be read cheaply: the
    /// header's format and declared size (the compressor's own checks, with its errors: a format
    /// not accepted, `image_too_large`, an animation's frame budget included) and whether the file
    /// reaches its format's end (``ImageEnd``: a file cut short is `corrupt_image`). Records the
    /// format and size on success.
    ///
    /// A prediction: damage inside the image data shows only when it is decoded.
    public func predict(_ context: inout JobContext) {
        guard !context.hasEnded, let source = context.source else { return }
        do throws(ImagePipeError) {
            let image = SourceImage(name: context.job.relativePath, content: source.content, focus: context.job.focus ?? source.focus)
            guard let header = try compressor.readHeader(image, variants: configuration.variants, limits: configuration.limits) else { return }
            if let missing = ImageEnd.missing(in: source.content, format: header.format) {
                throw ImagePipeError(.corruptImage, missing)
            }
            context.format = header.format
            context.size = header.size
        } catch {
            context.failure = error
        }
    }
}

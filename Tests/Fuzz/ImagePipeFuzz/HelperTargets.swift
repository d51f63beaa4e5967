// Fuzz target for what an image helper sends its worker: a helper a hostile image took over may send anything.
import Foundation
import ImagePipeSandbox

enum HelperTargets {
    /// A helper's reply (and, for the helper's side, a worker's request): refused whole, or read into
    /// a value that writes back to the same bytes and reads back equal.
    static func helperMessage(_ data: Data) {
        let bytes = [UInt8](data)
        if let reply = try? HelperReply(decoding: bytes) {
            let again = reply.encoded()
            require((try? HelperReply(decoding: again)) == reply, "a reply does not read back")
            if case .compressed(_, let result) = reply {
                require(result.variants.count <= HelperResult.maxVariants, "\(result.variants.count) variants")
            }
        }
        if let request = try? HelperRequest(decoding: bytes) {
            require((try? HelperRequest(decoding: request.encoded())) == request, "a request does not read back")
        }
    }
}

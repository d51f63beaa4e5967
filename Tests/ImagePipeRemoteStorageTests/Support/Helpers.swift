import Foundation
import ImagePipeTestSupport

extension HelperProcess {
    /// The folder of this target's helper scripts.
    static let supportDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/python"

    /// Starts one of this target's helpers (moto, the fault proxy, the Supabase stub).
    convenience init(_ script: String, _ arguments: [String] = []) throws {
        try self.init(script, in: Self.supportDirectory, arguments)
    }
}

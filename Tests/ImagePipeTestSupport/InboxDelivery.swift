// Delivering a file into a queue directory's inbox as producers must: written under a hidden name, then renamed.
public import Foundation

/// How the tests drop a file into an inbox: the worker never sees it half written.
public enum InboxDelivery {
    /// Writes `contents` to `inbox/relative` (creating its folders) through a hidden temporary name
    /// in the inbox, renamed into place once complete.
    public static func deliver(_ contents: Data, to inbox: String, as relative: String) {
        let target = inbox + "/" + relative
        let folder = URL(fileURLWithPath: target).deletingLastPathComponent().path
        try! FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let hidden = inbox + "/.incoming-\(UUID().uuidString)"
        try! contents.write(to: URL(fileURLWithPath: hidden))
        precondition(rename(hidden, target) == 0, "cannot rename a delivery into \(target)")
    }
}

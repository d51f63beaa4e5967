// A benchmark corpus: a folder of images, optionally repeated through hard links to make a long batch.
import Foundation
public import ImagePipe

/// The images a benchmark runs over.
public struct Corpus: Sendable {
    /// The folder.
    public var directory: String
    /// Image paths relative to it, sorted.
    public var files: [String]
    /// Their total size in bytes.
    public var bytes: Int

    /// Lists the images under `directory`: the files whose first bytes are an image's, as a batch
    /// tells them (a README or LICENSE beside them is left out: the peers would fail on it).
    public init(directory: String) throws(ImagePipeError) {
        let jobs = try SourceScanner(root: directory).scan().jobs.filter { job in
            let head = FileHandle(forReadingAtPath: job.path).flatMap { try? $0.read(upToCount: ImageSignature.headLength) }
            return head.flatMap { ImageSignature.fileExtension(of: $0) } != nil
        }
        guard !jobs.isEmpty else { throw .configuration("no images in \(directory)") }
        self.directory = LocalPath.absolute(directory)
        self.files = jobs.map(\.relativePath)
        self.bytes = jobs.reduce(0) { total, job in
            total + ((try? FileManager.default.attributesOfItem(atPath: job.path)[.size] as? Int) ?? 0)
        }
    }

    /// A corpus of `copies` × this one in `directory`, made of hard links (no extra disk space).
    public func repeated(_ copies: Int, into directory: String) throws(ImagePipeError) -> Corpus {
        do {
            try? FileManager.default.removeItem(atPath: directory)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for copy in 0..<copies {
                let folder = directory + String(format: "/copy-%04d", copy)
                for file in files {
                    let target = folder + "/" + file
                    try FileManager.default.createDirectory(
                        atPath: LocalPath.parent(of: target),
                        withIntermediateDirectories: true)
                    if link(self.directory + "/" + file, target) != 0 {
                        try FileManager.default.copyItem(atPath: self.directory + "/" + file, toPath: target)
                    }
                }
            }
        } catch {
            throw .configuration("cannot build the repeated corpus in \(directory): \(IOErrorText.reason(of: error))")
        }
        return try Corpus(directory: directory)
    }
}

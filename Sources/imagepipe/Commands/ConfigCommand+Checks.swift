// What `imagepipe config` checks beyond the options: the checks the run makes before it starts, short of asking a server.
import ArgumentParser
import Foundation
import ImagePipe
import ImagePipeQueue
import ImagePipeVips

extension ConfigCommand {
    /// Checks a parsed batch or watch command as the run checks it before its first job, without
    /// asking any server: that batch's sources exist (and `--from`'s list reads), that no source
    /// is a URL imagepipe cannot read, that a watermark's logo reads as an image, that the destination and the sources' object stores have
    /// their settings and credentials in the environment, that the queue can be one, that a notify
    /// URL is http(s) with a secret to sign with. Without these
    /// `config` said a configuration was valid that the run then refused at once.
    ///
    /// - Returns: what was not checked, as comment lines for the end of the report: whatever needs
    ///   a server to answer.
    static func checkBeforeRun(_ command: any ParsableCommand) throws(ImagePipeError) -> [String] {
        var unchecked: [String] = []
        if let batch = command as? BatchCommand {
            // A list on standard input is the run's to read, not this command's.
            let list = batch.from.flatMap { $0 == "-" ? nil : $0 }
            let inputs =
                batch.sources.map { SourceScanner.Input($0) }
                + (try list.map { (path) throws(ImagePipeError) in try BatchCommand.readList(path) } ?? [])
            try SourceScanner(inputs: inputs).check()
            let urls = inputs.map(\.path).filter(ObjectLocation.isURL)
            try checkWatermark(batch.options)
            _ = try StorageFactory.make(batch.options.storage, sourceURLs: urls)
            _ = try StorageFactory.sources(urls, batch.options.storage)
            if batch.from == "-" { unchecked.append("the list --from - will read from standard input") }
            if batch.from != nil { unchecked.append("that each path listed in --from exists (a listed path that does not fails alone)") }
            if !urls.isEmpty { unchecked.append("that the source buckets answer and hold the objects named") }
            unchecked.append(contentsOf: destinationUnchecked(batch.options.storage.dest))
            unchecked.append(contentsOf: try CompositionRoot.checkNotifier(batch.notify))
        } else if let watch = command as? WatchCommand {
            try checkWatermark(watch.options)
            _ = try StorageFactory.make(watch.options.storage)
            unchecked.append(contentsOf: destinationUnchecked(watch.options.storage.dest))
            unchecked.append(contentsOf: try CompositionRoot.checkNotifier(watch.notify))
            let driver = try QueueDrivers.open(watch.queue, creating: true)
            try driver.checkWorkerOptions(keepingDone: watch.keepDone)
            unchecked.append(contentsOf: try driver.checkConfiguration())
        }
        return unchecked
    }

    /// The logo is read and decoded as the run reads it before its first image.
    private static func checkWatermark(_ options: JobOptions) throws(ImagePipeError) {
        try options.watermark.checkApplies(to: try options.variantSpecs())
        guard let path = options.watermark.file else { return }
        try Vips.configure(threadsPerImage: 1)
        _ = try WatermarkLogo(path: path)
    }

    /// A remote destination is only known good once it answered; a local one is made by the run.
    private static func destinationUnchecked(_ destination: String) -> [String] {
        guard (try? StoreKind(destination: destination))?.isRemote == true else { return [] }
        return ["that \(destination) answers and these credentials may write there (the run probes it before its first job)"]
    }

    /// A queue directory is created by `watch` when missing; a file in its place is not one.
}

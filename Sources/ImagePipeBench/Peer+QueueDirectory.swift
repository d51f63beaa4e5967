// imagepipe `watch` on a queue directory: the corpus delivered into its inbox, worked off with every record, move and output on the folder's disk.
import Foundation
import ImagePipe

extension Peer {
    /// `watch --exit-when-empty` on a queue directory of the run's own under `directory`
    /// (`DIR/RUN/queue`), its outputs beside it (`DIR/RUN/out`), so the queue's records and moves
    /// and the outputs are all on that folder's file system: a disk, or tmpfs (`/dev/shm/...`) for
    /// the same work with no flush to wait for. Before each run (untimed) the corpus is copied into
    /// its inbox and written back, so the copy's dirty pages are not the run's to flush.
    /// `executable` may be another build of imagepipe than the bench's own (`--also-binary`).
    static func imagepipeQueueDirectory(executable: String, job: BenchJob, directory: String, label: String) -> Peer {
        @Sendable func folder(_ output: String) -> String { directory + "/" + URL(fileURLWithPath: output).lastPathComponent }
        var peer = Peer(name: label, unavailable: nil) { _, output in
            var command = [
                executable, "watch", folder(output) + "/queue", "--dest", folder(output) + "/out", "--exit-when-empty",
                "--jobs", "\(job.workers)", "--status-interval", "0", "--log-level", "error",
            ]
            for variant in job.variants { command += ["--variant", variant.specString] }
            return ([command + job.imagepipeArguments], 1)
        }
        peer.outputIsLocal = false
        peer.extraFolder = folder
        peer.setup = { corpus, output in
            [["sh", "-c", #"mkdir -p "$1/queue/inbox" && cp -R "$0"/. "$1/queue/inbox/" && sync"#, corpus.directory, folder(output)]]
        }
        return peer
    }

    /// The rows of `watch` on queue directories under each of `directories`, by the bench's own
    /// executable and, when given, by `other` (an earlier build) after each, so both run in one
    /// alternated series beside the same neighbour.
    static func imagepipeQueueDirectories(executable: String, other: String?, job: BenchJob, directories: [String]) -> [Peer] {
        directories.flatMap { directory in
            ([executable] + (other.map { [$0] } ?? [])).map { binary in
                let name = binary == executable ? "imagepipe" : URL(fileURLWithPath: binary).lastPathComponent
                // Each row's runs go into folders named after its own output folders: none finds another's queue.
                return imagepipeQueueDirectory(executable: binary, job: job, directory: directory, label: "\(name) watch (queue in \(directory))")
            }
        }
    }
}

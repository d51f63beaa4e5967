import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

/// Strangers' bytes through the sandboxed path of the real binary: the hostile fixtures, the image
/// fuzz targets' seeds and crash inputs, and mutants of a small JPEG. Each costs at most its own
/// image, never the worker; and none crashes a helper (a crash would be a decoder bug to look at).
@Suite(.offThePool) struct HostileInputSandboxTests {
    let directory = TemporaryDirectory(prefix: "imagepipe-hostile-sandbox")

    /// Byte flips, cut ends and repeated runs of a baseline JPEG, from a fixed seed: the same
    /// mutants every run, so a decoder crash one of them finds is found again.
    static func mutants(of original: Data, count: Int) -> [Data] {
        var random = SeededRandom(seed: 35)
        return (0..<count).map { _ in
            var bytes = [UInt8](original)
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                for _ in 0..<Int.random(in: 1...8, using: &random) {
                    bytes[Int.random(in: 2..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            case 1:
                bytes.removeLast(Int.random(in: 1..<bytes.count - 2, using: &random))
            default:
                let start = Int.random(in: 2..<bytes.count - 64, using: &random)
                let run = Array(bytes[start..<start + Int.random(in: 1...64, using: &random)])
                bytes.insert(contentsOf: run, at: Int.random(in: start..<bytes.count, using: &random))
            }
            return Data(bytes)
        }
    }

    @Test func everyHostileInputCostsAtMostItsOwnJobAndNoneCrashesAHelper() throws {
        var names: [String] = []
        func add(_ name: String, _ data: Data) {
            directory.write("src/" + name, data)
            names.append(name)
        }
        for file in Fixtures.files(in: "hostile") { add("hostile-" + file, Fixtures.data("hostile/" + file)) }
        for target in ["vips-header", "jpeg-direct"] {
            for file in Fixtures.files(in: "fuzz/" + target) { add("seed-\(target)-" + file, Fixtures.data("fuzz/\(target)/" + file)) }
        }
        for (number, mutant) in Self.mutants(of: Fixtures.data("images/formats/small-200x150.jpg"), count: 300).enumerated() {
            add("mutant-\(number).jpg", mutant)
        }
        let run = try CommandRunner.run([
            "batch", directory.url("src"), "--dest", directory.url("out"), "--manifest", directory.url("manifest.jsonl"), "--jobs", "2",
            "--variant", "small=100x100,jpeg,q70", "--variant", "alpha=100x100,webp,q70",
        ])
        #expect(run.status == 0 || run.status == 1, "the worker finished: \(run.stderr.suffix(3000))")
        let records = try ManifestReader.read(directory.url("manifest.jsonl"))
        #expect(records.map(\.source).sorted() == names.sorted(), "one record per input")
        let crashed = records.filter { $0.errorCode == .decoderCrashed || $0.errorCode == .jobTimeout || $0.errorCode == .helperUnavailable }
        #expect(crashed.isEmpty, "\(crashed.map { "\($0.source): \($0.error ?? "")" })")
        #expect(records.contains { $0.status == .done } && records.contains { $0.status == .failed })
        for record in records where record.status == .failed {
            #expect((record.error ?? "").count >= 10, "\(record.source): a reason")
        }
    }
}

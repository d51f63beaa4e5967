// The Swift fuzz targets by name: each hands the input to one parser of untrusted input, as given.
import Foundation

/// One parser under the fuzzer: its name (the `fixtures/fuzz/` folder of its corpus) and what it
/// does with an input. A target checks what must hold of the parser's result and stops the process
/// (`fatalError`) when it does not, which libFuzzer records as a crash.
struct FuzzTarget: Sendable {
    let name: String
    let run: @Sendable (Data) -> Void

    /// Every target, in the order `make fuzz` runs them.
    static let all: [FuzzTarget] = [
        FuzzTarget(name: "toml", run: ConfigurationTargets.toml),
        FuzzTarget(name: "aws-config", run: ConfigurationTargets.awsConfig),
        FuzzTarget(name: "variant-spec", run: ConfigurationTargets.variantSpec),
        FuzzTarget(name: "s3-xml", run: RemoteTargets.s3XML),
        FuzzTarget(name: "s3-listing", run: RemoteTargets.s3Listing),
        FuzzTarget(name: "supabase-json", run: RemoteTargets.supabaseJSON),
        FuzzTarget(name: "percent", run: RemoteTargets.percentDecoding),
        FuzzTarget(name: "job-row", run: NameTargets.jobRow),
        FuzzTarget(name: "key-template", run: NameTargets.keyTemplate),
        FuzzTarget(name: "sniff", run: NameTargets.sniff),
        FuzzTarget(name: "image-end", run: ImageTargets.imageEnd),
        FuzzTarget(name: "exif", run: MetadataTargets.exif),
        FuzzTarget(name: "frame-count", run: ImageTargets.frameCount),
        FuzzTarget(name: "helper-message", run: HelperTargets.helperMessage),
        FuzzTarget(name: "gain-map", run: ImageTargets.gainMap),
        FuzzTarget(name: "output-header", run: ImageTargets.outputHeader),
    ]

    static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }

    /// The target `IMAGEPIPE_FUZZ_TARGET` names, looked up once; an unknown name stops the run.
    static let selected: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["IMAGEPIPE_FUZZ_TARGET"] ?? ""
        guard let target = named(name) else {
            FileHandle.standardError.write(
                Data("IMAGEPIPE_FUZZ_TARGET must name one of: \(all.map(\.name).joined(separator: ", "))\n".utf8))
            exit(2)
        }
        return target
    }()
}

/// Stops the run when a property of a parser's result does not hold.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError(message()) }
}

extension Data {
    /// The input cut at its first NUL byte into two texts (the second empty without one): how a
    /// target that reads two things takes them from one input.
    var twoTexts: (String, String) {
        guard let split = firstIndex(of: 0) else { return (String(decoding: self, as: UTF8.self), "") }
        return (String(decoding: self[..<split], as: UTF8.self), String(decoding: self[(split + 1)...], as: UTF8.self))
    }
}

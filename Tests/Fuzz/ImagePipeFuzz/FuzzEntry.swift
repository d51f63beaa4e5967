// libFuzzer's entry points for the Swift parsers; built without the fuzzer, a command that replays files.
import Foundation

/// Called by libFuzzer with each input: the target named by `IMAGEPIPE_FUZZ_TARGET` reads it.
///
/// One binary serves every Swift target, so the package is built once for all of them; the target
/// is picked by an environment variable because libFuzzer keeps the command line for its own flags.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    FuzzTarget.selected.run(Data(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// The executable's entry point. SwiftPM links an executable target's own `main` (it renames the
/// module's entry point and points `main` at it), so libFuzzer's `main` is never linked: under
/// `-D FUZZING` this starts libFuzzer's driver, which reads its flags as usual. Otherwise
/// `ImagePipeFuzz TARGET FILE...` runs each file through a target once, to step through a crash
/// without the sanitizers.
@main
struct FuzzMain {
    static func main() {
        #if FUZZING
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(libFuzzerDriver(&argc, &argv, fuzzOneInput))
        #else
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTarget.named(name) else {
            print("usage: ImagePipeFuzz TARGET FILE...; targets: \(FuzzTarget.all.map(\.name).joined(separator: ", "))")
            exit(2)
        }
        for path in arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                print("cannot read \(path)")
                exit(1)
            }
            target.run(data)
            print("ran \(path)")
        }
        #endif
    }
}

#if FUZZING
/// `int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *, size_t))`, from
/// the libFuzzer runtime `-sanitize=fuzzer` links.
@_silgen_name("LLVMFuzzerRunDriver")
func libFuzzerDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32
#endif

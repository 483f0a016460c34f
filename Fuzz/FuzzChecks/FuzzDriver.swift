#if FUZZING
import CLibFuzzer
#endif
import Glibc

/// The `main` of every fuzz target. Built with `-sanitize=fuzzer -DFUZZING` (`make fuzz`), it hands
/// the command line to libFuzzer (`LLVMFuzzerRunDriver`): SwiftPM links an executable's `main` as
/// its own module's entry point, so libFuzzer's `main` never runs, and this one starts the fuzzer.
/// Built normally, it replays files or folders (default: the target's committed corpus) through
/// the property and exits 1 when any fails. Either way `--seed-folders` prints the corpus folders.
public enum FuzzDriver {
    public static func run(_ property: any FuzzProperty.Type) -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments == ["--seed-folders"] {
            for folder in FuzzCorpus.folders(of: property) { print(folder) }
            exit(0)
        }
        #if FUZZING
        fuzzedProperty = property
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput))
        #else
        let paths = arguments.isEmpty ? FuzzCorpus.folders(of: property).map { "\(FuzzCorpus.repository)/\($0)" } : arguments
        var inputs = 0
        var failed = 0
        for file in paths.flatMap(FuzzCorpus.files(under:)) {
            guard let bytes = FuzzCorpus.read(file) else {
                print("\(file): cannot be read")
                failed += 1
                continue
            }
            inputs += 1
            let findings = property.check(bytes)
            if !findings.isEmpty { failed += 1 }
            for finding in findings { print("\(file): \(finding)") }
        }
        print("\(property.name): \(inputs) inputs replayed, \(failed) failed")
        exit(failed == 0 && inputs > 0 ? 0 : 1)
        #endif
    }
}

#if FUZZING
/// The property being fuzzed: set once by `run` before libFuzzer starts, then only read.
nonisolated(unsafe) private var fuzzedProperty: (any FuzzProperty.Type)?

/// libFuzzer's callback: a violated property aborts, so libFuzzer keeps the input as a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let property = fuzzedProperty else { return 0 }
    let findings = property.check(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    guard findings.isEmpty else {
        for finding in findings {
            let line = Array("\(property.name): \(finding)\n".utf8)
            _ = write(2, line, line.count)
        }
        abort()
    }
    return 0
}
#endif

#if LIBFUZZER
import BLEFuzzTargets
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// libFuzzer's entry point for programs that keep their own `main` (compiler-rt
/// FuzzerInterface.h): `int LLVMFuzzerRunDriver(int *argc, char ***argv,
/// int (*UserCb)(const uint8_t *Data, size_t Size))`. Linked by `-sanitize=fuzzer`; declared
/// only under `-DLIBFUZZER`, so a plain build never references it.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// Hands the process to libFuzzer with the chosen target.
enum LibFuzzerDriver {
    /// The target the C callback calls. Set once before libFuzzer starts and only read after,
    /// from libFuzzer's one fuzzing thread.
    nonisolated(unsafe) static var selected: (@Sendable ([UInt8]) -> Void)?

    static func run(target name: String) -> Never {
        selected = FuzzTargets.all[name]
        // The Swift runtime's crash backtracer owns the fatal signals, and libFuzzer does not
        // replace a handler that is already installed: a trap (Swift's fatalError, an overflow,
        // a broken FuzzCheck invariant) would then end the process without libFuzzer writing
        // the crash-<sha1> reproducer. Give the signals back so libFuzzer installs its own.
        for number in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE] {
            _ = signal(number, SIG_DFL)
        }
        // libFuzzer parses argv itself: give it the program name and everything after TARGET.
        let argc = Int(CommandLine.argc)
        var passed: [UnsafeMutablePointer<CChar>?] = [CommandLine.unsafeArgv[0]]
        for i in 2..<max(2, argc) { passed.append(CommandLine.unsafeArgv[i]) }
        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: passed.count + 1)
        for (i, p) in passed.enumerated() { argv[i] = p }
        argv[passed.count] = nil
        var count = Int32(passed.count)
        var vector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
        let status = LLVMFuzzerRunDriver(&count, &vector) { data, size in
            let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
            LibFuzzerDriver.selected?(bytes)
            return 0
        }
        exit(status)
    }
}
#endif

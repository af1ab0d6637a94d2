// ble-fuzz: one executable for every fuzz target of the stack (docs/FUZZING.md).
//
//   ble-fuzz --list
//   ble-fuzz TARGET --write-seeds DIR        golden seeds as files, for a libFuzzer corpus
//   ble-fuzz TARGET [libFuzzer options] [CORPUS_DIR|FILE...]
//
// Built with `-Xswiftc -sanitize=fuzzer -Xswiftc -DLIBFUZZER` (scripts/fuzz.sh) the last form
// is libFuzzer: everything after TARGET goes to LLVMFuzzerRunDriver. Built plainly (`swift
// build`), it is the deterministic smoke mode: `-runs=N` and `-seed=S` pick how many
// pseudo-random inputs to run, and file arguments are replayed instead (reproducers).

import BLEFuzzTargets
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func usage() -> Never {
    printError("usage: ble-fuzz TARGET [options] [FILE|DIR...] | ble-fuzz --list | ble-fuzz TARGET --write-seeds DIR")
    printError("targets: " + FuzzTargets.names.joined(separator: ", "))
    exit(2)
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else { usage() }
let name = arguments[1]
if name == "--list" {
    for n in FuzzTargets.names { print(n) }
    exit(0)
}
guard FuzzTargets.all[name] != nil else {
    printError("ble-fuzz: unknown target '\(name)'")
    usage()
}
let options = Array(arguments.dropFirst(2))

if options.first == "--write-seeds" {
    guard options.count == 2 else { usage() }
    let seeds = FuzzTargets.seeds(for: name)
    for (index, seed) in seeds.enumerated() {
        let path = options[1] + "/seed-\(name)-\(index)"
        guard writeFile(path, seed) else {
            printError("ble-fuzz: cannot write \(path)")
            exit(1)
        }
    }
    print("wrote \(seeds.count) seeds to \(options[1])")
    exit(0)
}

#if LIBFUZZER
LibFuzzerDriver.run(target: name)
#else
exit(SmokeMode.run(target: name, options: options))
#endif

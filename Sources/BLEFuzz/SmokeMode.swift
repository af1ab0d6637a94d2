#if !LIBFUZZER
import BLEFuzzTargets

/// `ble-fuzz TARGET [-runs=N] [-seed=S] [FILE|DIR...]` without libFuzzer: N deterministic
/// pseudo-random inputs (FuzzSmoke), or the given files replayed. Exit status 1 when an
/// invariant broke; the first failing input is written to `smoke-failure-TARGET` (or to
/// `-artifact_prefix=` + that name) so it can be replayed.
enum SmokeMode {
    static func run(target name: String, options: [String]) -> Int32 {
        var runs = 10_000
        var seed: UInt64 = 1
        var artifactPrefix = ""
        var files: [String] = []
        for option in options {
            if let v = value(option, "-runs=") {
                runs = Int(v) ?? runs
            } else if let v = value(option, "-seed=") {
                seed = UInt64(v) ?? seed
            } else if let v = value(option, "-artifact_prefix=") {
                artifactPrefix = v
            } else if option.hasPrefix("-") {
                // libFuzzer options (-max_total_time=, -max_len=, ...) mean nothing here.
                continue
            } else {
                files.append(option)
            }
        }

        if !files.isEmpty {
            var inputs: [[UInt8]] = []
            for path in files {
                let found = listFiles(path)
                for file in found {
                    guard let bytes = readFile(file) else {
                        printError("ble-fuzz: cannot read \(file)")
                        return 2
                    }
                    inputs.append(bytes)
                }
            }
            let violations = FuzzSmoke.replay(target: name, inputs: inputs) ?? FuzzViolations()
            print("\(name): replayed \(inputs.count) inputs, \(violations.count) invariant violations")
            for m in violations.messages { print("  violation: \(m)") }
            return violations.isEmpty ? 0 : 1
        }

        guard let result = FuzzSmoke.run(target: name, iterations: runs, seed: seed) else { return 2 }
        print("\(name): \(result.inputs) inputs (\(result.seedInputs) seeds, \(result.mutatedInputs) mutated, "
              + "\(result.randomInputs) random; seed \(seed)), \(result.violations.count) invariant violations")
        for m in result.violations.messages { print("  violation: \(m)") }
        if let failing = result.firstFailingInput {
            let path = artifactPrefix + "smoke-failure-\(name)"
            if writeFile(path, failing) { print("  first failing input written to \(path)") }
        }
        return result.violations.isEmpty ? 0 : 1
    }

    private static func value(_ option: String, _ prefix: String) -> String? {
        option.hasPrefix(prefix) ? String(option.dropFirst(prefix.count)) : nil
    }
}
#endif

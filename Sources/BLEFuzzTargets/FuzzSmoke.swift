import BLEWire
/// Deterministic fuzzing without libFuzzer: seeded pseudo-random inputs (plain random bytes, and
/// the target's golden seeds mutated a few times each) run through a target with violations
/// collected. It finds far less than coverage-guided fuzzing, but it runs in a plain
/// `swift build` / `swift test`, so every target is exercised on every CI run, and the same seed
/// always gives the same inputs (a failure reproduces).
public enum FuzzSmoke {
    public struct Result: Sendable {
        public var target: String
        public var inputs = 0
        public var randomInputs = 0
        public var mutatedInputs = 0
        public var seedInputs = 0
        public var violations = FuzzViolations()
        /// The first input that broke an invariant, to save as a reproducer.
        public var firstFailingInput: [UInt8]?
    }

    /// Runs `iterations` inputs through the named target. Every golden seed is run unchanged
    /// first; the rest are 1 in 4 random bytes (0–256 long), 3 in 4 mutated seeds.
    public static func run(target name: String, iterations: Int, seed: UInt64 = 1) -> Result? {
        guard let target = FuzzTargets.all[name] else { return nil }
        let seeds = FuzzTargets.seeds(for: name)
        var result = Result(target: name)
        var rng = SplitMix64(seed: seed ^ fnv1a(name))

        func runOne(_ input: [UInt8]) {
            let found = FuzzCheck.collecting { target(input) }
            result.inputs += 1
            if !found.isEmpty, result.firstFailingInput == nil { result.firstFailingInput = input }
            result.violations.add(found)
        }

        for s in seeds.prefix(iterations) {
            runOne(s)
            result.seedInputs += 1
        }
        while result.inputs < iterations {
            if seeds.isEmpty || rng.next() % 4 == 0 {
                runOne(randomBytes(&rng, count: Int(rng.next() % 257)))
                result.randomInputs += 1
            } else {
                var input = seeds[Int(rng.next() % UInt64(seeds.count))]
                for _ in 0..<(1 + Int(rng.next() % 4)) { mutate(&input, &rng, seeds: seeds) }
                runOne(input)
                result.mutatedInputs += 1
            }
        }
        return result
    }

    /// Runs given inputs (reproducers, corpus files) through a target, violations collected.
    public static func replay(target name: String, inputs: [[UInt8]]) -> FuzzViolations? {
        guard let target = FuzzTargets.all[name] else { return nil }
        var total = FuzzViolations()
        for input in inputs { total.add(FuzzCheck.collecting { target(input) }) }
        return total
    }

    // MARK: Mutations

    /// Values at the edges of length and count fields.
    static let interesting: [UInt8] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x10, 0x17, 0x1F, 0x20, 0x7F, 0x80, 0xFE, 0xFF]

    static func mutate(_ input: inout [UInt8], _ rng: inout SplitMix64, seeds: [[UInt8]]) {
        func index(_ count: Int) -> Int { Int(rng.next() % UInt64(max(1, count))) }
        switch rng.next() % 9 {
        case 0 where !input.isEmpty:
            input[index(input.count)] ^= UInt8(1) << UInt8(rng.next() % 8)
        case 1 where !input.isEmpty:
            input[index(input.count)] = UInt8(truncatingIfNeeded: rng.next())
        case 2 where !input.isEmpty:
            input[index(input.count)] = interesting[index(interesting.count)]
        case 3 where !input.isEmpty:
            let i = index(input.count)
            input[i] = rng.next() % 2 == 0 ? input[i] &+ 1 : input[i] &- 1
        case 4:
            let at = index(input.count + 1)
            input.insert(contentsOf: randomBytes(&rng, count: 1 + index(8)), at: at)
        case 5 where !input.isEmpty:
            let start = index(input.count)
            let end = min(input.count, start + 1 + index(8))
            input.removeSubrange(start..<end)
        case 6 where !input.isEmpty:
            let start = index(input.count)
            let end = min(input.count, start + 1 + index(16))
            let copy = Array(input[start..<end])
            input.insert(contentsOf: copy, at: index(input.count + 1))
        case 7 where !input.isEmpty:
            input.removeLast(index(input.count) + 1)
        case 8 where !seeds.isEmpty:
            let other = seeds[index(seeds.count)]
            input = Array(input.prefix(index(input.count + 1))) + other.suffix(index(other.count + 1))
        default:
            input.append(UInt8(truncatingIfNeeded: rng.next()))
        }
    }

    static func randomBytes(_ rng: inout SplitMix64, count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    static func fnv1a(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
    }
}


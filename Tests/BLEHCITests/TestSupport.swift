import BLEWire
import XCTest

/// Hex literal to bytes; a malformed literal yields a sentinel that makes the test fail loudly.
func h(_ s: String, file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
    guard let bytes = [UInt8](hexString: s) else {
        XCTFail("bad hex literal \(s)", file: file, line: line)
        return [0xDE, 0xAD]
    }
    return bytes
}

func addr(_ s: String) -> BDAddress { BDAddress(string: s) ?? .zero }

/// A small deterministic generator for the fuzz-style tests (SplitMix64).
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

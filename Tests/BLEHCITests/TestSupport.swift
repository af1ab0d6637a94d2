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

/// The seeded generator the fuzz-style tests share (BLEWire's SplitMix64).
typealias SeededGenerator = SplitMix64

import BLEWire
import XCTest

func addr(_ s: String) -> BDAddress { BDAddress(string: s) ?? .zero }

/// The seeded generator the fuzz-style tests share (BLEWire's SplitMix64).
typealias SeededGenerator = SplitMix64

import BLEWire
import XCTest

/// The bytes a hex literal in a test spells, written the way the Core spec, RFCs and PDU scripts
/// print them: two digits an octet, first octet first, spaces (or `:`/`-`) allowed between
/// them for readability — "0a 0300", "6274736e 6f6f7000".
///
/// One helper for every test target, so that a typo in a literal is reported the same way
/// everywhere: the test fails at the caller's line naming the literal, and the result is empty
/// (never a guess at what was meant). The parsing itself is BLEWire's `[UInt8](hexString:)`;
/// the reverse, bytes to hex, is its `hexString`.
public func hexBytes(_ literal: String, file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
    guard let bytes = [UInt8](hexString: literal) else {
        XCTFail("not a hex byte string: \"\(literal)\"", file: file, line: line)
        return []
    }
    return bytes
}

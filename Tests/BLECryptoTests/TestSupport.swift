import XCTest
@testable import BLECrypto

/// Bytes from hex written the way the spec and RFCs print it: MSB first, spaces allowed.
func hex(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
    let digits = text.filter { !$0.isWhitespace }
    guard digits.count % 2 == 0 else {
        XCTFail("odd number of hex digits in \(text)", file: file, line: line)
        return []
    }
    var bytes: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        guard let byte = UInt8(digits[index..<next], radix: 16) else {
            XCTFail("bad hex \(digits[index..<next]) in \(text)", file: file, line: line)
            return []
        }
        bytes.append(byte)
        index = next
    }
    return bytes
}

/// Asserts that `body` throws a `CryptoError` with `code`.
func assertThrows<T>(_ code: CryptoError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> T) {
    do {
        _ = try body()
        XCTFail("expected CryptoError.\(code), nothing was thrown", file: file, line: line)
    } catch let error as CryptoError {
        XCTAssertEqual(error.code, code, error.message, file: file, line: line)
        XCTAssertFalse(error.message.isEmpty, file: file, line: line)
    } catch {
        XCTFail("expected CryptoError.\(code), got \(error)", file: file, line: line)
    }
}

import XCTest
@testable import BLECrypto

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

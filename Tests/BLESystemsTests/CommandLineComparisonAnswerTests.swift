import BLE
import BLESystems
import XCTest

/// `ble --confirm yes|no` answers numeric comparisons without a person comparing the numbers,
/// so the agent says so (`PairingAgent.confirmsWithoutAPerson`) and such a comparison cannot
/// let a pairing the peer started replace a bond; an answer typed at the terminal can.
final class CommandLineComparisonAnswerTests: XCTestCase {
    func testAGivenConfirmAnswerComparesNothing() {
        XCTAssertTrue(CommandLinePairingAgent(passkey: nil, confirm: true, interactive: false, show: { _ in }).confirmsWithoutAPerson)
        XCTAssertTrue(CommandLinePairingAgent(passkey: nil, confirm: false, interactive: true, show: { _ in }).confirmsWithoutAPerson)
    }

    func testAnAnswerFromTheTerminalComesFromAPerson() {
        XCTAssertFalse(CommandLinePairingAgent(passkey: nil, confirm: nil, interactive: true, show: { _ in }).confirmsWithoutAPerson)
    }
}

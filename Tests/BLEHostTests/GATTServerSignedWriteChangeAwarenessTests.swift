import XCTest
import BLEWire
@testable import BLEHost

/// A Signed Write Command is a command like any other to robust caching (Core v5.4 Vol 3
/// Part G §2.5.2.1): from a change-unaware client that enabled robust caching it is ignored,
/// since the handle it names may have moved.
final class GATTServerSignedWriteChangeAwarenessTests: XCTestCase {
    func testAChangeUnawareClientsSignedWriteIsIgnored() throws {
        var f = try GATTServerSignedWriteTests.Fixture()
        f.server.restoreBondedState(changeAware: false, features: [0x01])
        let pdu = try GATTServerSignedWriteTests.pdu(f.signed, Array("new".utf8), counter: 5)
        XCTAssertEqual(f.verify(pdu, key: GATTServerSignedWriteTests.Fixture.key(last: 4)), .failure(.changeUnaware))
        // Aware again (it read the hash and sent a request, or confirmed Service Changed): accepted.
        f.server.restoreChangeAwareness(true)
        XCTAssertEqual(try f.verify(pdu, key: GATTServerSignedWriteTests.Fixture.key(last: 4)).get().handle, f.signed)
    }
}

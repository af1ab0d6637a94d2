@testable import BLE
import BLEWire
import XCTest

/// What our GATT server keeps of a bonded client survives the bond file (Core spec Vol 3 Part G
/// §2.5.2.1, §7.2): the hash of the database it last knew and its Client Supported Features. A
/// file written before either was recorded still reads, with neither.
final class BondGATTServerFieldsTests: XCTestCase {
    func testServedHashAndClientFeaturesRoundTripAndOldFilesStillRead() throws {
        let bond = Bond(peer: DeviceAddress(BDAddress(rawValue: 0xC011_2233_4455), type: .random),
                        localLongTermKey: [UInt8](repeating: 1, count: 16),
                        secureConnections: true, authenticated: false, keySize: 16,
                        clientConfigurations: [0x0008: 0x0002],
                        servedDatabaseHash: [UInt8](repeating: 0xAB, count: 16), clientSupportedFeatures: [0x01])
        let text = BondFileFormat.encode(bond)
        XCTAssertTrue(text.contains("served-database-hash=ABABABABABABABABABABABABABABABAB\n") || text.contains("served-database-hash=abababababababababababababababab\n"), text)
        XCTAssertTrue(text.contains("client-features=01\n"), text)
        XCTAssertEqual(try BondFileFormat.decodeBond(text), bond)
        let older = text.split(separator: "\n")
            .filter { !$0.hasPrefix("served-database-hash=") && !$0.hasPrefix("client-features=") }
            .joined(separator: "\n") + "\n"
        let decoded = try BondFileFormat.decodeBond(older)
        XCTAssertNil(decoded.servedDatabaseHash)
        XCTAssertNil(decoded.clientSupportedFeatures)
        XCTAssertEqual(decoded.clientConfigurations, [0x0008: 0x0002])
        XCTAssertThrowsError(try BondFileFormat.decodeBond(text.replacingOccurrences(of: "client-features=01", with: "client-features=0z")))
    }
}

import XCTest
import BLEWire
import BLETestSupport
@testable import BLEHost

/// The Security Manager's PDU codec (Core spec Vol 3 Part H §3.5–3.6): golden bytes from the
/// specification's sample data, every command round trip, and typed errors for bad lengths.
final class SMPPDUTests: XCTestCase {
    /// Appendix D.2 (c1): preq = 0x07071000000101 and pres = 0x05000800000302, written most
    /// significant octet first there; on the air the code goes first.
    func testThePairingFeatureExchangeOfTheSpecificationsC1Example() throws {
        let request = try SMPPDU.decode(hexBytes("01 01 00 00 10 07 07"))
        XCTAssertEqual(request, .pairingRequest(SMPPairingFeatures(
            ioCapability: .displayYesNo, oobDataFlag: 0, authRequirements: [], maximumEncryptionKeySize: 16,
            initiatorKeyDistribution: [.encryptionKey, .identityKey, .signingKey],
            responderKeyDistribution: [.encryptionKey, .identityKey, .signingKey])))
        let response = try SMPPDU.decode(hexBytes("02 03 00 00 08 00 05"))
        XCTAssertEqual(response, .pairingResponse(SMPPairingFeatures(
            ioCapability: .noInputNoOutput, authRequirements: [], maximumEncryptionKeySize: 8,
            initiatorKeyDistribution: [], responderKeyDistribution: [.encryptionKey, .signingKey])))
        XCTAssertEqual(request.encode(), hexBytes("01 01 00 00 10 07 07"))
        XCTAssertEqual(response.encode(), hexBytes("02 03 00 00 08 00 05"))
    }

    func testEveryCommandRoundTrips() throws {
        let key = Array(UInt8(0)..<16)
        let all: [SMPPDU] = [
            .pairingRequest(SMPPairingFeatures(ioCapability: .keyboardDisplay, authRequirements: [.bonding, .mitm, .secureConnections, .keypress],
                                               initiatorKeyDistribution: [.identityKey], responderKeyDistribution: [.encryptionKey, .identityKey])),
            .pairingConfirm(key), .pairingRandom(key.reversed()), .pairingFailed(.dhKeyCheckFailed),
            .encryptionInformation(longTermKey: key), .centralIdentification(ediv: 0xBEEF, rand: 0x0102_0304_0506_0708),
            .identityInformation(identityResolvingKey: key),
            .identityAddressInformation(DeviceAddress(BDAddress(rawValue: 0xC1_22_33_44_55_66), type: .random)),
            .identityAddressInformation(DeviceAddress(BDAddress(rawValue: 0x00_1B_DC_00_00_01), type: .public)),
            .signingInformation(signatureKey: key), .securityRequest([.bonding, .mitm]),
            .pairingPublicKey(x: Array(repeating: 0xAA, count: 32), y: Array(repeating: 0x55, count: 32)),
            .pairingDHKeyCheck(key), .keypressNotification(.digitEntered),
            .unknown(code: 0x2F, parameters: [1, 2, 3]),
        ]
        for pdu in all {
            XCTAssertEqual(try SMPPDU.decode(pdu.encode()), pdu, "\(pdu)")
        }
    }

    func testMultiOctetFieldsTravelLeastSignificantFirst() throws {
        XCTAssertEqual(SMPPDU.centralIdentification(ediv: 0x1234, rand: 0x0102_0304_0506_0708).encode(),
                       hexBytes("07 3412 0807060504030201"))
        XCTAssertEqual(try SMPPDU.decode(hexBytes("09 01 665544332211")),
                       .identityAddressInformation(DeviceAddress(BDAddress(rawValue: 0x11_22_33_44_55_66), type: .random)))
    }

    func testWrongLengthsAreTypedErrorsThatOweInvalidParameters() {
        XCTAssertThrowsError(try SMPPDU.decode([])) { XCTAssertEqual($0 as? SMPDecodeError, .empty) }
        for bad in [hexBytes("01 01 00 00 10 07"), hexBytes("01 01 00 00 10 07 07 00"), hexBytes("03") + Array(repeating: 0, count: 15),
                    hexBytes("0C") + Array(repeating: 0, count: 63), hexBytes("05"), hexBytes("0B 01 00")] {
            XCTAssertThrowsError(try SMPPDU.decode(bad), "\(bad)") { error in
                guard case .wrongLength = error as? SMPDecodeError else { return XCTFail("\(error)") }
                XCTAssertEqual((error as? SMPDecodeError)?.failureReason, .invalidParameters)
            }
        }
    }

    func testReservedValuesAreKeptForTheStateMachineToJudge() throws {
        guard case let .pairingRequest(f) = try SMPPDU.decode(hexBytes("01 07 02 C0 06 F0 F0")) else { return XCTFail() }
        XCTAssertFalse(f.ioCapability.isDefined)
        XCTAssertEqual(f.oobDataFlag, 2)
        XCTAssertEqual(f.authRequirements.rawValue, 0xC0)
        XCTAssertEqual(f.maximumEncryptionKeySize, 6)
        XCTAssertEqual(f.initiatorKeyDistribution.rawValue, 0xF0)
    }
}

import BLESystems
import CoreBluetooth
import XCTest

/// An ATT Error Response reaches the app with the code the peer sent (Core spec Vol 3 Part F
/// §3.4.1.1), also an application error (0x80–0x9F) that Apple's `CBATTError.Code` has no name
/// for: on Apple platforms it arrives as `CBATTErrorDomain` with that code.
final class ATTErrorTests: XCTestCase {
    override func setUp() { setenv("BLE_HCI", "virtual", 1) }
    override func tearDown() { unsetenv("BLE_HCI") }

    func testAnApplicationErrorKeepsItsCode() throws {
        let name = "CBATT-\(UInt16.random(in: 0...0xFFFF))"
        let served = try blocking { try await ServedProfile.start(HeartRateServeProfile.self, name: name) }
        defer { try? blocking { await served.stop() } }
        let queue = DispatchQueue(label: "cb.att")
        let recorder = Recorder(queue: queue)
        let central = CBCentralManager(delegate: recorder, queue: queue)
        wait("poweredOn") { recorder.events.contains("state poweredOn") }
        central.scanForPeripherals(withServices: [CBUUID(string: "180D")])
        wait("discovery of \(name)") { recorder.discoveries.contains { $0.peripheral.name == name } }
        central.stopScan()
        let peripheral = try XCTUnwrap(recorder.discoveries.first { $0.peripheral.name == name }?.peripheral)
        peripheral.delegate = recorder
        central.connect(peripheral)
        wait("didConnect") { recorder.events.contains("connect") }
        peripheral.discoverServices([CBUUID(string: "180D")])
        wait("services") { recorder.events.contains("services") }
        let service = try XCTUnwrap(peripheral.services?.first)
        peripheral.discoverCharacteristics([CBUUID(string: "2A39")], for: service)
        wait("characteristics") { recorder.events.contains("characteristics 180D") }
        let controlPoint = try XCTUnwrap(service.characteristics?.first)

        // Heart Rate Control Point: 0x02 is not a command, the sensor answers 0x80 (HRS §3.3).
        peripheral.writeValue(Data([0x02]), for: controlPoint, type: .withResponse)
        wait("the refused write") { recorder.events.contains("write error 2A39") }
        let error = try XCTUnwrap(recorder.error(for: "write error 2A39"))
        XCTAssertEqual((error as NSError).domain, CBATTErrorDomain)
        XCTAssertEqual((error as NSError).code, 0x80, "the peer's code, not unlikelyError (14)")
        XCTAssertEqual((error as? CBATTError)?.errorCode, 0x80)
        XCTAssertEqual(error.localizedDescription, "Unknown ATT error.")
        XCTAssertFalse(CBATTError.unlikelyError ~= error, "0x80 is not Unlikely Error")

        // A code Apple names keeps its name.
        let named: any Error = CBATTError(.writeNotPermitted)
        XCTAssertEqual((named as NSError).code, 3)
        XCTAssertTrue(CBATTError.writeNotPermitted ~= named)
        central.cancelPeripheralConnection(peripheral)
        wait("didDisconnect") { recorder.events.contains("disconnect") }
    }
}

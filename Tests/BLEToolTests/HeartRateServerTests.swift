import BLE
import BLEHost
import BLEProfiles
import BLEVirtualRadio
import BLEWire
import XCTest
@testable import ble

/// `ble serve heart-rate`'s Control Point and Energy Expended (HRS §3.3), beyond the happy path.
final class HeartRateServerTests: XCTestCase {
    /// HRS §3.3: a value other than exactly 0x01 is answered with 0x80 (Control Point Value Not
    /// Supported), also when it is longer than one byte: not with Invalid Attribute Value Length
    /// before the profile sees it. 100 bytes at ATT_MTU 23 go as a long (prepared) write.
    func testEveryWriteButExactly0x01Gets0x80WhateverItsLength() async throws {
        let codes = try await VirtualWorld.run { world -> [[UInt8]: UInt8] in
            let sensor = try await ServedProfile.start(ble.HeartRateProfile(), in: world, name: "HRM")
            let (central, _) = try await world.addCentral()
            let found = try await central.find(filter: ScanFilter(serviceUUIDs: ["180D"]), timeout: .seconds(5))
            let peripheral = try await central.connect(found.address)
            let services = try await peripheral.discoverServices(["180D"])
            let service = try XCTUnwrap(services.first)
            let characteristics = try await peripheral.discoverCharacteristics(for: service)
            let controlPoint = try XCTUnwrap(characteristics.first { $0.uuid == "2A39" })
            var codes: [[UInt8]: UInt8] = [:]
            for value in [[0x01, 0x00], [0x01, 0x01, 0x01], [UInt8](repeating: 0x01, count: 20), [UInt8](repeating: 0x01, count: 100)] as [[UInt8]] {
                do {
                    try await peripheral.writeValue(value, for: controlPoint)
                } catch let BLEError.gatt(.att(code, _, _)) {
                    codes[value] = code.rawValue
                }
            }
            try await peripheral.writeValue([0x01], for: controlPoint)
            try await peripheral.disconnect()
            await central.close()
            await sensor.stop()
            return codes
        }
        XCTAssertEqual(codes.count, 4, "every longer value was refused")
        for (value, code) in codes { XCTAssertEqual(code, 0x80, "\(value.count) bytes") }
    }
}

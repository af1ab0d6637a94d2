import BLERuntime
import BLEVirtual
import BLE
import BLEHost
import BLEProfiles
import BLEVirtualRadio
import BLEWire
import XCTest
import BLESystems
import BLETestSupport

/// `ble serve heart-rate`'s Control Point and Energy Expended (HRS §3.3), beyond the happy path.
final class HeartRateServerTests: XCTestCase {
    /// HRS §3.3: a value other than exactly 0x01 is answered with 0x80 (Control Point Value Not
    /// Supported), also when it is longer than one byte: not with Invalid Attribute Value Length
    /// before the profile sees it. 100 bytes at ATT_MTU 23 go as a long (prepared) write.
    func testEveryWriteButExactly0x01Gets0x80WhateverItsLength() async throws {
        let codes = try await VirtualWorld.run { world -> [[UInt8]: UInt8] in
            let sensor = try await world.serve(HeartRateServeProfile(), name: "HRM", json: false)
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

/// The measurement cycle shared by the sending loop and the Control Point.
final class SharedHeartRateCycleTests: XCTestCase {
    func testADeliveredMeasurementCountsOneKilojoule() {
        let cycle = SharedHeartRateCycle()
        XCTAssertEqual(cycle.make().energyExpended, nil, "measurement 0 has no Energy Expended field")
        cycle.delivered()
        _ = cycle.make()
        cycle.delivered()
        XCTAssertEqual(cycle.index, 2)
        XCTAssertEqual(cycle.energyExpended, 2)
    }

    /// A reset while a measurement is on its way (made, not yet delivered) is not undone when
    /// the cycle moves past it: the next measurement says 0 kJ, not 1.
    func testAResetDuringASendStands() {
        let cycle = SharedHeartRateCycle()
        for _ in 0..<8 {
            _ = cycle.make()
            cycle.delivered()
        }
        XCTAssertEqual(cycle.energyExpended, 8)
        _ = cycle.make()
        cycle.resetEnergyExpended()
        cycle.delivered()
        XCTAssertEqual(cycle.index, 9, "the measurement was still delivered")
        XCTAssertEqual(cycle.energyExpended, 0, "the reset stands")
        _ = cycle.make()
        cycle.delivered()
        XCTAssertEqual(cycle.energyExpended, 1, "and counting goes on from it")
    }

    /// A reset before the measurement is made: it carries 0, and its delivery counts.
    func testAMeasurementMadeAfterAResetCarriesZero() {
        let cycle = SharedHeartRateCycle()
        for _ in 0..<6 {
            _ = cycle.make()
            cycle.delivered()
        }
        cycle.resetEnergyExpended()
        let m = cycle.make()
        XCTAssertEqual(m.energyExpended, 0, "measurement 6 carries Energy Expended")
        cycle.delivered()
        XCTAssertEqual(cycle.energyExpended, 1)
    }
}

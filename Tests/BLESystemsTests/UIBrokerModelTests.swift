import Foundation
import XCTest
@testable import BLESystems

/// `ble ui --broker`'s picture of a building, fed message by message as the broker would
/// deliver them: the strongest gateway, gateways going offline, devices going away, bounded
/// memory, and payloads that are not what a gateway sends.
final class UIBrokerModelTests: XCTestCase {
    /// The receiver's clock in these tests (Unix ms).
    static let now = 1_800_000_000_000
    /// The demo heart-rate monitor's address.
    static let hrm = "00:5A:B1:00:00:03"

    /// An `adv/ADDRESS` payload as a gateway publishes it.
    static func adv(name: String = "HRM", rssi: Any = -40, services: [String] = ["180D"], gateway: String = "lab", time: Int = now) -> [UInt8] {
        let object: [String: Any] = ["address": hrm, "addressType": "public", "name": name, "rssi": rssi, "connectable": true,
                                     "serviceUUIDs": services, "gateway": gateway, "time": time]
        return Array((try? JSONSerialization.data(withJSONObject: object)) ?? Data())
    }

    /// UTF-8 bytes.
    static func text(_ s: String) -> [UInt8] { Array(s.utf8) }

    /// The overview as the page gets it, parsed.
    static func overview(_ model: UIBrokerModel) throws -> [String: Any] {
        let text = JSON.object(model.overviewFields()).text
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
    }

    func testTheStrongestOnlineGatewayIsMarkedAndAnOfflineOneIsPassedOver() throws {
        var model = UIBrokerModel(prefix: "ble")
        XCTAssertEqual(model.receive(topic: "ble/hall/status", payload: Self.text("online"), now: Self.now), .gateway("hall"))
        XCTAssertEqual(model.receive(topic: "ble/lab/status", payload: Self.text("online"), now: Self.now), .gateway("lab"))
        XCTAssertEqual(model.receive(topic: "ble/hall/adv/\(Self.hrm)", payload: Self.adv(rssi: -72, gateway: "hall"), now: Self.now), .device(Self.hrm))
        XCTAssertEqual(model.receive(topic: "ble/lab/adv/\(Self.hrm)", payload: Self.adv(rssi: -48), now: Self.now), .device(Self.hrm))
        XCTAssertEqual(model.strongestGateway(for: Self.hrm), "lab")
        // Any spelling of the address finds the device.
        XCTAssertEqual(model.strongestGateway(for: "00:5a:b1:00:00:03"), "lab")

        let devices = try XCTUnwrap(try Self.overview(model)["devices"] as? [[String: Any]])
        XCTAssertEqual(devices.count, 1)
        XCTAssertEqual(devices[0]["name"] as? String, "HRM")
        XCTAssertEqual(devices[0]["strongest"] as? String, "lab")
        let sightings = try XCTUnwrap(devices[0]["gateways"] as? [[String: Any]])
        XCTAssertEqual(sightings.map { $0["gateway"] as? String }, ["lab", "hall"], "strongest first")
        XCTAssertEqual(sightings.map { $0["rssi"] as? Int }, [-48, -72])
        XCTAssertEqual(sightings.map { $0["strongest"] as? Bool }, [true, false])

        // The strong gateway dies (its will says offline): commands go to the other, though
        // its retained report stays in the list, marked offline.
        XCTAssertEqual(model.receive(topic: "ble/lab/status", payload: Self.text("offline"), now: Self.now), .gateway("lab"))
        XCTAssertEqual(model.strongestGateway(for: Self.hrm), "hall")
        let after = try XCTUnwrap(try Self.overview(model)["devices"] as? [[String: Any]])
        let labRow = try XCTUnwrap((after[0]["gateways"] as? [[String: Any]])?.first { $0["gateway"] as? String == "lab" })
        XCTAssertEqual(labRow["status"] as? String, "offline")
        XCTAssertEqual(labRow["strongest"] as? Bool, false)
        let gateways = try XCTUnwrap(try Self.overview(model)["gateways"] as? [[String: Any]])
        XCTAssertEqual(gateways.map { "\($0["name"] ?? "")=\($0["status"] ?? "")" }, ["hall=online", "lab=offline"])

        // Both offline: no gateway to send to.
        _ = model.receive(topic: "ble/hall/status", payload: Self.text("offline"), now: Self.now)
        XCTAssertNil(model.strongestGateway(for: Self.hrm))
        // Equal RSSIs: the newer report wins.
        _ = model.receive(topic: "ble/hall/status", payload: Self.text("online"), now: Self.now)
        _ = model.receive(topic: "ble/lab/status", payload: Self.text("online"), now: Self.now)
        _ = model.receive(topic: "ble/hall/adv/\(Self.hrm)", payload: Self.adv(rssi: -48, gateway: "hall", time: Self.now + 5000), now: Self.now)
        XCTAssertEqual(model.strongestGateway(for: Self.hrm), "hall")
    }

    func testAnEmptyRetainedAdvertisementTakesTheDeviceFromThatGatewayThenFromTheList() {
        var model = UIBrokerModel(prefix: "home/ble")
        _ = model.receive(topic: "home/ble/hall/adv/\(Self.hrm)", payload: Self.adv(rssi: -70, gateway: "hall"), now: Self.now)
        _ = model.receive(topic: "home/ble/lab/adv/\(Self.hrm)", payload: Self.adv(rssi: -50), now: Self.now)
        XCTAssertEqual(model.device(Self.hrm)?.sightings.count, 2)
        XCTAssertEqual(model.receive(topic: "home/ble/lab/adv/\(Self.hrm)", payload: [], now: Self.now), .device(Self.hrm))
        XCTAssertEqual(model.device(Self.hrm)?.sightings.keys.sorted(), ["hall"])
        XCTAssertEqual(model.strongestGateway(for: Self.hrm), "hall")
        _ = model.receive(topic: "home/ble/hall/adv/\(Self.hrm)", payload: [], now: Self.now)
        XCTAssertNil(model.device(Self.hrm))
        XCTAssertTrue(model.devices.isEmpty)
        // A retired gateway (its retained status cleared) takes its reports with it.
        _ = model.receive(topic: "home/ble/lab/adv/\(Self.hrm)", payload: Self.adv(rssi: -50), now: Self.now)
        _ = model.receive(topic: "home/ble/lab/status", payload: [], now: Self.now)
        XCTAssertNil(model.gateway("lab"))
        XCTAssertNil(model.device(Self.hrm))
        XCTAssertEqual(model.ignored, 0)
    }

    func testHeartRateAndAccelerometerValuesAreKeptPerDeviceNewestLast() throws {
        var model = UIBrokerModel(prefix: "ble")
        let hr = #"{"address":"00:5A:B1:00:00:03","characteristic":"2A37","hex":"16","heartRate":{"bpm":72,"contact":true,"energyKJ":12,"rr":[0.8,0.81]},"gateway":"lab","time":1800000001000}"#
        guard case let .heartRate(address, value) = model.receive(topic: "ble/lab/dev/\(Self.hrm)/2A37", payload: Self.text(hr), now: Self.now) else {
            return XCTFail("not a heart-rate value")
        }
        XCTAssertEqual(address, Self.hrm)
        XCTAssertEqual(value, UIBrokerModel.HeartRate(bpm: 72, contact: true, energyKJ: 12, rrIntervals: [0.8, 0.81], gateway: "lab", time: 1_800_000_001_000))
        // No time in the payload: the receiver's.
        let accel = #"{"address":"00:5A:B1:00:00:04","characteristic":"0012","accelerometer":{"x":0.5,"y":-1,"z":1.25}}"#
        XCTAssertEqual(model.receive(topic: "ble/lab/dev/00:5A:B1:00:00:04/0012", payload: Self.text(accel), now: Self.now),
                       .acceleration(address: "00:5A:B1:00:00:04", UIBrokerModel.Acceleration(x: 0.5, y: -1, z: 1.25, gateway: "lab", time: Self.now)))
        // Another characteristic's value changes nothing shown.
        XCTAssertEqual(model.receive(topic: "ble/lab/dev/\(Self.hrm)/2A19", payload: Self.text(#"{"hex":"64"}"#), now: Self.now), .unchanged)
        XCTAssertEqual(model.heartRates(Self.hrm).map(\.bpm), [72])
        XCTAssertEqual(model.accelerationCount("00:5A:B1:00:00:04"), 1)
        // The screen's event fields: seconds, and contact as the radio mode's script reads it.
        let fields = JSON.object(UIBrokerModel.fields(value)).text
        XCTAssertEqual(fields, #"{"t":1800000001,"bpm":72,"contact":"detected","energyKJ":12,"rrIntervals":[0.8,0.81],"gateway":"lab"}"#)
    }

    func testMemoryIsBoundedWhateverTheBrokerSends() {
        var limits = UIBrokerModel.Limits()
        limits.gateways = 3
        limits.devices = 5
        limits.valueDevices = 2
        limits.heartRateHistory = 4
        var model = UIBrokerModel(prefix: "ble", limits: limits)
        for g in 0..<10 { _ = model.receive(topic: "ble/gw\(g)/status", payload: Self.text("online"), now: Self.now) }
        XCTAssertEqual(model.gateways.map(\.name), ["gw7", "gw8", "gw9"], "the least recently heard go first")
        for d in 0..<20 {
            let address = String(format: "00:00:00:00:00:%02X", d)
            _ = model.receive(topic: "ble/gw9/adv/\(address)", payload: Self.adv(rssi: -40 - d, gateway: "gw9"), now: Self.now)
        }
        XCTAssertEqual(model.devices.count, 5)
        XCTAssertEqual(model.devices.map(\.address), (15..<20).map { String(format: "00:00:00:00:00:%02X", $0) })
        for d in 0..<3 {
            for bpm in 60..<70 {
                let payload = Self.text(#"{"heartRate":{"bpm":\#(bpm),"contact":null,"rr":[]}}"#)
                _ = model.receive(topic: "ble/gw9/dev/00:00:00:00:00:0\(d)/2A37", payload: payload, now: Self.now)
            }
        }
        XCTAssertEqual(model.devicesWithValues, 2)
        XCTAssertTrue(model.heartRates("00:00:00:00:00:00").isEmpty, "the oldest device's values went")
        XCTAssertEqual(model.heartRates("00:00:00:00:00:02").map(\.bpm), [66, 67, 68, 69], "the newest four")
        // A gateway pushed out takes its reports: a device only it heard leaves the list.
        for g in 10..<13 { _ = model.receive(topic: "ble/gw\(g)/status", payload: Self.text("online"), now: Self.now) }
        XCTAssertNil(model.gateway("gw9"))
        XCTAssertTrue(model.devices.isEmpty)
    }

    func testPayloadsThatAreNotAGatewaysAreIgnoredAndSaidWithoutChangingAnything() throws {
        var model = UIBrokerModel(prefix: "ble")
        _ = model.receive(topic: "ble/lab/status", payload: Self.text("online"), now: Self.now)
        _ = model.receive(topic: "ble/lab/adv/\(Self.hrm)", payload: Self.adv(rssi: -40), now: Self.now)
        let big = [UInt8](repeating: 0x20, count: model.limits.maximumPayload + 1)
        let refused: [(String, [UInt8])] = [
            ("ble/lab/adv/\(Self.hrm)", big),
            ("ble/lab/adv/\(Self.hrm)", Self.text("{not json")),
            ("ble/lab/adv/\(Self.hrm)", Self.text("[1,2,3]")),
            ("ble/lab/adv/not-an-address", Self.adv()),
            ("ble/lab/status", Self.text("maybe")),
            ("ble/lab/status/stats", Self.text("\"text\"")),
            ("ble/lab/dev/\(Self.hrm)/2A37", Self.text(#"{"heartRate":{"bpm":"fast"}}"#)),
            ("ble/lab/dev/\(Self.hrm)/2A37", Self.text(#"{"heartRate":{"bpm":true}}"#)),
            ("ble/lab/dev/\(Self.hrm)/0012", Self.text(#"{"accelerometer":{"x":1,"y":"2","z":3}}"#)),
            ("ble/$SYS/status", Self.text("online")),
            ("other/lab/status", Self.text("online")),
        ]
        for (topic, payload) in refused {
            guard case .ignored = model.receive(topic: topic, payload: payload, now: Self.now) else {
                XCTFail("\(topic) \(String(decoding: payload.prefix(40), as: UTF8.self)) was taken")
                continue
            }
        }
        XCTAssertEqual(model.ignored, refused.count)
        XCTAssertEqual(model.gateways.map(\.name), ["lab"])
        XCTAssertEqual(model.gateway("lab")?.online, true)
        XCTAssertEqual(model.device(Self.hrm)?.sightings["lab"]?.rssi, -40)
        XCTAssertTrue(model.heartRates(Self.hrm).isEmpty)
        // Odd fields of a well-formed advertisement are left out, not trusted.
        let odd = #"{"name":"<b>x</b>","rssi":"-30","serviceUUIDs":["180D",7,"zz"],"addressType":"weird","time":"soon"}"#
        XCTAssertEqual(model.receive(topic: "ble/lab/adv/\(Self.hrm)", payload: Self.text(odd), now: Self.now), .device(Self.hrm))
        let device = try XCTUnwrap(model.device(Self.hrm))
        XCTAssertEqual(device.name, "<b>x</b>", "kept as text; the page writes it with textContent")
        XCTAssertNil(device.sightings["lab"]?.rssi)
        XCTAssertEqual(device.serviceUUIDs, ["180D"])
        XCTAssertEqual(device.addressType, "public")
        XCTAssertNil(model.strongestGateway(for: Self.hrm), "no RSSI, no strongest")
        // The overview stays JSON the page parses, saying what was ignored last.
        let overview = try Self.overview(model)
        XCTAssertEqual(overview["ignored"] as? Int, refused.count)
        XCTAssertTrue((overview["lastIgnored"] as? String)?.contains("a topic outside ble/") == true, "\(overview)")
    }
}

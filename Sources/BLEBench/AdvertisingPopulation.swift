import BLE
import BLEHCI
import BLEWire

/// The neighbourhood `ble-bench scan` hears: `deviceCount` distinct devices, each advertising
/// once per round, as the HCI LE Meta events a controller sends for them (Core spec Vol 4 Part E
/// §7.7.65.2 legacy, §7.7.65.13 extended reports). A quarter of each kind:
///
/// - legacy ADV_IND with flags, two 16-bit services and manufacturer data, and a SCAN_RSP with
///   the complete name and TX power;
/// - legacy ADV_NONCONN_IND beacons (an iBeacon-shaped manufacturer record);
/// - extended connectable advertisements with a 128-bit service, the name, manufacturer data
///   and 16-bit service data;
/// - extended scannable advertisements with an extended scan response (name, two 128-bit
///   services, appearance).
///
/// The legacy scannable and extended connectable devices change their manufacturer and service
/// data every round (a sensor's reading), so those reports reach the consumer each round; the
/// others repeat and are duplicates after the first round. Every round also holds a few
/// malformed events, which the host must reject and go on.
enum AdvertisingPopulation {
    static let deviceCount = 10_000
    /// Malformed events per round (a reserved address type, a report running past its event).
    static let malformedPerRound = 8

    /// One round's HCI events in the order a controller sends them, and what they hold.
    struct Round: Sendable {
        var frames: [H4Frame] = []
        /// Advertising reports in each frame (0 for a malformed one).
        var reportCounts: [Int] = []
        var legacy = 0, extended = 0, scanResponses = 0
        var reports: Int { legacy + extended }
    }

    /// The address of device `index`: static random (top bits 0b11), distinct per device.
    static func address(_ index: Int) -> DeviceAddress {
        DeviceAddress(BDAddress(rawValue: 0xC000_0000_0000 | UInt64(index)), type: .random)
    }

    /// Every device heard once, with the changing data at `variant`; legacy reports are packed
    /// up to `reportsPerEvent` in one event, extended ones too, as long as the event's 255
    /// parameter bytes hold them (a controller packs what it has heard when it sends).
    static func round(variant: UInt8, reportsPerEvent: Int) -> Round {
        var round = Round()
        var pending: [LEAdvertisingReport] = []
        var pendingExtended = false
        var pendingBytes = 2
        func flush() {
            guard !pending.isEmpty else { return }
            let event: HCIEvent = pendingExtended ? .le(.extendedAdvertisingReport(pending)) : .le(.advertisingReport(pending))
            round.frames.append(event.h4Frame)
            round.reportCounts.append(pending.count)
            pending = []
            pendingBytes = 2
        }
        func add(_ report: LEAdvertisingReport) {
            let extended = !report.isLegacy
            let size = (extended ? 24 : 10) + report.data.count
            if extended != pendingExtended || pending.count == reportsPerEvent || pendingBytes + size > 255 { flush() }
            pendingExtended = extended
            pending.append(report)
            pendingBytes += size
            if extended { round.extended += 1 } else { round.legacy += 1 }
            if report.isScanResponse { round.scanResponses += 1 }
        }
        let malformedEvery = deviceCount / malformedPerRound
        for i in 0..<deviceCount {
            for report in reports(device: i, variant: variant) { add(report) }
            if i % malformedEvery == malformedEvery - 1 {
                flush()
                round.frames.append(malformed(i))
                round.reportCounts.append(0)
            }
        }
        flush()
        return round
    }

    /// The reports device `index` causes in one round: its advertisement, and its scan
    /// response when it is scannable.
    static func reports(device index: Int, variant: UInt8) -> [LEAdvertisingReport] {
        let address = address(index)
        let rssi = Int8(-40 - index % 50)
        let lo = UInt8(index & 0xFF), hi = UInt8(index >> 8)
        let number = String(1_000_000 + index).dropFirst(2) // five digits
        switch index % 4 {
        case 0:
            let adv = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported])
                .serviceUUIDs([BluetoothUUID(0x180D), BluetoothUUID(0x180F)])
                .manufacturerData(companyID: 0x0059, data: [variant, lo, hi, 0x01]).build().encode()
            let rsp = AdvertisingData.Builder().localName("Sensor-\(number)").txPowerLevel(4).build().encode()
            return [LEAdvertisingReport(legacy: .advInd, address: address, data: adv, rssi: rssi),
                    LEAdvertisingReport(legacy: .scanRsp, address: address, data: rsp, rssi: rssi)]
        case 1:
            let beacon: [UInt8] = [0x02, 0x15] + (0..<16).map { UInt8($0) &* 17 } + [hi, lo, 0x00, 0x01, 0xC5]
            let adv = AdvertisingData.Builder().flags([.brEdrNotSupported])
                .manufacturerData(companyID: 0x004C, data: beacon).build().encode()
            return [LEAdvertisingReport(legacy: .advNonconnInd, address: address, data: adv, rssi: rssi)]
        case 2:
            let adv = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported])
                .serviceUUIDs([BluetoothUUID(high: 0x6E40_0001_B5A3_F393, low: 0xE0A9_E50E_24DC_CA9E)])
                .localName("Tracker-\(number)")
                .manufacturerData(companyID: 0x0075, data: [variant, lo, hi, 0x10, 0x20, 0x30, 0x40, 0x50])
                .serviceData(BluetoothUUID(0x181A), [variant, 0x09]).build().encode()
            return [extended([.connectable], address, index, rssi, adv)]
        default:
            let adv = AdvertisingData.Builder().flags([.leGeneralDiscoverable, .brEdrNotSupported])
                .serviceUUIDs([BluetoothUUID(0xFE2C)], complete: false)
                .manufacturerData(companyID: 0x00E0, data: [lo, hi]).build().encode()
            let rsp = AdvertisingData.Builder().localName("Display-\(number)")
                .serviceUUIDs([BluetoothUUID(high: 0x0000_1234_0000_1000, low: 0x8000_0080_5F9B_34FB),
                               BluetoothUUID(high: 0xA0B1_C2D3_E4F5_0617, low: 0x2839_4A5B_6C7D_8E9F)])
                .appearance(0x0080).build().encode()
            return [extended([.scannable], address, index, rssi, adv),
                    extended([.scannable, .scanResponse], address, index, rssi, rsp)]
        }
    }

    private static func extended(_ properties: AdvertisingEventProperties, _ address: DeviceAddress, _ index: Int,
                                 _ rssi: Int8, _ data: [UInt8]) -> LEAdvertisingReport {
        LEAdvertisingReport(properties: properties, address: address, primaryPHY: .le1M, secondaryPHY: .le2M,
                            advertisingSID: UInt8(index % 16), rssi: rssi, data: data)
    }

    /// A garbled advertising report event: odd ones have a reserved address type, even ones a
    /// data length running past the event.
    private static func malformed(_ index: Int) -> H4Frame {
        var payload: [UInt8] = [HCIEvent.Code.leMeta, 0, LEMetaEvent.Subevent.advertisingReport, 1, 0x03]
        payload += index % 2 == 1 ? [0x07] + [UInt8](repeating: 0xAB, count: 6) + [0x00, 0xC0]
                                  : [0x01] + [UInt8](repeating: 0xCD, count: 6) + [0x1F, 0x02, 0x01]
        payload[1] = UInt8(payload.count - 2)
        return H4Frame(type: .event, payload: payload)
    }

    /// The marker that ends a batch: a beacon whose data says which batch (its parity is enough
    /// for it to be no duplicate of the one before), so the consumer knows every report of the
    /// batch has been delivered before it.
    static let markerAddress = DeviceAddress(BDAddress(rawValue: 0xC0FF_FFFF_FFFF), type: .random)

    static func marker(parity: UInt8) -> H4Frame {
        let data = AdvertisingData.Builder().manufacturerData(companyID: 0xFFFF, data: [parity]).build().encode()
        return HCIEvent.le(.advertisingReport([LEAdvertisingReport(legacy: .advNonconnInd, address: markerAddress,
                                                                   data: data, rssi: -30)])).h4Frame
    }
}

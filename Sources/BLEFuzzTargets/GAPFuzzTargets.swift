import BLEWire
import BLEHost

/// Fuzz targets for advertising data (Core spec Vol 3 Part C §11, CSS Part A) and the scan
/// aggregator that merges advertising reports into devices (Vol 6 Part B §4.4.3).
enum GAPFuzzTargets {
    // MARK: Advertising data

    /// The input is split into an advertisement and a scan response. Each is parsed, every typed
    /// accessor is read, and it must re-encode to the bytes it was parsed from (up to padding or
    /// the truncated structure `malformed` reports). The merge of the two must keep what the
    /// `merging` contract promises. Then the builder is driven from the same bytes and what it
    /// builds must read back as what was put in.
    static func advertisingData(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let split = Int(input.u8())
        let body = input.rest()
        let cut = body.isEmpty ? 0 : split % (body.count + 1)
        let advertisement = Array(body[..<cut]), scanResponse = Array(body[cut...])
        let a = checkParsed(advertisement)
        let b = checkParsed(scanResponse)
        checkMerge(a, b)
        checkMerge(b, a)
        checkBuilder(FuzzInput(body))
    }

    /// Parses `raw` and checks the re-encoding and the accessors; returns the parsed value.
    @discardableResult
    static func checkParsed(_ raw: [UInt8]) -> AdvertisingData {
        let ad = AdvertisingData(bytes: raw)
        let encoded = ad.encode()
        FuzzCheck.require(ad.encodedCount == encoded.count, "AD encodedCount \(ad.encodedCount) but \(encoded.count) bytes")
        FuzzCheck.require(raw.starts(with: encoded), "AD re-encoding is not a prefix of the input \(fuzzHex(raw))")
        let tail = raw[encoded.count...]
        if ad.malformed == nil {
            FuzzCheck.require(tail.first == nil || tail.first == 0, "AD stopped early without reporting malformed: \(fuzzHex(raw))")
        } else {
            FuzzCheck.require(Int(tail.first ?? 0) > tail.count - 1, "AD reported malformed for a complete structure: \(fuzzHex(raw))")
        }
        let again = AdvertisingData(bytes: encoded)
        FuzzCheck.require(again.structures == ad.structures && again.malformed == nil, "AD structures do not round-trip: \(fuzzHex(raw))")
        FuzzCheck.require(((try? ad.encode(limit: AdvertisingData.legacyLimit)) != nil) == (encoded.count <= AdvertisingData.legacyLimit),
                          "AD encode(limit:) disagrees with the size \(encoded.count)")
        readAccessors(ad)

        for limit in [0, 10, AdvertisingData.legacyLimit] {
            let short = ad.shorteningLocalName(toFit: limit)
            FuzzCheck.require(short.encodedCount <= ad.encodedCount, "shorteningLocalName grew the data")
            FuzzCheck.require(short.structures.count == ad.structures.count, "shorteningLocalName changed the structure count")
            if ad.encodedCount > limit, let index = ad.structures.firstIndex(where: { $0.type == .completeLocalName || $0.type == .shortenedLocalName }) {
                let old = ad.structures[index].data
                let name = short.structures[index].data
                let excess = ad.encodedCount - limit
                FuzzCheck.require(name.count <= max(0, old.count - excess), "shortened name of \(name.count) bytes does not make the room")
                FuzzCheck.require(short.structures[index].type == .shortenedLocalName, "shortened name not marked shortened")
                // A prefix, cut at a character boundary, of the name as decoded (NULs trimmed,
                // invalid UTF-8 replaced).
                var end = old.count
                while end > 0 && old[end - 1] == 0 { end -= 1 }
                let decoded = Array(String(decoding: old[..<end], as: UTF8.self).utf8)
                FuzzCheck.require(decoded.starts(with: name), "shortened name \(fuzzHex(name)) is not a prefix of \(fuzzHex(old))")
            } else {
                FuzzCheck.require(short == ad, "shorteningLocalName changed data that fits or has no name")
            }
        }
        return ad
    }

    /// Reads every typed view (none may trap) and checks the ones that promise no duplicates.
    static func readAccessors(_ ad: AdvertisingData) {
        _ = ad.flags?.description
        let services = ad.serviceUUIDs
        FuzzCheck.require(Set(services).count == services.count, "serviceUUIDs has duplicates")
        _ = ad.serviceUUIDsComplete
        let solicited = ad.solicitedServiceUUIDs
        FuzzCheck.require(Set(solicited).count == solicited.count, "solicitedServiceUUIDs has duplicates")
        _ = ad.localName
        _ = ad.isNameShortened
        _ = ad.txPowerLevel
        for m in ad.manufacturerData { _ = m.companyName }
        _ = ad.serviceData
        _ = ad.appearance
        _ = ad.appearanceName
        if let range = ad.peripheralConnectionIntervalRange { _ = range.description }
        _ = ad.advertisingIntervalMilliseconds
        _ = ad.leRole?.description
        let publicTargets = ad.publicTargetAddresses, randomTargets = ad.randomTargetAddresses
        FuzzCheck.require(Set(publicTargets).count == publicTargets.count && Set(randomTargets).count == randomTargets.count,
                          "target address lists have duplicates")
        _ = ad.leDeviceAddress
        _ = ad.uri?.description
        _ = ad.description
        _ = ad.summary
        for s in ad.structures { _ = s.type.name }
    }

    /// `a.merging(b)` against the documented rules (AdvertisingDataBuilder.swift `merging`).
    static func checkMerge(_ a: AdvertisingData, _ b: AdvertisingData) {
        let m = a.merging(b)
        FuzzCheck.require(a.merging(AdvertisingData()) == a, "merging an empty scan response changed the data")
        FuzzCheck.require(m.malformed == (a.malformed ?? b.malformed), "merge did not keep the first malformed")
        FuzzCheck.require(Set(m.serviceUUIDs) == Set(a.serviceUUIDs).union(b.serviceUUIDs), "merge lost or invented service UUIDs")
        FuzzCheck.require(Set(m.solicitedServiceUUIDs) == Set(a.solicitedServiceUUIDs).union(b.solicitedServiceUUIDs),
                          "merge lost or invented solicited UUIDs")
        FuzzCheck.require(Set(m.publicTargetAddresses) == Set(a.publicTargetAddresses).union(b.publicTargetAddresses),
                          "merge lost public target addresses")
        for entry in a.manufacturerData + b.manufacturerData {
            FuzzCheck.require(m.manufacturerData.contains(entry), "merge lost manufacturer data \(entry.companyID)")
        }
        let serviceDataUUIDs = Set(b.serviceData.map(\.uuid))
        for entry in b.serviceData {
            FuzzCheck.require(m.serviceData.contains(entry), "merge lost the scan response's service data")
        }
        for entry in a.serviceData where !serviceDataUUIDs.contains(entry.uuid) {
            FuzzCheck.require(m.serviceData.contains(entry), "merge lost the advertisement's service data")
        }
        if b.contains(.completeLocalName) {
            FuzzCheck.require(m.localName == b.localName, "merge did not take the scan response's complete name")
        } else if a.contains(.completeLocalName) {
            FuzzCheck.require(m.localName == a.localName, "merge dropped the advertisement's complete name")
        }
        // Single-valued types: the scan response's value wins, the advertisement's stays if the
        // response has none.
        for type in [AdvertisingData.ADType.flags, .txPowerLevel, .appearance, .advertisingInterval, .leRole] {
            if let value = b.firstData(of: type) {
                FuzzCheck.require(m.data(of: type) == b.data(of: type), "merge of \(type): scan response's \(fuzzHex(value)) not taken")
            } else {
                FuzzCheck.require(m.data(of: type) == a.data(of: type), "merge of \(type) changed the advertisement's value")
            }
        }
        let reparsed = AdvertisingData(bytes: m.encode())
        FuzzCheck.require(reparsed.structures == m.structures, "merged data does not round-trip through bytes")
    }

    /// Builder → bytes → parser: each field must read back as it was given.
    static func checkBuilder(_ source: FuzzInput) {
        var input = source
        var builder = AdvertisingData.Builder()
        var expectedServices: [BluetoothUUID] = []
        var name: String?
        var manufacturer: [AdvertisingData.ManufacturerData] = []
        var serviceData: [AdvertisingData.ServiceData] = []
        var shortInterval: UInt32?
        var longInterval: UInt32?
        var uri: String?
        var steps = 0
        while !input.isAtEnd, steps < 16 {
            steps += 1
            switch input.u8() % 7 {
            case 0:
                let text = String(decoding: input.take(Int(input.u8() % 24)), as: UTF8.self)
                if name == nil { name = text }
                builder = builder.localName(text, complete: true)
            case 1:
                var uuids: [BluetoothUUID] = []
                for _ in 0..<Int(input.u8() % 4) {
                    switch input.u8() % 3 {
                    case 0: uuids.append(BluetoothUUID(input.u16()))
                    case 1: uuids.append(BluetoothUUID(uint32: UInt32(input.u16()) << 16 | UInt32(input.u16())))
                    default: uuids.append((try? BluetoothUUID(littleEndian: input.take(16))) ?? BluetoothUUID(0x1800))
                    }
                }
                expectedServices += uuids
                builder = builder.serviceUUIDs(uuids, complete: input.bool())
            case 2:
                let entry = AdvertisingData.ManufacturerData(companyID: input.u16(), data: input.take(Int(input.u8() % 16)))
                manufacturer.append(entry)
                builder = builder.manufacturerData(companyID: entry.companyID, data: entry.data)
            case 3:
                let uuid = input.bool() ? BluetoothUUID(input.u16()) : ((try? BluetoothUUID(littleEndian: input.take(16))) ?? BluetoothUUID(0x180F))
                let entry = AdvertisingData.ServiceData(uuid: uuid, data: input.take(Int(input.u8() % 16)))
                serviceData.append(entry)
                builder = builder.serviceData(uuid, entry.data)
            case 4:
                let units = UInt32(input.u16()) << (8 * UInt32(input.u8() % 3)) | UInt32(input.u8())
                if units <= 0xFFFF {
                    if shortInterval == nil { shortInterval = units }
                } else if longInterval == nil {
                    longInterval = units
                }
                builder = builder.advertisingInterval(units)
            case 5:
                let text = String(decoding: input.take(Int(input.u8() % 24)), as: UTF8.self)
                if uri == nil { uri = text }
                builder = builder.uri(text)
            default:
                builder = builder.flags(AdvertisingData.Flags(rawValue: input.u8()))
            }
        }
        let built = builder.build()
        let parsed = AdvertisingData(bytes: built.encode())
        // Structures over 254 bytes are cut by encode(); nothing here builds one that long.
        FuzzCheck.require(parsed.structures == built.structures, "built advertising data does not parse back")
        var unique: [BluetoothUUID] = []
        for u in expectedServices where !unique.contains(u) { unique.append(u) }
        FuzzCheck.require(Set(parsed.serviceUUIDs) == Set(unique) && parsed.serviceUUIDs.count == unique.count,
                          "built service UUIDs \(unique) read back as \(parsed.serviceUUIDs)")
        if let name {
            var expected = name
            while expected.hasSuffix("\u{0}") { expected.removeLast() }
            FuzzCheck.require(parsed.localName == expected, "built name \(name.debugDescription) read back as \(parsed.localName.debugDescription)")
        }
        FuzzCheck.require(parsed.manufacturerData == manufacturer, "built manufacturer data does not read back")
        FuzzCheck.require(parsed.serviceData == serviceData, "built service data does not read back")
        let interval = shortInterval ?? longInterval
        FuzzCheck.require(parsed.advertisingInterval == interval, "built advertising interval \(String(describing: interval)) read back as \(String(describing: parsed.advertisingInterval))")
        if let uri {
            FuzzCheck.require(parsed.uri?.string == uri, "built URI \(uri.debugDescription) read back as \(String(describing: parsed.uri?.string).debugDescription)")
        }
    }

    // MARK: Scan aggregator

    /// `ScanAggregator` fed reports from four devices (advertisements, scan responses, RSSI
    /// unavailable, ageing, waits for scan responses released by time and at the end), checked
    /// against a model of what each device's merged advertisement must be and against its
    /// reporting rules.
    static func scanAggregator(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let setup = input.u8()
        let filter = ScanFilter(
            serviceUUIDs: setup & 0x01 != 0 ? [BluetoothUUID(0x180D)] : [],
            nameContains: setup & 0x02 != 0 ? "a" : nil,
            minimumRSSI: setup & 0x04 != 0 ? -60 : nil,
            allowDuplicates: setup & 0x08 != 0)
        var aggregator = ScanAggregator(active: setup & 0x10 != 0, filter: filter)
        let addresses = [
            DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .random),
            DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_01), type: .public),
            DeviceAddress(BDAddress(rawValue: 0x00_11_22_33_44_55), type: .public),
            DeviceAddress(BDAddress(rawValue: 0x00_11_22_33_44_66), type: .randomIdentity),
        ]
        let kinds: [AdvertisingEventKind] = [.connectableUndirected, .connectableDirected, .connectableNonScannable, .scannableUndirected, .nonConnectable, .scanResponse]
        var rawAdvertising: [DeviceAddress: [UInt8]] = [:]
        var rawScanResponse: [DeviceAddress: [UInt8]] = [:]
        var lastEmitted: [DeviceAddress: AdvertisingData] = [:]
        // When each address was last heard (an advertisement or a scan response): what ageing
        // goes by, for a device and for a scan response whose advertisement never came alike.
        var lastHeard: [DeviceAddress: Duration] = [:]
        var now: Duration = .zero
        var steps = 0

        while !input.isAtEnd, steps < 128 {
            steps += 1
            let op = input.u8()
            now += .milliseconds(Int(input.u8()) * 10)
            // The owner's timer: waits for a scan response that ran out of time end first.
            if let deadline = aggregator.nextHoldDeadline, deadline <= now {
                var released: [ScannedDevice] = []
                aggregator.releaseHolds(now: now, into: &released)
                for device in released {
                    FuzzCheck.require(device == aggregator.devices[device.address], "released device is not the table's")
                    FuzzCheck.require(filter.matches(device), "released a device the filter rejects")
                    if !filter.allowDuplicates {
                        FuzzCheck.require(lastEmitted[device.address] != device.advertisement, "duplicate advertisement released")
                    }
                    lastEmitted[device.address] = device.advertisement
                }
                FuzzCheck.require(aggregator.nextHoldDeadline.map { $0 > now } ?? true, "a wait past its deadline goes on")
            }
            if op % 8 == 7 {
                let maximumAge = Duration.milliseconds(Int(input.u8()) * 20)
                let stale = aggregator.removeStale(olderThan: maximumAge, now: now)
                for d in stale {
                    FuzzCheck.require(now - d.lastSeen > maximumAge, "removeStale removed a fresh device")
                }
                // Every address not heard for `maximumAge` is forgotten; only those with an
                // advertisement were devices, and are reported as removed.
                let forgotten = lastHeard.filter { now - $0.value > maximumAge }.map(\.key)
                let devicesForgotten = Set(forgotten.filter { rawAdvertising[$0] != nil })
                FuzzCheck.require(Set(stale.map(\.address)) == devicesForgotten && stale.count == devicesForgotten.count,
                                  "removeStale reported \(stale.map(\.address)), not the devices gone quiet \(devicesForgotten)")
                for address in forgotten {
                    rawAdvertising[address] = nil
                    rawScanResponse[address] = nil
                    lastEmitted[address] = nil
                    lastHeard[address] = nil
                }
                for d in aggregator.devices.values {
                    FuzzCheck.require(now - d.lastSeen <= maximumAge, "removeStale kept a stale device")
                }
                continue
            }
            let address = addresses[Int(op >> 3) % addresses.count]
            let kind = kinds[Int(input.u8()) % kinds.count]
            let rawRSSI = Int8(bitPattern: input.u8())
            let report = AdvertisingReportInput(kind: kind, address: address, data: input.chunk(), rssi: rawRSSI == 127 ? nil : rawRSSI)
            let before = aggregator.devices[address]
            let out = aggregator.receive(report, now: now)

            if kind == .scanResponse { rawScanResponse[address] = report.data } else { rawAdvertising[address] = report.data }
            lastHeard[address] = now
            FuzzCheck.require(out.count <= 2, "\(out.count) devices reported for one report")
            FuzzCheck.require(out.count < 2 || (kind != .scanResponse && before != nil), "two devices reported when nothing was held")
            for (index, device) in out.enumerated() {
                FuzzCheck.require(device.address == address, "reported \(device.address) for a report from \(address)")
                FuzzCheck.require(filter.matches(device), "reported a device the filter rejects")
                FuzzCheck.require(device.firstSeen <= device.lastSeen && device.lastSeen <= now, "device times out of order")
                // Either the held report flushed before this one (first, as it was) or this
                // report's device as the table now has it.
                let isCurrent = device == aggregator.devices[address]
                let isFlush = index == 0 && device == before && kind != .scanResponse
                FuzzCheck.require(isCurrent || isFlush, "reported device is neither the held one nor the table's")
                FuzzCheck.require(index == out.count - 1 || isFlush, "a device reported before the flush of the held one")
                if !filter.allowDuplicates {
                    FuzzCheck.require(lastEmitted[address] != device.advertisement, "duplicate advertisement reported")
                }
                lastEmitted[address] = device.advertisement
            }
            for (key, device) in aggregator.devices {
                FuzzCheck.require(rawAdvertising[key] != nil, "device \(key) in the table without an advertisement")
                var expected = AdvertisingData(bytes: rawAdvertising[key] ?? [])
                if let response = rawScanResponse[key] { expected = expected.merging(AdvertisingData(bytes: response)) }
                FuzzCheck.require(device.advertisement == expected, "device \(key) advertisement is not the merge of its latest data")
                FuzzCheck.require(device.hasScanResponse == (rawScanResponse[key] != nil), "device \(key) hasScanResponse wrong")
            }
        }
        // The scan ends: every device still held is handed over, once, as the table has it.
        var held: [ScannedDevice] = []
        aggregator.releaseAllHolds(into: &held)
        FuzzCheck.require(Set(held.map(\.address)).count == held.count, "a held device handed over twice")
        for device in held {
            FuzzCheck.require(device == aggregator.devices[device.address], "held device is not the table's")
            FuzzCheck.require(filter.matches(device), "handed over a device the filter rejects")
            if !filter.allowDuplicates {
                FuzzCheck.require(lastEmitted[device.address] != device.advertisement, "duplicate advertisement handed over")
            }
        }
        FuzzCheck.require(aggregator.nextHoldDeadline == nil, "a wait goes on after every hold was released")
    }
}

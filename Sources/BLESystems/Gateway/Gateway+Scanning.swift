import BLE
import BLEGateway
import Foundation

extension Gateway {
    /// Scans for as long as the gateway runs. A connection attempt ends every scan
    /// (`Central.connect`), so the scan starts again once no attempt is under way; a scan that
    /// fails is started again after a second.
    func scan() async {
        let filter = ScanFilter(allowDuplicates: true)
        while !Task.isCancelled {
            do {
                for try await device in central.scan(filter: filter, active: configuration.activeScan) {
                    heardDevice(device)
                }
            } catch {
                if Task.isCancelled { return }
                configuration.log("scan failed: \(error); starting it again")
                try? await central.clock.sleep(for: .seconds(1))
            }
            while !connecting.isEmpty, !Task.isCancelled {
                try? await central.clock.sleep(for: .milliseconds(50))
            }
            try? await central.clock.sleep(for: .milliseconds(20))
        }
    }

    /// One report: kept as the device's newest, and published if the rate limit allows.
    func heardDevice(_ d: ScannedDevice) {
        let key = d.address.address
        statistics.reports += 1
        heard[key] = d
        var hasher = Hasher()
        hasher.combine(d.advertisement.encode())
        hasher.combine(d.isConnectable)
        hasher.combine(d.address.type.peerType == .public)
        let (publishNow, evicted) = throttle.heard(key, signature: hasher.finalize(), rssi: d.rssi.map(Int.init), now: central.clock.now())
        for gone in evicted { forget(gone) }
        if publishNow { publishAdvertisement(d) }
    }

    func publishAdvertisement(_ d: ScannedDevice) {
        publish(topics.advertisement(d.address.address), GatewayPayloads.advertisement(d, gateway: topics.name, time: Date()),
                kind: .advertisement, retain: true)
    }

    /// A device not heard for a while: its retained advertisement is cleared (an empty retained
    /// message deletes it, MQTT 5.0 §3.3.1.3).
    func forget(_ key: BDAddress) {
        heard[key] = nil
        outbox.enqueue(.init(topic: topics.advertisement(key), payload: [], retain: true, kind: .advertisement))
        pump()
    }

    /// The device a command names, as heard: by its address (with the type heard; a command
    /// naming the other type names a device never heard), or by the identity a bonded
    /// device's resolvable private address resolved to.
    func heardDevice(named d: GatewayDevice) -> (address: DeviceAddress, connectable: Bool)? {
        if let h = heard[d.address] {
            let type = h.address.type.peerType
            guard d.type == nil || d.type == type else { return nil }
            return (DeviceAddress(d.address, type: type), h.isConnectable)
        }
        if let h = heard.values.first(where: { $0.identity?.address == d.address }), let identity = h.identity {
            let type = identity.type.peerType
            guard d.type == nil || d.type == type else { return nil }
            return (DeviceAddress(d.address, type: type), h.isConnectable)
        }
        return nil
    }
}

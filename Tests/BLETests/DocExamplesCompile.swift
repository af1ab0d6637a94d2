import BLE

/// The `import BLE` examples of README.md and docs/LIBRARY.md, kept here so they keep compiling as
/// the API changes, with `import BLE` alone (the API stands alone). `DocExamplesTests` checks that
/// each example's lines are here one after another. Never called: they need a controller at
/// tcp:127.0.0.1:6402 and peers.
enum DocExamples {
    /// README "The library" and LIBRARY.md "Central".
    static func central() async throws {
        let central = try await Central.open(spec: "tcp:127.0.0.1:6402")
        let device = try await central.find(filter: ScanFilter(serviceUUIDs: ["180D"]), timeout: .seconds(10))
        let peripheral = try await central.connect(device.address, timeout: .seconds(10))
        try await peripheral.exchangeMTU()
        for service in try await peripheral.discoverServices() {
            for characteristic in try await peripheral.discoverCharacteristics(for: service)
            where characteristic.uuid == "2A37" {
                let values = await peripheral.notifications(for: characteristic)
                try await peripheral.setNotifyValue(true, for: characteristic)
                for await value in values { print(value) }
            }
        }
    }

    /// LIBRARY.md "Central": scanning by hand.
    static func scan(central: Central) async throws {
        for try await device in central.scan(filter: ScanFilter(nameContains: "Thermo"), timeout: .seconds(5)) {
            print(device.address, device.rssi ?? 0, device.advertisement.localName ?? "unnamed")
        }
    }

    /// README "The library" and LIBRARY.md "Peripheral".
    static func peripheral() async throws {
        let manager = try await PeripheralManager.open(spec: "tcp:127.0.0.1:6402", name: "Thermo",
                                                       address: .staticRandom(BDAddress(rawValue: 0xC1_00_00_00_00_01)))
        let handles = try await manager.add(GATTServiceDefinition(uuid: "181A", characteristics: [
            GATTCharacteristicDefinition(uuid: "2A6E", properties: [.read, .notify], permissions: [.read], value: [0x00, 0x08]),
        ]))
        try await manager.startAdvertising(AdvertisingData.Builder()
            .flags([.leGeneralDiscoverable, .brEdrNotSupported]).serviceUUIDs(["181A"]).localName("Thermo").build())
        if let temperature = handles.valueHandle(for: "2A6E") {
            try await manager.updateValueWaiting([0x10, 0x08], forHandle: temperature)
        }
    }

    /// docs/LIBRARY.md, Peripheral: an advertising set with periodic advertising.
    static func advertisingSet(_ manager: PeripheralManager) async throws {
        let beacon = try await manager.startAdvertisingSet(
            AdvertisingData.Builder().localName("Long range beacon").manufacturerData(companyID: 0x0059, data: Array(repeating: 7, count: 200)).build(),
            parameters: AdvertisingSetParameters(primaryPHY: .leCoded, secondaryPHY: .leCoded, duration: .seconds(60)),
            periodic: (PeriodicAdvertisingParameters(interval: .milliseconds(100)), AdvertisingData.Builder().localName("tick").build()))
        try await manager.updatePeriodicData(AdvertisingData.Builder().localName("tock").build(), of: beacon)
    }

    /// LIBRARY.md "L2CAP channels".
    static func l2cap(peripheral: Peripheral, manager: PeripheralManager) async throws {
        let channel = try await peripheral.openL2CAPChannel(psm: 0x80)
        try await channel.send(Array("hello".utf8))
        for try await sdu in channel { print(sdu) }

        let listener = try await manager.listenL2CAP(psm: 0x81, security: L2CAPSecurityRequirement(level: .encrypted))
        for await incoming in listener {
            Task { for try await sdu in incoming { try await incoming.send(sdu) } }
        }
    }
}

import BLEHost
import BLEWire

/// A peer's whole GATT database as discovery found it: what `ble gatt` prints.
public struct GATTDatabaseSnapshot: Sendable {
    public struct Descriptor: Sendable {
        public var descriptor: GATTDescriptor
        public var value: Result<[UInt8], BLEError>?
    }

    public struct Characteristic: Sendable {
        public var characteristic: GATTCharacteristic
        public var value: Result<[UInt8], BLEError>?
        public var descriptors: [Descriptor]
    }

    public struct Service: Sendable {
        public var service: GATTService
        public var includedServices: [GATTIncludedService]
        public var characteristics: [Characteristic]
    }

    public var services: [Service]
    public var mtu: Int
}

extension Peripheral {
    /// Discovers every primary service, its included services, characteristics and descriptors,
    /// and, with `readValues`, reads each readable value and descriptor. A read the peer refuses
    /// with an ATT error is recorded, not thrown: a dump shows what it could not read. Anything
    /// else (the link dropping, a timeout) ends the dump with that error.
    public func discoverDatabase(readValues: Bool = true) async throws -> GATTDatabaseSnapshot {
        var services: [GATTDatabaseSnapshot.Service] = []
        for service in try await discoverServices() {
            let included = try await discoverIncludedServices(for: service)
            var characteristics: [GATTDatabaseSnapshot.Characteristic] = []
            for c in try await discoverCharacteristics(for: service) {
                var value: Result<[UInt8], BLEError>?
                if readValues, c.properties.contains(.read) {
                    value = try await capture { try await self.readValue(for: c) }
                }
                var descriptors: [GATTDatabaseSnapshot.Descriptor] = []
                for d in try await discoverDescriptors(for: c) {
                    let v: Result<[UInt8], BLEError>? = readValues ? try await capture { try await self.readValue(for: d) } : nil
                    descriptors.append(.init(descriptor: d, value: v))
                }
                characteristics.append(.init(characteristic: c, value: value, descriptors: descriptors))
            }
            services.append(.init(service: service, includedServices: included, characteristics: characteristics))
        }
        return GATTDatabaseSnapshot(services: services, mtu: mtu)
    }

    private func capture(_ body: () async throws -> [UInt8]) async throws -> Result<[UInt8], BLEError> {
        do {
            return .success(try await body())
        } catch let e as BLEError {
            if case .gatt(.att) = e { return .failure(e) }
            throw e
        }
    }
}

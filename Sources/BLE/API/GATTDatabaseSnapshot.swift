import BLEHost
import BLEWire

/// A peer's whole GATT database as discovery found it: what `ble gatt` prints.
public struct GATTDatabaseSnapshot: Sendable {
    /// A discovered descriptor and, when values were read, its value.
    public struct Descriptor: Sendable {
        /// The descriptor as discovery found it: handle and type UUID.
        public var descriptor: GATTDescriptor
        /// The value read, or the ATT error the peer refused with (Vol 3 Part F §3.4.1.1); nil
        /// when the dump did not read values.
        public var value: Result<[UInt8], BLEError>?

        /// A descriptor entry (discovery makes these; `init` is for showing a fixed database).
        public init(descriptor: GATTDescriptor, value: Result<[UInt8], BLEError>? = nil) {
            self.descriptor = descriptor
            self.value = value
        }
    }

    /// A discovered characteristic with its value and descriptors.
    public struct Characteristic: Sendable {
        /// The characteristic declaration: UUID, properties and value handle.
        public var characteristic: GATTCharacteristic
        /// The value read, or the ATT error the peer refused with (Vol 3 Part F §3.4.1.1); nil
        /// when the dump did not read values or the characteristic lacks the read property.
        public var value: Result<[UInt8], BLEError>?
        /// The characteristic's descriptors, in handle order.
        public var descriptors: [Descriptor]

        /// A characteristic entry (discovery makes these; `init` is for showing a fixed database).
        public init(characteristic: GATTCharacteristic, value: Result<[UInt8], BLEError>? = nil, descriptors: [Descriptor] = []) {
            self.characteristic = characteristic
            self.value = value
            self.descriptors = descriptors
        }
    }

    /// A primary service with the services it includes and its characteristics.
    public struct Service: Sendable {
        /// The primary service: UUID and handle range.
        public var service: GATTService
        /// The services this one includes (Vol 3 Part G §4.5).
        public var includedServices: [GATTIncludedService]
        /// The service's characteristics, in handle order.
        public var characteristics: [Characteristic]

        /// A service entry (discovery makes these; `init` is for showing a fixed database).
        public init(service: GATTService, includedServices: [GATTIncludedService] = [], characteristics: [Characteristic] = []) {
            self.service = service
            self.includedServices = includedServices
            self.characteristics = characteristics
        }
    }

    /// Every primary service of the peer, in handle order.
    public var services: [Service]
    /// The link's ATT_MTU when the dump was taken; it bounds what a single read returned.
    public var mtu: Int

    /// A snapshot of `services` taken at ATT_MTU `mtu` (`Peripheral.discoverDatabase` makes
    /// these; `init` is for showing a fixed database).
    public init(services: [Service], mtu: Int) {
        self.services = services
        self.mtu = mtu
    }
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
            switch e {
            case .gatt(.att), .security: return .failure(e)
            default: throw e
            }
        }
    }
}

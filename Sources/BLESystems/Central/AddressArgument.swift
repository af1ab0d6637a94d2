import BLE
import BLEWire

/// A device named by its address alone, its type (public or random) given or not: what a user
/// types (`ble accel C0:11:22:33:44:55`) and what the flows take. Without the type the device
/// cannot be connected to yet, so `resolve` learns it by scanning (Core spec Vol 6 Part B
/// §1.3: the same 48 bits may be a public and a random address of two devices).
public struct AddressArgument: Sendable {
    /// The 48-bit address.
    public var address: BDAddress
    /// Public or random, when known; nil has `resolve` learn it from an advertisement.
    public var type: AddressType?

    /// An address given in code rather than typed (the demo, tests); the `ble` tool parses the
    /// typed form.
    public init(address: BDAddress, type: AddressType?) {
        self.address = address
        self.type = type
    }

    /// The full device address; scans up to `timeout` to learn the type when it was not given.
    public func resolve(using central: Central, timeout: Duration = .seconds(10)) async throws -> DeviceAddress {
        if let type { return DeviceAddress(address, type: type) }
        for try await device in central.scan(filter: ScanFilter(allowDuplicates: true), active: false, timeout: timeout) {
            // A bonded device may be named by its identity while it advertises with an RPA
            // its IRK resolves (Core spec Vol 3 Part C §10.8.2): connecting by identity reaches it.
            if let identity = device.identity, identity.address == address {
                await central.stopScan()
                return identity
            }
            guard device.address.address == address else { continue }
            await central.stopScan()
            return DeviceAddress(address, type: device.address.type.peerType)
        }
        throw BLEError.timeout("\(address) was not heard advertising within \(timeout); give its type as \(address)/public or /random")
    }
}

import BLEHost
import BLEWire

extension HostController {
    /// The bonds this host knows, from its bond store.
    var bondList: [Bond] { security.bonds(self) }
}

extension Central {
    /// Every bonded device (Core spec Vol 3 Part C §9.4.4), from the configured bond store.
    public var bondedDevices: [Bond] {
        get async { await host.run { $0.bondList } }
    }

    /// Forgets the bond with `peer` (its identity address); true when there was one. The next
    /// connection to it pairs from scratch.
    @discardableResult
    public func removeBond(_ peer: DeviceAddress) async throws -> Bool {
        try await host.run { try $0.security.removeBond(peer, $0) }
    }
}

extension PeripheralManager {
    /// Every bonded device, from the configured bond store.
    public var bondedDevices: [Bond] {
        get async { await host.run { $0.bondList } }
    }

    /// Forgets the bond with `peer`; true when there was one.
    @discardableResult
    public func removeBond(_ peer: DeviceAddress) async throws -> Bool {
        try await host.run { try $0.security.removeBond(peer, $0) }
    }

    /// Asks `central` to secure the link (Security Request, Vol 3 Part H §3.6.7) and waits until
    /// it has, by pairing or by encrypting with a bond's key; returns the level reached. The
    /// `.paired` / `.pairingFailed` events report a pairing too.
    @discardableResult
    public func requestSecurity(from central: ConnectedCentral) async throws -> SecurityLevel {
        try await host.run { host in
            _ = try await host.security.secure(linkID: central.id, host)
            return host.security.level(linkID: central.id, host)
        }
    }
}

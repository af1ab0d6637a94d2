extension Central {
    /// Uses `address` on the air from now on, for this central and a `PeripheralManager`
    /// sharing its controller: scans, connections and advertising started after the call
    /// (Core spec Vol 6 Part B §1.3). `open(address:)` sets the first one. A static random
    /// address is written with LE Set Random Address, which the controller refuses
    /// (`BLEError.hci`, Command Disallowed) while it advertises or scans with the legacy
    /// commands; change it between those.
    public func useOwnAddress(_ address: OwnAddress) async throws {
        try await host.run { try await $0.setOwnAddress(address) }
    }
}

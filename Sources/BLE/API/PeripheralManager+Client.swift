import BLEHost

extension PeripheralManager {
    /// A GATT client on a connected central's link, to read, write and subscribe to the
    /// central's own GATT server. GATT's client and server roles do not follow the link layer's
    /// (Core spec Vol 3 Part G §2.2): a peripheral may be the client of its central (bumble-bench's
    /// `gatt-client` mode on the peripheral, a phone's Current Time Service read by a watch). The
    /// returned `Peripheral` names the central; nil once the central is no longer connected.
    public func client(for central: ConnectedCentral) async -> Peripheral? {
        await host.run { host in
            guard let handle = host.connections.links.handle(forID: central.id), let link = host.connections.links[handle] else { return nil }
            return Peripheral(host: host, link: LinkHandle(id: link.id, handle: handle, peer: link.peer, observation: link.observation))
        }
    }
}

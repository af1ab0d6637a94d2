import BLE
import Foundation

extension CBPeripheralManager {
    /// The dynamic range of LE SPSMs (Core spec Vol 3 Part A §4.22: 0x0080–0x00FF), where the
    /// PSMs this manager publishes come from.
    static let dynamicPSMs: ClosedRange<CBL2CAPPSM> = 0x0080...0x00FF

    /// Publishes an L2CAP channel: the stack assigns a free PSM from the dynamic range (the
    /// lowest one free), `peripheralManager(_:didPublishL2CAPChannel:error:)` follows with it,
    /// and every channel a central opens to it arrives through `peripheralManager(_:didOpen:error:)`.
    /// With `encryptionRequired`, a central on an unencrypted link is refused (it then pairs, or
    /// encrypts with its bond, and tries again, as iOS does). Advertise the PSM to centrals
    /// yourself (apps put it in a characteristic).
    public func publishL2CAPChannel(withEncryption encryptionRequired: Bool) {
        guard let (api, lane) = poweredOn("publishL2CAPChannel") else { return }
        let security = encryptionRequired ? L2CAPSecurityRequirement(level: .encrypted) : .none
        lane.enqueue {
            for psm in Self.dynamicPSMs where self.inner.withLock({ $0.l2cap[psm] == nil }) {
                do {
                    let listener = try await api.listenL2CAP(psm: psm, security: security)
                    self.inner.withLock { $0.l2cap[psm] = listener }
                    self.accept(listener)
                    self.queue.async { self.delegate?.peripheralManager(self, didPublishL2CAPChannel: psm, error: nil) }
                    return
                } catch BLEError.busy {
                    continue  // taken on this controller by someone else: the next one
                } catch {
                    let mapped = CBErrorMapping.map(error)
                    self.queue.async { self.delegate?.peripheralManager(self, didPublishL2CAPChannel: 0, error: mapped) }
                    return
                }
            }
            self.queue.async { self.delegate?.peripheralManager(self, didPublishL2CAPChannel: 0, error: CBError(.outOfSpace)) }
        }
    }

    /// Withdraws a published PSM: centrals can no longer open channels to it (those open stay
    /// open); `peripheralManager(_:didUnpublishL2CAPChannel:error:)` follows
    /// (`CBError.invalidParameters` for a PSM this manager did not publish).
    public func unpublishL2CAPChannel(_ PSM: CBL2CAPPSM) {
        guard let (_, lane) = poweredOn("unpublishL2CAPChannel") else { return }
        lane.enqueue {
            guard let listener = self.inner.withLock({ $0.l2cap.removeValue(forKey: PSM) }) else {
                self.queue.async { self.delegate?.peripheralManager(self, didUnpublishL2CAPChannel: PSM, error: CBError(.invalidParameters)) }
                return
            }
            await listener.stop()
            self.queue.async { self.delegate?.peripheralManager(self, didUnpublishL2CAPChannel: PSM, error: nil) }
        }
    }

    /// Hands each channel a central opens on `listener` to the delegate, until it is unpublished.
    private func accept(_ listener: L2CAPListener) {
        Task { [weak self] in
            for await channel in listener {
                guard let self else { return }
                let opened = CBL2CAPChannel(channel: channel, peer: self.centralObject(at: channel.peer))
                self.queue.async { self.delegate?.peripheralManager(self, didOpen: opened, error: nil) }
            }
        }
    }

    /// The `CBCentral` for the device at `address` (the one GATT requests name, once it made any).
    private func centralObject(at address: DeviceAddress) -> CBCentral {
        let key = ScanEngine.normalized(address)
        return inner.withLock { s in
            if let known = s.centrals[key] { return known }
            let made = CBCentral(address: key)
            s.centrals[key] = made
            return made
        }
    }
}

extension CBPeripheralManagerDelegate {
    /// `publishL2CAPChannel(withEncryption:)` finished. Does nothing unless implemented.
    public func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {}
    /// `unpublishL2CAPChannel(_:)` finished. Does nothing unless implemented.
    public func peripheralManager(_ peripheral: CBPeripheralManager, didUnpublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {}
    /// A central opened a channel to a published PSM. Does nothing unless implemented (the
    /// channel then closes, as nothing keeps it).
    public func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {}
}

import BLE
import Foundation

extension CBPeripheral {
    /// Opens an L2CAP channel to the peripheral on `PSM` (an LE Credit Based Connection
    /// Request); `peripheral(_:didOpen:error:)` follows with the channel, or with the error and
    /// a nil channel: `CBError.notConnected` when the peripheral is not connected,
    /// `.connectionFailed` when the peer refused (no listener on the PSM, or out of resources),
    /// `.connectionTimeout` without an answer in 30 s. A refusal for want of security pairs (or
    /// encrypts with the bond) and tries again, as a read of a protected characteristic does.
    /// The open does not wait behind GATT operations, nor hold them up.
    public func openL2CAPChannel(_ PSM: CBL2CAPPSM) {
        guard let link = inner.withLock({ $0.state == .connected ? $0.link : nil }) else {
            CBLog.warning("API MISUSE: \(self) is not connected: openL2CAPChannel fails with CBError.notConnected")
            deliver { p in p.delegate?.peripheral(p, didOpen: nil, error: CBError(.notConnected)) }
            return
        }
        Task {
            do {
                let channel = try await link.api.openL2CAPChannel(psm: PSM)
                let opened = CBL2CAPChannel(channel: channel, peer: self)
                self.deliver { p in p.delegate?.peripheral(p, didOpen: opened, error: nil) }
            } catch {
                let mapped = CBErrorMapping.map(error)
                self.deliver { p in p.delegate?.peripheral(p, didOpen: nil, error: mapped) }
            }
        }
    }
}

extension CBPeripheralDelegate {
    /// `openL2CAPChannel(_:)` finished. Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {}
}

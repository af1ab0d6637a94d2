import Foundation

// Apple API that iOS code names but this stack does not provide yet: declared so such code
// compiles, each answering as a controller without the feature would.

/// An L2CAP Protocol/Service Multiplexer (`openL2CAPChannel`, `publishL2CAPChannel`).
public typealias CBL2CAPPSM = UInt16

/// An L2CAP connection-oriented channel. Not provided yet on Linux: `openL2CAPChannel` and
/// `publishL2CAPChannel` report `CBError.operationNotSupported`, so no channel is ever handed out.
open class CBL2CAPChannel: NSObject, @unchecked Sendable {
    private let channelPeer: CBPeer
    private let channelPSM: CBL2CAPPSM

    init(peer: CBPeer, psm: CBL2CAPPSM) {
        self.channelPeer = peer
        self.channelPSM = psm
        super.init()
    }

    /// The remote device.
    open var peer: CBPeer! { channelPeer }
    /// Bytes from the peer.
    open var inputStream: InputStream! { nil }
    /// Bytes to the peer.
    open var outputStream: OutputStream! { nil }
    /// The channel's PSM.
    open var psm: CBL2CAPPSM { channelPSM }
}

/// What `registerForConnectionEvents(options:)` matches on (iOS only).
public struct CBConnectionEventMatchingOption: RawRepresentable, Hashable, Sendable {
    /// The key's string.
    public var rawValue: String
    /// A key from its string.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Match peripherals offering these services (`[CBUUID]`).
    public static let serviceUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionServiceUUIDs")
    /// Match these peripherals (`[UUID]`).
    public static let peripheralUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionPeripheralUUIDs")
}

extension CBCentralManager {
    /// Connection events for matching peers (iOS only): accepted, and never reported on Linux.
    public func registerForConnectionEvents(options: [CBConnectionEventMatchingOption: Any]? = nil) {}
}

extension CBPeripheral {
    /// Opens an L2CAP channel: not provided yet on Linux; `peripheral(_:didOpen:error:)` follows
    /// with `CBError.operationNotSupported`.
    public func openL2CAPChannel(_ PSM: CBL2CAPPSM) {
        CBLog.warning("openL2CAPChannel: L2CAP channels are not provided yet on Linux")
        deliver { p in p.delegate?.peripheral(p, didOpen: nil, error: CBError(.operationNotSupported)) }
    }
}

extension CBPeripheralDelegate {
    /// `openL2CAPChannel` finished. Does nothing unless implemented.
    public func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {}
}

extension CBPeripheralManager {
    /// Publishes an L2CAP channel: not provided yet on Linux; `didPublishL2CAPChannel` follows
    /// with `CBError.operationNotSupported`.
    public func publishL2CAPChannel(withEncryption encryptionRequired: Bool) {
        CBLog.warning("publishL2CAPChannel: L2CAP channels are not provided yet on Linux")
        queue.async { self.delegate?.peripheralManager(self, didPublishL2CAPChannel: 0, error: CBError(.operationNotSupported)) }
    }

    /// Withdraws a published L2CAP channel; `didUnpublishL2CAPChannel` follows with
    /// `CBError.operationNotSupported` (none can be published yet).
    public func unpublishL2CAPChannel(_ PSM: CBL2CAPPSM) {
        queue.async { self.delegate?.peripheralManager(self, didUnpublishL2CAPChannel: PSM, error: CBError(.operationNotSupported)) }
    }
}

extension CBPeripheralManagerDelegate {
    /// `publishL2CAPChannel` finished. Does nothing unless implemented.
    public func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {}
    /// `unpublishL2CAPChannel` finished. Does nothing unless implemented.
    public func peripheralManager(_ peripheral: CBPeripheralManager, didUnpublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {}
    /// A central opened a published channel: never called on Linux yet. Does nothing unless implemented.
    public func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {}
}

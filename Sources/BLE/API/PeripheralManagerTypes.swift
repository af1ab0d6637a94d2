import BLEHCI
import BLEHost
import BLEWire

/// A central connected to our peripheral (CoreBluetooth's `CBCentral`).
public struct ConnectedCentral: Sendable, Hashable, CustomStringConvertible {
    /// Identifies this connection; a central that reconnects gets a new one.
    public let id: UInt64
    /// The central's address and its type, as the controller reported them at connection.
    public let address: DeviceAddress

    /// A readable form for logs: address and connection id, e.g. `C0:11:22:33:44:55/random#3`.
    public var description: String { "\(address)#\(id)" }
}

/// A read of a dynamic value (one whose definition had `value: nil`), to be answered with
/// `PeripheralManager.respond(to:with:)` or by a read handler.
public struct GATTReadRequest: Sendable, Hashable {
    /// Identifies this request when answering with `respond(to:with:)`; unique within the host.
    public let id: UInt64
    /// The central that sent the read.
    public let central: ConnectedCentral
    /// The attribute handle read (a characteristic value or descriptor).
    public let handle: UInt16
    /// The offset asked for (Read Blob); the answer starts at it.
    public let offset: Int
}

/// A write to a dynamic value, answered with `respond(to:with:)` (ignored for commands) or by a
/// write handler.
public struct GATTWriteRequest: Sendable, Hashable {
    /// Which ATT procedure carried the write, and so whether the central expects an answer.
    public enum Kind: Sendable, Hashable {
        /// Write Request: the central waits for the answer.
        case request
        /// Write Command: no answer goes back; errors are dropped (Vol 3 Part F §3.4.5.3).
        case command
        /// The whole value of a prepared (long or reliable) write, at Execute Write.
        case prepared
    }

    /// Identifies this request when answering with `respond(to:with:)`; unique within the host.
    public let id: UInt64
    /// The central that wrote.
    public let central: ConnectedCentral
    /// The attribute handle written (a characteristic value or descriptor).
    public let handle: UInt16
    /// The bytes written, to be stored from `offset` on.
    public let value: [UInt8]
    /// Where in the attribute value `value` starts: 0 except for prepared writes, whose offset the
    /// central chose (Prepare Write Request, Vol 3 Part F §3.4.6.1).
    public let offset: Int
    /// How the value was written: a request, a command, or an executed prepared write.
    public let kind: Kind
    /// The write was a Signed Write Command whose signature and SignCounter checked out against
    /// the central's bond (Vol 3 Part G §4.9.2, Vol 3 Part C §10.4.2); `kind` is then `.command`.
    public let isSigned: Bool
}

/// What happens on our peripheral, one event at a time (the `CBPeripheralManagerDelegate`
/// callbacks as a stream).
public enum PeripheralManagerEvent: Sendable {
    /// A central connected to our advertising.
    case connected(ConnectedCentral)
    /// Any ATT request or command a central sent, before it is answered (for logging): the
    /// opcode and, for requests that name one, the first handle.
    case request(ConnectedCentral, opcode: ATTOpcode, handle: UInt16?)
    /// A central's link ended, for `reason` (the HCI Disconnection Complete Reason).
    case disconnected(ConnectedCentral, reason: HCIStatus)
    /// A central exchanged the ATT MTU (Core spec Vol 3 Part F §3.4.2); `mtu` is the link's
    /// ATT_MTU from now on.
    case mtuChanged(ConnectedCentral, mtu: Int)
    /// A central turned notifications and/or indications on or off for a value handle.
    case subscriptionChanged(ConnectedCentral, valueHandle: UInt16, notifications: Bool, indications: Bool)
    /// A dynamic read is waiting for `respond(to:with:)` (when no read handler is set).
    case read(GATTReadRequest)
    /// A dynamic write is waiting for `respond(to:with:)` (when no write handler is set).
    case write(GATTWriteRequest)
    /// A stored value was written by a central.
    case valueWritten(ConnectedCentral, handle: UInt16, value: [UInt8])
    /// Room again in a queue that was full: `peripheralManagerIsReady(toUpdateSubscribers:)`.
    case readyToUpdateSubscribers(ConnectedCentral)
    /// An indication sent with `updateValue` was confirmed by the central.
    case indicationConfirmed(ConnectedCentral, valueHandle: UInt16)
    /// A central paired with us (Core spec Vol 3 Part H §2.3): the method, level and whether
    /// the keys were stored.
    case paired(ConnectedCentral, PairingResult)
    /// A central's pairing ended without keys, with the Pairing Failed reason and its side.
    case pairingFailed(ConnectedCentral, SMPPairingError)
    /// The controller confirmed advertising is on (`startAdvertising`, or turned back on after a
    /// link ended).
    case advertisingStarted
    /// The controller confirmed advertising is off (`stopAdvertising`).
    case advertisingStopped
    /// Turning advertising back on (after a connection or disconnection) failed.
    case advertisingFailed(String)
    /// An advertising set (`startAdvertisingSet`) ended by itself: a central connected to it
    /// (that connection is the set's), or its duration or event limit ran out.
    case advertisingSetTerminated(AdvertisingSetTermination)
}

/// How `updateValue` fared.
public enum UpdateValueResult: Sendable, Hashable {
    /// Queued for every subscribed central.
    case queued(centrals: Int)
    /// At least one central's queue was full: wait for `.readyToUpdateSubscribers` (or use the
    /// async `updateValue`), then send again.
    case queueFull
}

/// Answers a dynamic read: the bytes from the request's offset, or an ATT error code.
public typealias GATTReadHandler = @Sendable (GATTReadRequest) async -> Result<[UInt8], ATTErrorCode>
/// Answers a dynamic write: success, or an ATT error code.
public typealias GATTWriteHandler = @Sendable (GATTWriteRequest) async -> Result<Void, ATTErrorCode>

extension GATTServiceHandles {
    /// The value handle of this service's first characteristic with `uuid`.
    public func valueHandle(for uuid: BluetoothUUID) -> UInt16? { self[uuid]?.valueHandle }

    /// The CCCD handle of this service's first characteristic with `uuid`, if it has one.
    public func cccdHandle(for uuid: BluetoothUUID) -> UInt16? { self[uuid]?.cccdHandle }
}

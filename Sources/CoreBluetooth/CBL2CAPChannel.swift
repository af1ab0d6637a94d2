import BLE
import Foundation

/// An L2CAP Protocol/Service Multiplexer: what `openL2CAPChannel(_:)` connects to and
/// `publishL2CAPChannel(withEncryption:)` is given (LE: an SPSM, 0x0080–0x00FF when assigned).
public typealias CBL2CAPPSM = UInt16

/// An open L2CAP connection-oriented channel (an LE credit-based channel, Core spec Vol 3
/// Part A §4.22, §10.2) with a peer, as a pair of streams: schedule both in a run loop, open
/// them, and read and write on their events. Flow control is the channel's credits: a peer that
/// stops reading makes `outputStream`'s writes return 0 until it reads again, and not reading
/// `inputStream` stops the peer, so nothing buffers without bound.
///
/// Keep a reference to the channel (or its streams) while you use it: once the channel and both
/// streams are released, the channel closes, as it does when both streams are closed: once what
/// was written has gone. When the peer closes it, `inputStream` reports `.endEncountered` after
/// the last bytes.
open class CBL2CAPChannel: NSObject, @unchecked Sendable {
    private let channelPeer: CBPeer
    private let channelPSM: CBL2CAPPSM
    private let input: L2CAPInputStream
    private let output: L2CAPOutputStream
    private let lifetime: L2CAPChannelLifetime

    /// A channel over `channel` with `peer`; its tasks start now.
    init(channel: LECreditBasedChannel, peer: CBPeer) {
        let pipe = L2CAPStreamBridge(channel: channel)
        let lifetime = L2CAPChannelLifetime(pipe: pipe)
        self.channelPeer = peer
        self.channelPSM = channel.psm
        self.lifetime = lifetime
        self.input = L2CAPInputStream(lifetime: lifetime)
        self.output = L2CAPOutputStream(lifetime: lifetime)
        super.init()
        pipe.start()
    }

    /// The remote device: a `CBPeripheral` for a channel a central opened, a `CBCentral` for
    /// one a central opened to a published PSM.
    open var peer: CBPeer! { channelPeer }
    /// The bytes from the peer.
    open var inputStream: InputStream! { input }
    /// The bytes to the peer.
    open var outputStream: OutputStream! { output }
    /// The channel's PSM.
    open var psm: CBL2CAPPSM { channelPSM }

    /// `<CBL2CAPChannel: 0x…, peer = …, psm = 128>`.
    open override var description: String {
        "<CBL2CAPChannel: \(pointerText(self)), peer = \(channelPeer.identifier.uuidString), psm = \(channelPSM)>"
    }
}

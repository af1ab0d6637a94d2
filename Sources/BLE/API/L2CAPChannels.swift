import BLEHCI
import BLEHost

extension CreditBasedChannelParameters {
    /// What a channel offers unless told otherwise: SDUs of up to 4096 bytes, K-frames of up to
    /// 247 bytes (one LE data PDU of 251 octets with the L2CAP header), 16 credits. What waits
    /// unread for the application is bounded by credits × MTU.
    public static let standard = CreditBasedChannelParameters(mtu: 4096, mps: 247, initialCredits: 16)
}

/// An open LE credit-based L2CAP channel (Core spec Vol 3 Part A §4.22, §10.2): CoreBluetooth's
/// `CBL2CAPChannel`, async. The channel is an `AsyncSequence` of the SDUs the peer sends; it ends
/// when either side closes the channel, and throws `BLEError` when the link goes down
/// (`.disconnected`) or the peer breaks the protocol (`.l2cap`, after which we have disconnected
/// the channel). Credits go back to the peer as SDUs are read, so an unread channel stops the
/// peer rather than filling memory. `send(_:)` waits for the peer's credits (backpressure).
///
/// One task reads at a time. Releasing the last reference closes the channel.
public final class LECreditBasedChannel: AsyncSequence, Sendable, CustomStringConvertible {
    /// One SDU as the peer sent it.
    public typealias Element = [UInt8]

    let host: HostController
    let id: UInt64
    /// The channel as it was opened: SPSM, both CIDs, both sides' MTU, MPS and initial credits.
    public let info: CreditBasedChannelInfo
    /// The device at the other end of the link.
    public let peer: DeviceAddress

    init(host: HostController, id: UInt64, info: CreditBasedChannelInfo, peer: DeviceAddress) {
        self.host = host
        self.id = id
        self.info = info
        self.peer = peer
    }

    deinit {
        let (host, id) = (host, id)
        Task(executorPreference: host.clock.taskExecutor) { await host.run { $0.l2cap.released(id: id, $0) } }
    }

    /// The SPSM the channel runs on.
    public var psm: UInt16 { info.spsm }
    /// The largest SDU we accept.
    public var mtu: Int { Int(info.local.mtu) }
    /// The largest SDU `send(_:)` takes: the peer's MTU.
    public var peerMTU: Int { Int(info.remote.mtu) }

    /// E.g. `L2CAP channel PSM 0x0080, CID 0x0040 → 0x0041, …`.
    public var description: String { "L2CAP channel \(info) with \(peer)" }

    /// Sends one SDU (at most `peerMTU` bytes), cut into K-frames at the peer's MPS; returns once
    /// the peer's credits have let every K-frame out. Fails with `.l2cap(.closed)` after a close.
    /// Cancelled while it waits for credits, it throws CancellationError at once; the SDU is
    /// withdrawn if none of it had gone out, otherwise its remaining K-frames still follow.
    public func send(_ sdu: [UInt8]) async throws {
        try await host.run { [id, peerMTU] in try await $0.l2cap.send(sdu, id: id, remoteMTU: peerMTU, $0) }
    }

    /// The next SDU, waiting for one; nil once the channel has closed (after every SDU that
    /// arrived before has been read).
    public func receive() async throws -> [UInt8]? {
        try await host.run { [id] in try await $0.l2cap.receive(id: id, $0) }
    }

    /// Closes the channel (Disconnection Request, Vol 3 Part A §4.6). SDUs received already can
    /// still be read.
    public func close() async {
        await host.run { [id] in $0.l2cap.close(id: id, $0) }
    }

    /// Reads SDUs until the channel ends.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let channel: LECreditBasedChannel
        /// The next SDU (`receive()`), nil at a clean close.
        public mutating func next() async throws -> [UInt8]? { try await channel.receive() }
    }

    /// An iterator over the SDUs received from now on.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(channel: self) }
}

/// The channels peers open on one SPSM we listen on, as they arrive. Ends when `stop()` is
/// called, when the iteration is abandoned, or when the host closes.
public struct L2CAPListener: AsyncSequence, Sendable {
    /// One channel a peer opened.
    public typealias Element = LECreditBasedChannel

    /// The SPSM listened on.
    public let psm: UInt16
    let host: HostController
    let token: UInt64
    let stream: AsyncStream<LECreditBasedChannel>

    /// Stops accepting channels (new requests get "SPSM not supported"); open ones stay open.
    public func stop() async {
        await host.run { [psm, token] in $0.l2cap.stopListening(psm: psm, token: token, $0) }
    }

    /// An iterator over the channels as they arrive (one iteration per listener).
    public func makeAsyncIterator() -> AsyncStream<LECreditBasedChannel>.Iterator { stream.makeAsyncIterator() }
}

extension HostController {
    func listenL2CAP(psm: UInt16, security: L2CAPSecurityRequirement, parameters: CreditBasedChannelParameters,
                     modes: Set<CreditBasedMode> = [.leCreditBased, .enhancedCreditBased]) async throws -> L2CAPListener {
        guard parameters.isValid, parameters.initialCredits > 0 else {
            throw BLEError.invalidArgument("MTU \(parameters.mtu) (≥ 23), MPS \(parameters.mps) (23...65533), credits \(parameters.initialCredits) (≥ 1)")
        }
        guard !modes.isEmpty else { throw BLEError.invalidArgument("a listener accepts at least one mode") }
        var listener = CreditBasedListener(parameters: parameters, security: security)
        listener.modes = modes
        let (token, stream) = try l2cap.listen(psm: psm, listener: listener, self)
        return L2CAPListener(psm: psm, host: self, token: token, stream: stream)
    }

    /// Opens a channel on `linkID`; a refusal for want of security raises it (encrypt with the
    /// bond's key, otherwise pair) and tries again, as a GATT request does.
    func openL2CAPChannel(linkID: UInt64, psm: UInt16, parameters: CreditBasedChannelParameters) async throws -> LECreditBasedChannel {
        try await raisingSecurityOnRefusal(linkID: linkID) {
            try await l2cap.open(linkID: linkID, psm: psm, parameters: parameters, self)
        }
    }

    /// Runs `open`; when the peer refuses for want of security (insufficient authentication,
    /// encryption or key size, Vol 3 Part A §4.23) and the settings raise security on demand,
    /// raises it a step (`SecurityCoordinator.raise`) and runs `open` again, at most
    /// `SecurityCoordinator.raiseSteps` times (encryption, then an authenticated key).
    func raisingSecurityOnRefusal<T>(linkID: UInt64, _ open: () async throws -> T) async throws -> T {
        var steps = 0
        while true {
            do {
                return try await open()
            } catch let BLEError.l2cap(.refused(result)) where configuration.security.raisesSecurityOnDemand
                && steps < SecurityCoordinator.raiseSteps {
                let code: ATTErrorCode
                switch result {
                case .insufficientAuthentication: code = .insufficientAuthentication
                case .insufficientEncryption: code = .insufficientEncryption
                case .encryptionKeySizeTooShort: code = .encryptionKeySizeTooShort
                default: throw BLEError.l2cap(.refused(result))
                }
                steps += 1
                try await security.raise(for: code, linkID: linkID, self)
            }
        }
    }
}

extension Peripheral {
    /// Opens an LE credit-based channel to the peripheral on `psm` (LE Credit Based Connection
    /// Request, Core spec Vol 3 Part A §4.22): SIG-assigned SPSMs are 0x0001–0x007F, dynamic
    /// ones 0x0080–0x00FF. Fails with `BLEError.l2cap(.refused(result))` when the peer refuses
    /// (a refusal for security raises it and tries again), `.l2cap(.timeout)` after 30 s.
    public func openL2CAPChannel(psm: UInt16, parameters: CreditBasedChannelParameters = .standard) async throws -> LECreditBasedChannel {
        try await host.openL2CAPChannel(linkID: linkID, psm: psm, parameters: parameters)
    }
}

extension Central {
    /// Accepts LE credit-based channels that connected peripherals open on `psm` (1...255),
    /// refusing links below `security` with the matching result (Vol 3 Part A §4.23). One
    /// listener per SPSM per host.
    public func listenL2CAP(psm: UInt16, security: L2CAPSecurityRequirement = .none,
                            parameters: CreditBasedChannelParameters = .standard) async throws -> L2CAPListener {
        try await host.listenL2CAP(psm: psm, security: security, parameters: parameters)
    }
}

extension PeripheralManager {
    /// Accepts LE credit-based channels that connected centrals open on `psm` (1...255),
    /// refusing links below `security` with the matching result (Vol 3 Part A §4.23). One
    /// listener per SPSM per host (a central sharing the controller shares them).
    public func listenL2CAP(psm: UInt16, security: L2CAPSecurityRequirement = .none,
                            parameters: CreditBasedChannelParameters = .standard) async throws -> L2CAPListener {
        try await host.listenL2CAP(psm: psm, security: security, parameters: parameters)
    }

    /// Opens an LE credit-based channel to a connected central on `psm` (Vol 3 Part A §4.22).
    public func openL2CAPChannel(to central: ConnectedCentral, psm: UInt16,
                                 parameters: CreditBasedChannelParameters = .standard) async throws -> LECreditBasedChannel {
        try await host.openL2CAPChannel(linkID: central.id, psm: psm, parameters: parameters)
    }
}

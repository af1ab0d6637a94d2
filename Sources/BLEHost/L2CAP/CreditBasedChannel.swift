/// Why an LE credit-based channel could not be opened, or ended other than by a clean close.
/// Every protocol violation here makes our side disconnect the channel (Core spec Vol 3 Part A
/// §3.4.3, §4.24, §10.2).
public enum L2CAPChannelError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The peer answered our LE Credit Based Connection Request with this result (§4.23).
    case refused(LESignalingCommand.CreditBasedConnectionResult)
    /// The peer rejected our request (Command Reject, §4.1): it does not do credit-based channels.
    case rejected
    /// No response within the signaling timeout (RTX, 30 s; §6.2.1).
    case timeout
    /// The peer's success response named an unusable CID, MTU or MPS (§4.23).
    case invalidResponse(String)
    /// The peer's LE Flow Control Credit took its credits past 65535 (§4.24).
    case creditOverflow
    /// The peer sent a K-frame while it held no credits (§10.2.1).
    case frameWithoutCredit
    /// A K-frame's information payload was longer than our MPS (§3.4.3).
    case frameTooLong(length: Int, mps: Int)
    /// The SDU length in a first K-frame was larger than our MTU (§3.4.3).
    case sduTooLong(length: Int, mtu: Int)
    /// The K-frames of an SDU carried more bytes than its SDU length said (§3.4.3).
    case sduOverrun(expected: Int, received: Int)
    /// A first K-frame too short to hold the 2-octet SDU length (§3.4.3).
    case malformedFrame
    /// The channel is closed (by either side): nothing more can be sent.
    case closed
    /// The peer answered our Credit Based Reconfigure Request with this failure (§4.28).
    case reconfigureRefused(LESignalingCommand.CreditBasedReconfigureResult)

    /// A readable form for logs.
    public var description: String {
        switch self {
        case let .refused(r): return "refused: \(LESignalingCommand.CreditBasedConnectionResult.name(r))"
        case .rejected: return "the peer rejected the request (no credit-based channels)"
        case .timeout: return "no answer to the signaling request within 30 s"
        case let .invalidResponse(why): return "invalid response: \(why)"
        case .creditOverflow: return "the peer's credits went past 65535"
        case .frameWithoutCredit: return "the peer sent a K-frame without credit"
        case let .frameTooLong(length, mps): return "a K-frame of \(length) bytes exceeds the MPS \(mps)"
        case let .sduTooLong(length, mtu): return "an SDU of \(length) bytes exceeds the MTU \(mtu)"
        case let .sduOverrun(expected, received): return "an SDU of \(expected) bytes got \(received)"
        case .malformedFrame: return "a first K-frame without its SDU length"
        case .closed: return "the channel is closed"
        case let .reconfigureRefused(r): return "reconfiguration refused: \(r)"
        }
    }
}

extension LESignalingCommand.CreditBasedConnectionResult {
    /// The spec's name of a result, e.g. `SPSM not supported (0x0002)`. Vol 3 Part A §4.23.
    public static func name(_ r: Self) -> String {
        let text: String
        switch r.rawValue {
        case 0x0000: text = "success"
        case 0x0002: text = "SPSM not supported"
        case 0x0004: text = "no resources available"
        case 0x0005: text = "insufficient authentication"
        case 0x0006: text = "insufficient authorization"
        case 0x0007: text = "encryption key size too short"
        case 0x0008: text = "insufficient encryption"
        case 0x0009: text = "invalid source CID"
        case 0x000A: text = "source CID already allocated"
        case 0x000B: text = "unacceptable parameters"
        case 0x000C: text = "invalid parameters"
        case 0x000D: text = "pending"
        case 0x000E: text = "authentication pending"
        case 0x000F: text = "authorization pending"
        default: text = "reserved"
        }
        let h = String(r.rawValue, radix: 16, uppercase: true)
        return text + " (0x" + String(repeating: "0", count: max(0, 4 - h.count)) + h + ")"
    }
}

/// One endpoint's limits on an LE credit-based channel (Core spec Vol 3 Part A §4.22): the
/// largest SDU it takes (MTU, at least 23) and the largest K-frame information payload (MPS,
/// 23–65533).
public struct CreditBasedChannelParameters: Sendable, Hashable {
    /// The smallest MTU and MPS the spec allows (§4.22).
    public static let minimum: UInt16 = 23
    /// The largest MPS the spec allows (§4.22).
    public static let maximumMPS: UInt16 = 65533

    /// The largest SDU the endpoint takes (≥ 23).
    public var mtu: UInt16
    /// The largest K-frame information payload the endpoint takes, SDU length included (23–65533).
    public var mps: UInt16
    /// The credits the endpoint grants its peer when the channel opens (and keeps topping up to).
    public var initialCredits: UInt16

    /// Parameters as given; `isValid` says whether the spec allows them.
    public init(mtu: UInt16, mps: UInt16, initialCredits: UInt16) {
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
    }

    /// MTU ≥ 23 and MPS in 23...65533 (§4.22, §4.23).
    public var isValid: Bool {
        mtu >= Self.minimum && (Self.minimum...Self.maximumMPS).contains(mps)
    }
}

/// One open LE credit-based channel, sans-IO (Core spec Vol 3 Part A §3.4.3 K-frames, §10.2
/// credit-based flow control): segmentation of our SDUs at the peer's MPS, reassembly of the
/// peer's at ours, and credits both ways.
///
/// Receiving: every K-frame costs the peer one credit; one without credit, one longer than our
/// MPS, an SDU longer than our MTU or K-frames carrying more than their SDU length are errors
/// (the owner disconnects). Credits go back in batches once the peer holds half its initial
/// credits or fewer: at once for K-frames that continue an SDU (reassembly is bounded by the
/// MTU anyway), and for the K-frame that completes an SDU only when the application has
/// consumed that SDU (`consumed()`). So at most `initialCredits` completed SDUs ever wait for the
/// application: the buffer is bounded.
///
/// Sending: SDUs queue as K-frames; `release()` hands out as many as the peer's credits allow.
public struct CreditBasedChannel: Sendable {
    /// The SPSM the channel was opened on.
    public let spsm: UInt16
    /// Our endpoint's CID: where the peer sends.
    public let localCID: UInt16
    /// The peer's endpoint's CID: where we send.
    public let remoteCID: UInt16
    /// Our MTU, MPS and initial credits (§4.22 or §4.23, whichever we sent; an enhanced
    /// channel's MTU and MPS change with our reconfiguration, §4.27).
    public internal(set) var local: CreditBasedChannelParameters
    /// The peer's MTU, MPS and initial credits (an enhanced channel's change with the peer's
    /// reconfiguration).
    public internal(set) var remote: CreditBasedChannelParameters
    /// The mode the channel was opened in.
    public internal(set) var mode: CreditBasedMode = .leCreditBased

    /// Credits the peer has given us: K-frames we may still send.
    public private(set) var sendCredits: Int
    /// Credits the peer holds: K-frames it may still send us.
    public private(set) var peerCredits: Int
    /// K-frames whose credit we may give back now.
    public private(set) var returnableCredits = 0
    /// Completed SDUs the application has not consumed yet (each holds back one credit).
    public private(set) var unconsumedSDUs = 0

    private var expectedLength: Int?
    private var reassembly: [UInt8] = []
    private var outbound: [(frames: [[UInt8]], token: UInt64)] = []
    private var outboundFrameIndex = 0

    /// A channel just opened: each side starts with the credits the other granted. §4.22, §4.23.
    public init(spsm: UInt16, localCID: UInt16, remoteCID: UInt16,
                local: CreditBasedChannelParameters, remote: CreditBasedChannelParameters) {
        self.spsm = spsm
        self.localCID = localCID
        self.remoteCID = remoteCID
        self.local = local
        self.remote = remote
        self.sendCredits = Int(remote.initialCredits)
        self.peerCredits = Int(local.initialCredits)
    }

    /// Whether an SDU is partly reassembled.
    public var isReassembling: Bool { expectedLength != nil }

    /// SDUs queued for sending that have K-frames left.
    public var queuedSDUs: Int { outbound.count }

    // MARK: Receiving

    /// Takes one K-frame's information payload; returns the SDU it completes, if any. §3.4.3.
    public mutating func receive(_ payload: [UInt8]) throws(L2CAPChannelError) -> [UInt8]? {
        guard peerCredits > 0 else { throw .frameWithoutCredit }
        peerCredits -= 1
        guard payload.count <= Int(local.mps) else { throw .frameTooLong(length: payload.count, mps: Int(local.mps)) }
        var body = payload[...]
        if expectedLength == nil {
            guard payload.count >= 2 else { throw .malformedFrame }
            let length = Int(payload[0]) | Int(payload[1]) << 8
            guard length <= Int(local.mtu) else { throw .sduTooLong(length: length, mtu: Int(local.mtu)) }
            expectedLength = length
            reassembly.removeAll(keepingCapacity: true)
            reassembly.reserveCapacity(length)
            body = payload.dropFirst(2)
        }
        let expected = expectedLength ?? 0
        guard reassembly.count + body.count <= expected else {
            throw .sduOverrun(expected: expected, received: reassembly.count + body.count)
        }
        reassembly.append(contentsOf: body)
        guard reassembly.count == expected else {
            returnableCredits += 1
            return nil
        }
        expectedLength = nil
        unconsumedSDUs += 1
        let sdu = reassembly
        reassembly = []
        return sdu
    }

    /// The application has taken one SDU this channel delivered: its credit may go back.
    public mutating func consumed() {
        guard unconsumedSDUs > 0 else { return }
        unconsumedSDUs -= 1
        returnableCredits += 1
    }

    /// Credits to send the peer in an LE Flow Control Credit now (§4.24), or nil: a batch goes
    /// once the peer is down to half its initial credits or fewer.
    public mutating func creditsToGrant() -> UInt16? {
        guard returnableCredits > 0, peerCredits <= Int(local.initialCredits) / 2 else { return nil }
        let n = min(returnableCredits, Int(UInt16.max) - peerCredits)
        guard n > 0 else { return nil }
        returnableCredits -= n
        peerCredits += n
        return UInt16(n)
    }

    // MARK: Sending

    /// The peer's LE Flow Control Credit (§4.24): more K-frames we may send. Past 65535 in all is
    /// an error that disconnects the channel (§10.2.1).
    public mutating func addSendCredits(_ credits: UInt16) throws(L2CAPChannelError) {
        guard sendCredits + Int(credits) <= Int(UInt16.max) else { throw .creditOverflow }
        sendCredits += Int(credits)
    }

    /// Cuts an SDU into K-frame payloads for a peer with this MPS: the first starts with the
    /// 2-octet SDU length, and every payload, that length included, is at most `mps`. §3.4.3.
    public static func segment(_ sdu: [UInt8], mps: UInt16) -> [[UInt8]] {
        let mps = max(Int(mps), 3)
        var frames: [[UInt8]] = []
        frames.reserveCapacity((sdu.count + 2) / mps + 1)
        let firstBody = min(sdu.count, mps - 2)
        frames.append([UInt8(sdu.count & 0xFF), UInt8(sdu.count >> 8)] + sdu[0..<firstBody])
        var offset = firstBody
        while offset < sdu.count {
            let end = min(sdu.count, offset + mps)
            frames.append(Array(sdu[offset..<end]))
            offset = end
        }
        return frames
    }

    /// Queues an SDU for sending; `token` comes back from `release()` once its last K-frame has
    /// been handed out. An SDU longer than the peer's MTU is refused (it must not be sent, §3.4.3).
    public mutating func enqueue(_ sdu: [UInt8], token: UInt64) -> Bool {
        guard sdu.count <= Int(remote.mtu) else { return false }
        outbound.append((Self.segment(sdu, mps: remote.mps), token))
        return true
    }

    /// The K-frame payloads the peer's credits allow now, in order, and the tokens of the SDUs
    /// whose last K-frame is among them.
    public mutating func release() -> (frames: [[UInt8]], sent: [UInt64]) {
        var frames: [[UInt8]] = []
        var sent: [UInt64] = []
        while sendCredits > 0, let first = outbound.first {
            frames.append(first.frames[outboundFrameIndex])
            sendCredits -= 1
            outboundFrameIndex += 1
            if outboundFrameIndex == first.frames.count {
                sent.append(first.token)
                outbound.removeFirst()
                outboundFrameIndex = 0
            }
        }
        return (frames, sent)
    }

    /// Takes back the queued SDU `token` if none of its K-frames has gone out yet; false when
    /// it has started (the rest must follow: the peer reassembles by the SDU length, §3.4.3) or
    /// is not queued.
    public mutating func withdraw(token: UInt64) -> Bool {
        guard let index = outbound.firstIndex(where: { $0.token == token }), index > 0 || outboundFrameIndex == 0 else {
            return false
        }
        outbound.remove(at: index)
        return true
    }

    /// The peer's MPS changed (its reconfiguration, §4.27): the K-frames still queued are cut
    /// again at the new size. An SDU already started keeps its first K-frame (gone out); its
    /// remaining bytes are continuation K-frames, which carry no header and may be cut anywhere.
    mutating func resegmentOutbound(mps: UInt16) {
        let mps = max(Int(mps), 3)
        for index in outbound.indices {
            let started = index == 0 ? outboundFrameIndex : 0
            let remaining = outbound[index].frames[started...]
            var bytes: [UInt8] = []
            for frame in remaining { bytes += frame }
            var frames = Array(outbound[index].frames[..<started])
            var offset = 0
            if started == 0 {
                // The first K-frame: SDU length and the start of the SDU.
                let end = min(bytes.count, mps)
                frames.append(Array(bytes[0..<end]))
                offset = end
            }
            while offset < bytes.count {
                let end = min(bytes.count, offset + mps)
                frames.append(Array(bytes[offset..<end]))
                offset = end
            }
            outbound[index].frames = frames
        }
    }

    /// Drops every queued SDU (the channel is closing); returns their tokens.
    public mutating func dropOutbound() -> [UInt64] {
        defer { outbound.removeAll(); outboundFrameIndex = 0 }
        return outbound.map(\.token)
    }
}

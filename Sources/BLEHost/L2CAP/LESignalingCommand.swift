import BLEWire

/// One command on the LE signaling channel (CID 0x0005): code, identifier, 2-octet data length,
/// data. Core spec Vol 3 Part A §4; unlike BR/EDR, an LE C-frame carries exactly one command
/// (§4, "LE signaling channel"), so a command is decoded from a whole C-frame payload and a length
/// field that disagrees with the payload is malformed.
///
/// Codes this stack does not know decode to `.unknown`, keeping their bytes.
public enum LESignalingCommand: Sendable, Hashable {
    /// §4.1. Sent in answer to a command that could not be handled.
    case commandReject(identifier: UInt8, reason: RejectReason)
    /// §4.6. Close a credit-based channel: the receiver's CID, then the sender's.
    case disconnectionRequest(identifier: UInt8, destinationCID: UInt16, sourceCID: UInt16)
    /// §4.7.
    case disconnectionResponse(identifier: UInt8, destinationCID: UInt16, sourceCID: UInt16)
    /// §4.20. A peripheral asking the central for new connection parameters.
    case connectionParameterUpdateRequest(identifier: UInt8, ConnectionParameters)
    /// §4.21.
    case connectionParameterUpdateResponse(identifier: UInt8, result: ParameterUpdateResult)
    /// §4.22.
    case leCreditBasedConnectionRequest(identifier: UInt8, LECreditBasedConnectionRequest)
    /// §4.23.
    case leCreditBasedConnectionResponse(identifier: UInt8, LECreditBasedConnectionResponse)
    /// §4.24. More K-frames may be sent on `channelID`.
    case flowControlCredit(identifier: UInt8, channelID: UInt16, credits: UInt16)
    /// §4.25. Enhanced credit-based mode: up to five channels at once.
    case creditBasedConnectionRequest(identifier: UInt8, CreditBasedConnectionRequest)
    /// §4.26.
    case creditBasedConnectionResponse(identifier: UInt8, CreditBasedConnectionResponse)
    /// §4.27. New MTU and MPS for up to five of the sender's enhanced credit-based channels.
    case creditBasedReconfigureRequest(identifier: UInt8, CreditBasedReconfigureRequest)
    /// §4.28.
    case creditBasedReconfigureResponse(identifier: UInt8, result: CreditBasedReconfigureResult)
    /// Any other code, kept as received.
    case unknown(code: UInt8, identifier: UInt8, data: [UInt8])

    /// Signaling command codes. Vol 3 Part A §4, Table 4.2 (LE-valid ones).
    public enum Code {
        public static let commandReject: UInt8 = 0x01
        public static let disconnectionRequest: UInt8 = 0x06
        public static let disconnectionResponse: UInt8 = 0x07
        public static let connectionParameterUpdateRequest: UInt8 = 0x12
        public static let connectionParameterUpdateResponse: UInt8 = 0x13
        public static let leCreditBasedConnectionRequest: UInt8 = 0x14
        public static let leCreditBasedConnectionResponse: UInt8 = 0x15
        public static let flowControlCredit: UInt8 = 0x16
        public static let creditBasedConnectionRequest: UInt8 = 0x17
        public static let creditBasedConnectionResponse: UInt8 = 0x18
        public static let creditBasedReconfigureRequest: UInt8 = 0x19
        public static let creditBasedReconfigureResponse: UInt8 = 0x1A
    }

    /// The code, identifier and length that start every command.
    public static let headerLength = 4

    public var code: UInt8 {
        switch self {
        case .commandReject: return Code.commandReject
        case .disconnectionRequest: return Code.disconnectionRequest
        case .disconnectionResponse: return Code.disconnectionResponse
        case .connectionParameterUpdateRequest: return Code.connectionParameterUpdateRequest
        case .connectionParameterUpdateResponse: return Code.connectionParameterUpdateResponse
        case .leCreditBasedConnectionRequest: return Code.leCreditBasedConnectionRequest
        case .leCreditBasedConnectionResponse: return Code.leCreditBasedConnectionResponse
        case .flowControlCredit: return Code.flowControlCredit
        case .creditBasedConnectionRequest: return Code.creditBasedConnectionRequest
        case .creditBasedConnectionResponse: return Code.creditBasedConnectionResponse
        case .creditBasedReconfigureRequest: return Code.creditBasedReconfigureRequest
        case .creditBasedReconfigureResponse: return Code.creditBasedReconfigureResponse
        case let .unknown(code, _, _): return code
        }
    }

    public var identifier: UInt8 {
        switch self {
        case let .commandReject(id, _), let .disconnectionRequest(id, _, _), let .disconnectionResponse(id, _, _),
             let .connectionParameterUpdateRequest(id, _), let .connectionParameterUpdateResponse(id, _),
             let .leCreditBasedConnectionRequest(id, _), let .leCreditBasedConnectionResponse(id, _),
             let .flowControlCredit(id, _, _), let .creditBasedConnectionRequest(id, _),
             let .creditBasedConnectionResponse(id, _), let .creditBasedReconfigureRequest(id, _),
             let .creditBasedReconfigureResponse(id, _), let .unknown(_, id, _):
            return id
        }
    }

    /// Decodes one command from a whole C-frame payload. Throws if the header is short, if the
    /// length field does not match the bytes after it, or if a known command's data has the
    /// wrong size for its layout.
    public init(pdu: [UInt8]) throws(WireError) {
        var r = ByteReader(pdu)
        let (code, identifier, length) = try r.reading("L2CAP signaling header") { (r: inout ByteReader) throws(WireError) in
            (try r.readU8(), try r.readU8(), try r.readU16())
        }
        guard Int(length) == r.remaining else {
            throw WireError.invalid("L2CAP signaling command 0x\(String(code, radix: 16)): length field \(length) but \(r.remaining) data bytes")
        }
        let data = r.readRemaining()
        self = try Self.decode(code: code, identifier: identifier, data: data)
    }

    private static func decode(code: UInt8, identifier id: UInt8, data: [UInt8]) throws(WireError) -> LESignalingCommand {
        var r = ByteReader(data)
        func exact(_ n: Int, _ name: String) throws(WireError) {
            guard data.count == n else { throw WireError.invalid("\(name): \(data.count) data bytes, expected \(n)") }
        }
        switch code {
        case Code.commandReject:
            guard data.count >= 2 else { throw WireError.truncated(needed: 2, remaining: data.count, "L2CAP Command Reject") }
            let reason = try r.readU16()
            return .commandReject(identifier: id, reason: try RejectReason(reason: reason, data: r.readRemaining()))
        case Code.disconnectionRequest, Code.disconnectionResponse:
            try exact(4, "L2CAP Disconnection")
            let destination = try r.readU16(), source = try r.readU16()
            return code == Code.disconnectionRequest
                ? .disconnectionRequest(identifier: id, destinationCID: destination, sourceCID: source)
                : .disconnectionResponse(identifier: id, destinationCID: destination, sourceCID: source)
        case Code.connectionParameterUpdateRequest:
            try exact(8, "L2CAP Connection Parameter Update Request")
            let p = ConnectionParameters(
                intervalMin: try r.readU16(), intervalMax: try r.readU16(), latency: try r.readU16(), timeout: try r.readU16())
            return .connectionParameterUpdateRequest(identifier: id, p)
        case Code.connectionParameterUpdateResponse:
            try exact(2, "L2CAP Connection Parameter Update Response")
            return .connectionParameterUpdateResponse(identifier: id, result: ParameterUpdateResult(rawValue: try r.readU16()))
        case Code.leCreditBasedConnectionRequest:
            try exact(10, "L2CAP LE Credit Based Connection Request")
            return .leCreditBasedConnectionRequest(identifier: id, LECreditBasedConnectionRequest(
                spsm: try r.readU16(), sourceCID: try r.readU16(), mtu: try r.readU16(), mps: try r.readU16(),
                initialCredits: try r.readU16()))
        case Code.leCreditBasedConnectionResponse:
            try exact(10, "L2CAP LE Credit Based Connection Response")
            return .leCreditBasedConnectionResponse(identifier: id, LECreditBasedConnectionResponse(
                destinationCID: try r.readU16(), mtu: try r.readU16(), mps: try r.readU16(),
                initialCredits: try r.readU16(), result: CreditBasedConnectionResult(rawValue: try r.readU16())))
        case Code.flowControlCredit:
            try exact(4, "L2CAP Flow Control Credit")
            return .flowControlCredit(identifier: id, channelID: try r.readU16(), credits: try r.readU16())
        case Code.creditBasedConnectionRequest:
            let count = try cidCount(data.count, fixed: 8, "L2CAP Credit Based Connection Request")
            let spsm = try r.readU16(), mtu = try r.readU16(), mps = try r.readU16(), credits = try r.readU16()
            return .creditBasedConnectionRequest(identifier: id, CreditBasedConnectionRequest(
                spsm: spsm, mtu: mtu, mps: mps, initialCredits: credits, sourceCIDs: try cids(count, &r)))
        case Code.creditBasedConnectionResponse:
            let count = try cidCount(data.count, fixed: 8, "L2CAP Credit Based Connection Response")
            let mtu = try r.readU16(), mps = try r.readU16(), credits = try r.readU16()
            let result = CreditBasedConnectionResult(rawValue: try r.readU16())
            return .creditBasedConnectionResponse(identifier: id, CreditBasedConnectionResponse(
                mtu: mtu, mps: mps, initialCredits: credits, result: result, destinationCIDs: try cids(count, &r)))
        case Code.creditBasedReconfigureRequest:
            let count = try cidCount(data.count, fixed: 4, "L2CAP Credit Based Reconfigure Request")
            let mtu = try r.readU16(), mps = try r.readU16()
            return .creditBasedReconfigureRequest(identifier: id, CreditBasedReconfigureRequest(
                mtu: mtu, mps: mps, destinationCIDs: try cids(count, &r)))
        case Code.creditBasedReconfigureResponse:
            try exact(2, "L2CAP Credit Based Reconfigure Response")
            return .creditBasedReconfigureResponse(identifier: id, result: CreditBasedReconfigureResult(rawValue: try r.readU16()))
        default:
            return .unknown(code: code, identifier: id, data: data)
        }
    }

    /// The enhanced credit-based commands carry `fixed` octets and then a list of CIDs (§4.25–§4.27).
    /// The list may be empty or longer than five here: how many a request may carry is the
    /// receiver's check, answered with a result (§4.26 "invalid parameters", §4.28 "other
    /// unacceptable parameters"), not a Command Reject; a response that refuses everything
    /// (Bumble sends one) may list no CID at all. An odd remainder is malformed.
    private static func cidCount(_ dataLength: Int, fixed: Int, _ name: String) throws(WireError) -> Int {
        guard dataLength >= fixed, (dataLength - fixed) % 2 == 0 else {
            throw WireError.invalid("\(name): \(dataLength) data bytes, expected \(fixed) plus 2 per CID")
        }
        return (dataLength - fixed) / 2
    }

    private static func cids(_ count: Int, _ r: inout ByteReader) throws(WireError) -> [UInt16] {
        var cids: [UInt16] = []
        cids.reserveCapacity(count)
        for _ in 0..<count { cids.append(try r.readU16()) }
        return cids
    }

    /// The command as a C-frame payload: header and data.
    public func encode() -> [UInt8] {
        var d = ByteWriter(capacity: 16)
        switch self {
        case let .commandReject(_, reason):
            d.u16(reason.code)
            d.append(reason.data)
        case let .disconnectionRequest(_, destination, source), let .disconnectionResponse(_, destination, source):
            d.u16(destination)
            d.u16(source)
        case let .connectionParameterUpdateRequest(_, p):
            d.u16(p.intervalMin)
            d.u16(p.intervalMax)
            d.u16(p.latency)
            d.u16(p.timeout)
        case let .connectionParameterUpdateResponse(_, result):
            d.u16(result.rawValue)
        case let .leCreditBasedConnectionRequest(_, q):
            for v in [q.spsm, q.sourceCID, q.mtu, q.mps, q.initialCredits] { d.u16(v) }
        case let .leCreditBasedConnectionResponse(_, q):
            for v in [q.destinationCID, q.mtu, q.mps, q.initialCredits, q.result.rawValue] { d.u16(v) }
        case let .flowControlCredit(_, cid, credits):
            d.u16(cid)
            d.u16(credits)
        case let .creditBasedConnectionRequest(_, q):
            for v in [q.spsm, q.mtu, q.mps, q.initialCredits] + q.sourceCIDs { d.u16(v) }
        case let .creditBasedConnectionResponse(_, q):
            for v in [q.mtu, q.mps, q.initialCredits, q.result.rawValue] + q.destinationCIDs { d.u16(v) }
        case let .creditBasedReconfigureRequest(_, q):
            for v in [q.mtu, q.mps] + q.destinationCIDs { d.u16(v) }
        case let .creditBasedReconfigureResponse(_, result):
            d.u16(result.rawValue)
        case let .unknown(_, _, data):
            d.append(data)
        }
        let data = d.bytes.prefix(Int(UInt16.max))
        var w = ByteWriter(capacity: Self.headerLength + data.count)
        w.u8(code)
        w.u8(identifier)
        w.u16(UInt16(data.count))
        w.append(data)
        return w.bytes
    }
}

extension LESignalingCommand {
    /// Why a command was rejected, with the reason's data. Vol 3 Part A §4.1, Table 4.3.
    public enum RejectReason: Sendable, Hashable {
        /// 0x0000: unknown or unsupported command, or one that should not be sent to us.
        case notUnderstood
        /// 0x0001: the C-frame exceeded the receiver's MTU_sig, which is given.
        case signalingMTUExceeded(actualMTU: UInt16)
        /// 0x0002: a CID in the request is not open; the local (rejecter's) and remote CIDs.
        case invalidCID(localCID: UInt16, remoteCID: UInt16)
        /// A reserved reason, kept with its data.
        case other(reason: UInt16, data: [UInt8])

        public var code: UInt16 {
            switch self {
            case .notUnderstood: return 0x0000
            case .signalingMTUExceeded: return 0x0001
            case .invalidCID: return 0x0002
            case let .other(reason, _): return reason
            }
        }

        public var data: [UInt8] {
            var w = ByteWriter(capacity: 4)
            switch self {
            case .notUnderstood: break
            case let .signalingMTUExceeded(mtu): w.u16(mtu)
            case let .invalidCID(local, remote):
                w.u16(local)
                w.u16(remote)
            case let .other(_, data): w.append(data)
            }
            return w.bytes
        }

        init(reason: UInt16, data: [UInt8]) throws(WireError) {
            var r = ByteReader(data)
            func exact(_ n: Int) throws(WireError) {
                guard data.count == n else {
                    throw WireError.invalid("L2CAP Command Reject reason \(reason): \(data.count) data bytes, expected \(n)")
                }
            }
            switch reason {
            case 0x0000:
                try exact(0)
                self = .notUnderstood
            case 0x0001:
                try exact(2)
                self = .signalingMTUExceeded(actualMTU: try r.readU16())
            case 0x0002:
                try exact(4)
                self = .invalidCID(localCID: try r.readU16(), remoteCID: try r.readU16())
            default:
                self = .other(reason: reason, data: data)
            }
        }
    }

    /// The parameters of a connection parameter update request, in the link layer's units.
    /// Vol 3 Part A §4.20.
    public struct ConnectionParameters: Sendable, Hashable, CustomStringConvertible {
        /// Connection interval bounds, units of 1.25 ms (6...3200: 7.5 ms to 4 s).
        public var intervalMin: UInt16
        public var intervalMax: UInt16
        /// Peripheral latency in connection events (0...499).
        public var latency: UInt16
        /// Supervision timeout, units of 10 ms (10...3200: 100 ms to 32 s).
        public var timeout: UInt16

        public init(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16) {
            self.intervalMin = intervalMin
            self.intervalMax = intervalMax
            self.latency = latency
            self.timeout = timeout
        }

        /// Whether the values are ones a central may accept. Vol 3 Part A §4.20 gives the ranges;
        /// the supervision timeout must exceed (1 + latency) × interval max × 2 (Vol 6 Part B
        /// §4.5.2), which in these units is `timeout × 4 > (1 + latency) × intervalMax`.
        public var isValid: Bool {
            let intervals: ClosedRange<UInt16> = 6...3200
            guard intervals.contains(intervalMin), intervals.contains(intervalMax), intervalMin <= intervalMax,
                  latency <= 499, (10...3200).contains(timeout)
            else { return false }
            return UInt32(timeout) * 4 > (1 + UInt32(latency)) * UInt32(intervalMax)
        }

        /// "interval 7.5-15ms latency 0 timeout 2000ms".
        public var description: String {
            func ms(_ units: UInt16) -> String {
                let quarter = Int(units) * 5   // 1.25 ms = 5/4 ms
                return quarter % 4 == 0 ? "\(quarter / 4)" : "\(Double(quarter) / 4)"
            }
            return "interval \(ms(intervalMin))-\(ms(intervalMax))ms latency \(latency) timeout \(Int(timeout) * 10)ms"
        }
    }

    /// Result of a connection parameter update request. Vol 3 Part A §4.21.
    public struct ParameterUpdateResult: RawRepresentable, Sendable, Hashable {
        public var rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        public static let accepted = ParameterUpdateResult(rawValue: 0x0000)
        public static let rejected = ParameterUpdateResult(rawValue: 0x0001)
    }

    /// Result codes of the credit-based connection responses. Vol 3 Part A §4.23, §4.26.
    public struct CreditBasedConnectionResult: RawRepresentable, Sendable, Hashable {
        public var rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        public static let success = CreditBasedConnectionResult(rawValue: 0x0000)
        /// "SPSM not supported" (LE_PSM not supported in §4.23).
        public static let spsmNotSupported = CreditBasedConnectionResult(rawValue: 0x0002)
        public static let noResourcesAvailable = CreditBasedConnectionResult(rawValue: 0x0004)
        public static let insufficientAuthentication = CreditBasedConnectionResult(rawValue: 0x0005)
        public static let insufficientAuthorization = CreditBasedConnectionResult(rawValue: 0x0006)
        public static let encryptionKeySizeTooShort = CreditBasedConnectionResult(rawValue: 0x0007)
        public static let insufficientEncryption = CreditBasedConnectionResult(rawValue: 0x0008)
        public static let invalidSourceCID = CreditBasedConnectionResult(rawValue: 0x0009)
        public static let sourceCIDAlreadyAllocated = CreditBasedConnectionResult(rawValue: 0x000A)
        public static let unacceptableParameters = CreditBasedConnectionResult(rawValue: 0x000B)
        /// Enhanced mode only (§4.26): "all connections refused – invalid parameters", for a
        /// request that lists no Source CID or more than five.
        public static let invalidParameters = CreditBasedConnectionResult(rawValue: 0x000C)
        /// Enhanced mode only (§4.26): "all connections pending", with no further information,
        /// authentication pending or authorization pending; the final response follows.
        public static let pending = CreditBasedConnectionResult(rawValue: 0x000D)
        public static let authenticationPending = CreditBasedConnectionResult(rawValue: 0x000E)
        public static let authorizationPending = CreditBasedConnectionResult(rawValue: 0x000F)
    }

    /// LE Credit Based Connection Request data. Vol 3 Part A §4.22.
    public struct LECreditBasedConnectionRequest: Sendable, Hashable {
        public var spsm: UInt16
        public var sourceCID: UInt16
        public var mtu: UInt16
        public var mps: UInt16
        public var initialCredits: UInt16

        public init(spsm: UInt16, sourceCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16) {
            self.spsm = spsm
            self.sourceCID = sourceCID
            self.mtu = mtu
            self.mps = mps
            self.initialCredits = initialCredits
        }
    }

    /// LE Credit Based Connection Response data. Vol 3 Part A §4.23.
    public struct LECreditBasedConnectionResponse: Sendable, Hashable {
        public var destinationCID: UInt16
        public var mtu: UInt16
        public var mps: UInt16
        public var initialCredits: UInt16
        public var result: CreditBasedConnectionResult

        public init(destinationCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: CreditBasedConnectionResult) {
            self.destinationCID = destinationCID
            self.mtu = mtu
            self.mps = mps
            self.initialCredits = initialCredits
            self.result = result
        }
    }

    /// Credit Based Connection Request data (enhanced credit-based mode). Vol 3 Part A §4.25.
    public struct CreditBasedConnectionRequest: Sendable, Hashable {
        /// At most five channels per request.
        public static let maximumChannels = 5
        public var spsm: UInt16
        public var mtu: UInt16
        public var mps: UInt16
        public var initialCredits: UInt16
        public var sourceCIDs: [UInt16]

        public init(spsm: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16, sourceCIDs: [UInt16]) {
            self.spsm = spsm
            self.mtu = mtu
            self.mps = mps
            self.initialCredits = initialCredits
            self.sourceCIDs = sourceCIDs
        }
    }

    /// Credit Based Connection Response data. Vol 3 Part A §4.26. A refused channel's
    /// destination CID is 0x0000.
    public struct CreditBasedConnectionResponse: Sendable, Hashable {
        public var mtu: UInt16
        public var mps: UInt16
        public var initialCredits: UInt16
        public var result: CreditBasedConnectionResult
        public var destinationCIDs: [UInt16]

        public init(mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: CreditBasedConnectionResult, destinationCIDs: [UInt16]) {
            self.mtu = mtu
            self.mps = mps
            self.initialCredits = initialCredits
            self.result = result
            self.destinationCIDs = destinationCIDs
        }
    }
}

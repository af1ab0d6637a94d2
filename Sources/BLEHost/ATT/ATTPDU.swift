import BLEWire

/// One Attribute Protocol PDU, either direction. Core spec Vol 3 Part F §3.4.
///
/// The wire form is `opcode || parameters` (§3.3); `decode` and `encode` live in ATTPDUCodec.swift.
/// Handles are plain `UInt16` (0x0000 is reserved, §3.2.2, but a decoder reports what the peer sent
/// and leaves judging it to the procedure or server that reads it).
public enum ATTPDU: Hashable, Sendable {
    /// §3.4.1.1: the request with opcode `request` on `handle` failed with `code`.
    case errorResponse(requestOpcode: ATTOpcode, handle: UInt16, code: ATTErrorCode)

    /// §3.4.2.1: the client's receive MTU.
    case exchangeMTURequest(clientMTU: UInt16)
    /// §3.4.2.2: the server's receive MTU.
    case exchangeMTUResponse(serverMTU: UInt16)

    /// §3.4.3.1
    case findInformationRequest(startHandle: UInt16, endHandle: UInt16)
    /// §3.4.3.2. Encoded with Format 0x01 (16-bit UUIDs) when every UUID has a 16-bit alias, else
    /// Format 0x02 (128-bit); one PDU cannot mix the two, so a mixed list encodes all as 128-bit.
    case findInformationResponse([ATTHandleUUID])

    /// §3.4.3.3: `attributeType` is always a 16-bit UUID in this PDU.
    case findByTypeValueRequest(startHandle: UInt16, endHandle: UInt16, attributeType: UInt16, value: [UInt8])
    /// §3.4.3.4: found attribute handle and group end handle pairs.
    case findByTypeValueResponse([ATTHandleRange])

    /// §3.4.4.1: `attributeType` is sent as 2 or 16 octets (ATT has no 32-bit form).
    case readByTypeRequest(startHandle: UInt16, endHandle: UInt16, attributeType: BluetoothUUID)
    /// §3.4.4.2: every pair has the same value length (the PDU's Length field); see `encode`.
    case readByTypeResponse([ATTHandleValue])

    /// §3.4.4.3 / §3.4.4.4
    case readRequest(handle: UInt16)
    case readResponse(value: [UInt8])

    /// §3.4.4.5 / §3.4.4.6
    case readBlobRequest(handle: UInt16, offset: UInt16)
    case readBlobResponse(value: [UInt8])

    /// §3.4.4.7: two or more handles. §3.4.4.8: the values concatenated, without lengths.
    case readMultipleRequest(handles: [UInt16])
    case readMultipleResponse(values: [UInt8])

    /// §3.4.4.11: two or more handles. §3.4.4.12: each value prefixed by its length.
    case readMultipleVariableRequest(handles: [UInt16])
    case readMultipleVariableResponse([ATTLengthValue])

    /// §3.4.4.9: `groupType` is sent as 2 or 16 octets.
    case readByGroupTypeRequest(startHandle: UInt16, endHandle: UInt16, groupType: BluetoothUUID)
    /// §3.4.4.10: every entry has the same value length (the PDU's Length field).
    case readByGroupTypeResponse([ATTGroupData])

    /// §3.4.5.1 / §3.4.5.2
    case writeRequest(handle: UInt16, value: [UInt8])
    case writeResponse
    /// §3.4.5.3
    case writeCommand(handle: UInt16, value: [UInt8])
    /// §3.4.5.4: the last 12 octets are the Authentication Signature (Vol 3 Part H §2.4.5).
    case signedWriteCommand(handle: UInt16, value: [UInt8], signature: [UInt8])

    /// §3.4.6.1 / §3.4.6.2: the response echoes the request's fields.
    case prepareWriteRequest(handle: UInt16, offset: UInt16, value: [UInt8])
    case prepareWriteResponse(handle: UInt16, offset: UInt16, value: [UInt8])
    /// §3.4.6.3 / §3.4.6.4
    case executeWriteRequest(flags: ATTExecuteWriteFlags)
    case executeWriteResponse

    /// §3.4.7.1 / §3.4.7.2 / §3.4.7.3
    case handleValueNotification(handle: UInt16, value: [UInt8])
    case handleValueIndication(handle: UInt16, value: [UInt8])
    case handleValueConfirmation
    /// §3.4.7.4: handle, length, value tuples.
    case multipleHandleValueNotification([ATTHandleValue])

    /// An opcode this codec does not know, kept whole (§3.4.1.1: the server answers Request Not
    /// Supported; §3.3: unknown commands are ignored).
    case unknown(opcode: ATTOpcode, parameters: [UInt8])

    /// The opcode this PDU is sent with.
    public var opcode: ATTOpcode {
        switch self {
        case .errorResponse: return .errorResponse
        case .exchangeMTURequest: return .exchangeMTURequest
        case .exchangeMTUResponse: return .exchangeMTUResponse
        case .findInformationRequest: return .findInformationRequest
        case .findInformationResponse: return .findInformationResponse
        case .findByTypeValueRequest: return .findByTypeValueRequest
        case .findByTypeValueResponse: return .findByTypeValueResponse
        case .readByTypeRequest: return .readByTypeRequest
        case .readByTypeResponse: return .readByTypeResponse
        case .readRequest: return .readRequest
        case .readResponse: return .readResponse
        case .readBlobRequest: return .readBlobRequest
        case .readBlobResponse: return .readBlobResponse
        case .readMultipleRequest: return .readMultipleRequest
        case .readMultipleResponse: return .readMultipleResponse
        case .readMultipleVariableRequest: return .readMultipleVariableRequest
        case .readMultipleVariableResponse: return .readMultipleVariableResponse
        case .readByGroupTypeRequest: return .readByGroupTypeRequest
        case .readByGroupTypeResponse: return .readByGroupTypeResponse
        case .writeRequest: return .writeRequest
        case .writeResponse: return .writeResponse
        case .writeCommand: return .writeCommand
        case .signedWriteCommand: return .signedWriteCommand
        case .prepareWriteRequest: return .prepareWriteRequest
        case .prepareWriteResponse: return .prepareWriteResponse
        case .executeWriteRequest: return .executeWriteRequest
        case .executeWriteResponse: return .executeWriteResponse
        case .handleValueNotification: return .handleValueNotification
        case .handleValueIndication: return .handleValueIndication
        case .handleValueConfirmation: return .handleValueConfirmation
        case .multipleHandleValueNotification: return .multipleHandleValueNotification
        case let .unknown(opcode, _): return opcode
        }
    }
}

/// A handle and a value: Read By Type Response pairs (§3.4.4.2) and Multiple Handle Value
/// Notification tuples (§3.4.7.4).
public struct ATTHandleValue: Hashable, Sendable, CustomStringConvertible {
    /// The attribute's handle.
    public var handle: UInt16
    /// The attribute's value (possibly cut to what fits the PDU).
    public var value: [UInt8]
    /// The pair of `handle` and `value`.
    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }
    /// "0x002A: 0102", for logs.
    public var description: String { "0x\(attHex16(handle)): \(value.hexString)" }
}

/// A handle and its attribute type: Find Information Response entries (§3.4.3.2).
public struct ATTHandleUUID: Hashable, Sendable {
    public var handle: UInt16
    public var uuid: BluetoothUUID
    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
}

/// Found Attribute Handle and Group End Handle: Find By Type Value Response entries (§3.4.3.4).
/// Stored as two numbers, not a `ClosedRange`, because a peer may send end < start and decoding
/// must not trap; procedures check the order.
public struct ATTHandleRange: Hashable, Sendable {
    public var foundHandle: UInt16
    public var groupEndHandle: UInt16
    public init(foundHandle: UInt16, groupEndHandle: UInt16) {
        self.foundHandle = foundHandle
        self.groupEndHandle = groupEndHandle
    }
}

/// Attribute Handle, End Group Handle, Attribute Value: Read By Group Type Response entries
/// (§3.4.4.10).
public struct ATTGroupData: Hashable, Sendable {
    public var handle: UInt16
    public var endGroupHandle: UInt16
    public var value: [UInt8]
    public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.endGroupHandle = endGroupHandle
        self.value = value
    }
}

/// A Read Multiple Variable Response tuple (§3.4.4.12). `length` is the attribute value's full
/// length; `value` may be shorter in the last tuple of a PDU that reached ATT_MTU, in which case
/// `isTruncated` is true.
public struct ATTLengthValue: Hashable, Sendable {
    public var length: UInt16
    public var value: [UInt8]
    /// A complete tuple: `length` is the value's size (clamped to 65535).
    public init(value: [UInt8]) {
        self.length = UInt16(clamping: value.count)
        self.value = value
    }
    public init(length: UInt16, value: [UInt8]) {
        self.length = length
        self.value = value
    }
    public var isTruncated: Bool { value.count < Int(length) }
}

/// The Flags of an Execute Write Request (§3.4.6.3). Open, since a peer may send reserved values
/// (which a server answers with Invalid PDU).
public struct ATTExecuteWriteFlags: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// 0x00: cancel all prepared writes.
    public static let cancel = ATTExecuteWriteFlags(rawValue: 0x00)
    /// 0x01: immediately write all pending prepared values.
    public static let write = ATTExecuteWriteFlags(rawValue: 0x01)
}

func attHex16(_ v: UInt16) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return String(repeating: "0", count: 4 - s.count) + s
}

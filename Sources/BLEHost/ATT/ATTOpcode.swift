/// An Attribute Protocol opcode. Core spec Vol 3 Part F §3.3.1 and §3.4.8 (Table 3.37).
///
/// An open struct rather than an enum: a peer may send opcodes this stack does not know, and the
/// codec preserves them (`ATTPDU.unknown`) so the server side can answer Request Not Supported
/// (§3.4.1.1) and a command with an unknown opcode can be ignored (§3.3).
///
/// Bit layout (§3.3.1): bits 0–5 are the method, bit 6 the Command Flag, bit 7 the
/// Authentication Signature Flag.
public struct ATTOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The opcode octet, the PDU's first.
    public var rawValue: UInt8

    /// The opcode `rawValue`, known here or not.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The opcode `rawValue` (unlabelled, for tables of codes).
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    // MARK: Named opcodes (§3.4.8)

    /// §3.4.1.1
    public static let errorResponse = ATTOpcode(0x01)
    /// §3.4.2.1 / §3.4.2.2
    public static let exchangeMTURequest = ATTOpcode(0x02)
    /// The server's answer to Exchange MTU, with its Server Rx MTU (§3.4.2.2).
    public static let exchangeMTUResponse = ATTOpcode(0x03)
    /// §3.4.3.1 / §3.4.3.2
    public static let findInformationRequest = ATTOpcode(0x04)
    /// Handle–UUID pairs, all 16-bit or all 128-bit (§3.4.3.2).
    public static let findInformationResponse = ATTOpcode(0x05)
    /// §3.4.3.3 / §3.4.3.4
    public static let findByTypeValueRequest = ATTOpcode(0x06)
    /// The handle ranges of the attributes whose type and value matched (§3.4.3.4).
    public static let findByTypeValueResponse = ATTOpcode(0x07)
    /// §3.4.4.1 / §3.4.4.2
    public static let readByTypeRequest = ATTOpcode(0x08)
    /// Handle–value pairs of one length for the attributes of the type asked for (§3.4.4.2).
    public static let readByTypeResponse = ATTOpcode(0x09)
    /// §3.4.4.3 / §3.4.4.4
    public static let readRequest = ATTOpcode(0x0A)
    /// The value read, up to ATT_MTU − 1 octets (§3.4.4.4).
    public static let readResponse = ATTOpcode(0x0B)
    /// §3.4.4.5 / §3.4.4.6
    public static let readBlobRequest = ATTOpcode(0x0C)
    /// The part of a long value from the offset asked for (§3.4.4.6).
    public static let readBlobResponse = ATTOpcode(0x0D)
    /// §3.4.4.7 / §3.4.4.8
    public static let readMultipleRequest = ATTOpcode(0x0E)
    /// The values of the handles asked for, concatenated (§3.4.4.8).
    public static let readMultipleResponse = ATTOpcode(0x0F)
    /// §3.4.4.9 / §3.4.4.10
    public static let readByGroupTypeRequest = ATTOpcode(0x10)
    /// Handle range–value triples, e.g. each primary service's range and UUID (§3.4.4.10).
    public static let readByGroupTypeResponse = ATTOpcode(0x11)
    /// §3.4.5.1 / §3.4.5.2
    public static let writeRequest = ATTOpcode(0x12)
    /// The server wrote the value (§3.4.5.2); it has no parameters.
    public static let writeResponse = ATTOpcode(0x13)
    /// §3.4.6.1 / §3.4.6.2
    public static let prepareWriteRequest = ATTOpcode(0x16)
    /// The queued part echoed back: handle, offset and value (§3.4.6.2).
    public static let prepareWriteResponse = ATTOpcode(0x17)
    /// §3.4.6.3 / §3.4.6.4
    public static let executeWriteRequest = ATTOpcode(0x18)
    /// The queued writes were written or cancelled (§3.4.6.4).
    public static let executeWriteResponse = ATTOpcode(0x19)
    /// §3.4.7.1
    public static let handleValueNotification = ATTOpcode(0x1B)
    /// §3.4.7.2 / §3.4.7.3
    public static let handleValueIndication = ATTOpcode(0x1D)
    /// The client's acknowledgement of an indication (§3.4.7.3).
    public static let handleValueConfirmation = ATTOpcode(0x1E)
    /// §3.4.4.11 / §3.4.4.12 (Core 5.2+)
    public static let readMultipleVariableRequest = ATTOpcode(0x20)
    /// Length–value pairs for the handles asked for (§3.4.4.12).
    public static let readMultipleVariableResponse = ATTOpcode(0x21)
    /// §3.4.7.4 (Core 5.2+)
    public static let multipleHandleValueNotification = ATTOpcode(0x23)
    /// §3.4.5.3: Write Request's method with the Command Flag set.
    public static let writeCommand = ATTOpcode(0x52)
    /// §3.4.5.4: Write Command with the Authentication Signature Flag also set.
    public static let signedWriteCommand = ATTOpcode(0xD2)

    // MARK: Bit fields (§3.3.1)

    /// Bits 0–5.
    public var method: UInt8 { rawValue & 0x3F }
    /// Bit 6: the PDU is a command, which has no response and which a server ignores if it does
    /// not understand it.
    public var isCommand: Bool { rawValue & 0x40 != 0 }
    /// Bit 7: a 12-octet Authentication Signature follows the parameters (§3.3.1, §3.4.5.4).
    public var isSigned: Bool { rawValue & 0x80 != 0 }

    /// What role the PDU plays in the protocol's transaction model (§3.3.2, §3.4.8).
    public enum Kind: Hashable, Sendable {
        /// Client → server, expects exactly one response (or an Error Response).
        case request
        /// Server → client answer to a request.
        case response
        /// Client → server, no response.
        case command
        /// Server → client, no confirmation.
        case notification
        /// Server → client, expects a Handle Value Confirmation.
        case indication
        /// Client → server answer to an indication.
        case confirmation
        /// Not an opcode this stack knows.
        case unknown
    }

    /// Whether this opcode is a request, response, command, notification, indication or
    /// confirmation; `.unknown` when this stack does not know it.
    public var kind: Kind {
        switch self {
        case .exchangeMTURequest, .findInformationRequest, .findByTypeValueRequest, .readByTypeRequest,
             .readRequest, .readBlobRequest, .readMultipleRequest, .readByGroupTypeRequest, .writeRequest,
             .prepareWriteRequest, .executeWriteRequest, .readMultipleVariableRequest:
            return .request
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
             .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleResponse,
             .readByGroupTypeResponse, .writeResponse, .prepareWriteResponse, .executeWriteResponse,
             .readMultipleVariableResponse:
            return .response
        case .writeCommand, .signedWriteCommand:
            return .command
        case .handleValueNotification, .multipleHandleValueNotification:
            return .notification
        case .handleValueIndication:
            return .indication
        case .handleValueConfirmation:
            return .confirmation
        default:
            return .unknown
        }
    }

    /// The opcode of the PDU that successfully answers this one: the response for a request, the
    /// confirmation for an indication, nil for everything else. An Error Response (§3.4.1.1) may
    /// answer any request instead.
    public var responseOpcode: ATTOpcode? {
        switch self {
        case .exchangeMTURequest: return .exchangeMTUResponse
        case .findInformationRequest: return .findInformationResponse
        case .findByTypeValueRequest: return .findByTypeValueResponse
        case .readByTypeRequest: return .readByTypeResponse
        case .readRequest: return .readResponse
        case .readBlobRequest: return .readBlobResponse
        case .readMultipleRequest: return .readMultipleResponse
        case .readByGroupTypeRequest: return .readByGroupTypeResponse
        case .writeRequest: return .writeResponse
        case .prepareWriteRequest: return .prepareWriteResponse
        case .executeWriteRequest: return .executeWriteResponse
        case .readMultipleVariableRequest: return .readMultipleVariableResponse
        case .handleValueIndication: return .handleValueConfirmation
        default: return nil
        }
    }

    /// The PDU's name as §3.4 titles it ("Read Blob Request"); nil for opcodes not known here.
    public var name: String? {
        switch self {
        case .errorResponse: return "Error Response"
        case .exchangeMTURequest: return "Exchange MTU Request"
        case .exchangeMTUResponse: return "Exchange MTU Response"
        case .findInformationRequest: return "Find Information Request"
        case .findInformationResponse: return "Find Information Response"
        case .findByTypeValueRequest: return "Find By Type Value Request"
        case .findByTypeValueResponse: return "Find By Type Value Response"
        case .readByTypeRequest: return "Read By Type Request"
        case .readByTypeResponse: return "Read By Type Response"
        case .readRequest: return "Read Request"
        case .readResponse: return "Read Response"
        case .readBlobRequest: return "Read Blob Request"
        case .readBlobResponse: return "Read Blob Response"
        case .readMultipleRequest: return "Read Multiple Request"
        case .readMultipleResponse: return "Read Multiple Response"
        case .readByGroupTypeRequest: return "Read By Group Type Request"
        case .readByGroupTypeResponse: return "Read By Group Type Response"
        case .writeRequest: return "Write Request"
        case .writeResponse: return "Write Response"
        case .prepareWriteRequest: return "Prepare Write Request"
        case .prepareWriteResponse: return "Prepare Write Response"
        case .executeWriteRequest: return "Execute Write Request"
        case .executeWriteResponse: return "Execute Write Response"
        case .handleValueNotification: return "Handle Value Notification"
        case .handleValueIndication: return "Handle Value Indication"
        case .handleValueConfirmation: return "Handle Value Confirmation"
        case .readMultipleVariableRequest: return "Read Multiple Variable Request"
        case .readMultipleVariableResponse: return "Read Multiple Variable Response"
        case .multipleHandleValueNotification: return "Multiple Handle Value Notification"
        case .writeCommand: return "Write Command"
        case .signedWriteCommand: return "Signed Write Command"
        default: return nil
        }
    }

    /// "Read Request (0x0A)", or "Opcode 0x4C" for unknown ones.
    public var description: String {
        let hex = String(rawValue, radix: 16, uppercase: true)
        let code = "0x" + (hex.count < 2 ? "0" + hex : hex)
        if let name { return "\(name) (\(code))" }
        return "Opcode \(code)"
    }
}

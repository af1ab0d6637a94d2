/// The Error Code of an ATT Error Response. Core spec Vol 3 Part F §3.4.1.1 (Table 3.4), plus the
/// Common Profile and Service Error Codes of the Core Specification Supplement (CSS Part B §1.2).
///
/// Open struct: servers send application codes (0x80–0x9F) and codes from later spec versions,
/// and a client must pass them through rather than reject the response.
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The Error Code octet of the Error Response.
    public var rawValue: UInt8

    /// The code `rawValue`, named here or not (application codes 0x80–0x9F included).
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The code `rawValue` (unlabelled, for tables of codes).
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    /// The attribute handle given was not valid on this server.
    public static let invalidHandle = ATTErrorCode(0x01)
    /// The attribute cannot be read.
    public static let readNotPermitted = ATTErrorCode(0x02)
    /// The attribute cannot be written.
    public static let writeNotPermitted = ATTErrorCode(0x03)
    /// The attribute PDU was invalid.
    public static let invalidPDU = ATTErrorCode(0x04)
    /// The attribute requires authentication before it can be read or written.
    public static let insufficientAuthentication = ATTErrorCode(0x05)
    /// The server does not support the request received from the client.
    public static let requestNotSupported = ATTErrorCode(0x06)
    /// The offset specified was past the end of the attribute.
    public static let invalidOffset = ATTErrorCode(0x07)
    /// The attribute requires authorization before it can be read or written.
    public static let insufficientAuthorization = ATTErrorCode(0x08)
    /// Too many prepare writes have been queued.
    public static let prepareQueueFull = ATTErrorCode(0x09)
    /// No attribute found within the given attribute handle range.
    public static let attributeNotFound = ATTErrorCode(0x0A)
    /// The attribute cannot be read using the Read Blob Request.
    public static let attributeNotLong = ATTErrorCode(0x0B)
    /// The Encryption Key Size used for encrypting this link is too short.
    public static let encryptionKeySizeTooShort = ATTErrorCode(0x0C)
    /// The attribute value length is invalid for the operation.
    public static let invalidAttributeValueLength = ATTErrorCode(0x0D)
    /// The request encountered an error that was unlikely and could not be completed.
    public static let unlikelyError = ATTErrorCode(0x0E)
    /// The attribute requires encryption before it can be read or written.
    public static let insufficientEncryption = ATTErrorCode(0x0F)
    /// The attribute type is not a supported grouping attribute as defined by a higher layer.
    public static let unsupportedGroupType = ATTErrorCode(0x10)
    /// Insufficient resources to complete the request.
    public static let insufficientResources = ATTErrorCode(0x11)
    /// The server requests the client to rediscover the database (Core 5.1+, robust caching).
    public static let databaseOutOfSync = ATTErrorCode(0x12)
    /// The attribute parameter value was not allowed.
    public static let valueNotAllowed = ATTErrorCode(0x13)

    // Common Profile and Service Error Codes, CSS Part B §1.2.

    /// CSS: the Write Request was rejected (0xFC).
    public static let writeRequestRejected = ATTErrorCode(0xFC)
    /// CSS: the Client Characteristic Configuration Descriptor is not configured as the
    /// operation needs (0xFD).
    public static let cccdImproperlyConfigured = ATTErrorCode(0xFD)
    /// CSS: a request cannot be serviced because a procedure is already in progress (0xFE).
    public static let procedureAlreadyInProgress = ATTErrorCode(0xFE)
    /// CSS: an attribute value is out of range (0xFF).
    public static let outOfRange = ATTErrorCode(0xFF)

    /// 0x80–0x9F: defined by a higher layer specification (the application's own codes).
    public var isApplicationError: Bool { (0x80...0x9F).contains(rawValue) }
    /// 0xE0–0xFF: Common Profile and Service Error Codes (CSS Part B §1.2).
    public var isCommonProfileError: Bool { rawValue >= 0xE0 }

    /// The short name, nil for reserved or application codes.
    public var name: String? {
        switch rawValue {
        case 0x01: return "Invalid Handle"
        case 0x02: return "Read Not Permitted"
        case 0x03: return "Write Not Permitted"
        case 0x04: return "Invalid PDU"
        case 0x05: return "Insufficient Authentication"
        case 0x06: return "Request Not Supported"
        case 0x07: return "Invalid Offset"
        case 0x08: return "Insufficient Authorization"
        case 0x09: return "Prepare Queue Full"
        case 0x0A: return "Attribute Not Found"
        case 0x0B: return "Attribute Not Long"
        case 0x0C: return "Encryption Key Size Too Short"
        case 0x0D: return "Invalid Attribute Value Length"
        case 0x0E: return "Unlikely Error"
        case 0x0F: return "Insufficient Encryption"
        case 0x10: return "Unsupported Group Type"
        case 0x11: return "Insufficient Resources"
        case 0x12: return "Database Out Of Sync"
        case 0x13: return "Value Not Allowed"
        case 0xFC: return "Write Request Rejected"
        case 0xFD: return "Client Characteristic Configuration Descriptor Improperly Configured"
        case 0xFE: return "Procedure Already in Progress"
        case 0xFF: return "Out of Range"
        default: return nil
        }
    }

    /// "Attribute Not Found (0x0A)", "Application Error (0x80)", "Reserved (0x14)".
    public var description: String {
        let hex = String(rawValue, radix: 16, uppercase: true)
        let code = "0x" + (hex.count < 2 ? "0" + hex : hex)
        if let name { return "\(name) (\(code))" }
        if isApplicationError { return "Application Error (\(code))" }
        return "Reserved (\(code))"
    }
}

import BLE
import Foundation

/// The domain of `CBError`s, as Apple's constant names it.
public let CBErrorDomain = "CBErrorDomain"
/// The domain of `CBATTError`s, as Apple's constant names it.
public let CBATTErrorDomain = "CBATTErrorDomain"

/// CoreBluetooth's errors (domain `CBErrorDomain`), with Apple's codes and messages. Match them as
/// on Apple platforms: `(error as? CBError)?.code == .connectionTimeout`, or `catch CBError.connectionTimeout`.
public struct CBError: CustomNSError, Hashable, Sendable {
    /// The error codes, Apple's raw values.
    public enum Code: Int, Sendable {
        /// An unknown error.
        case unknown = 0
        /// One or more parameters were invalid.
        case invalidParameters = 1
        /// The attribute handle is invalid.
        case invalidHandle = 2
        /// The device is not connected.
        case notConnected = 3
        /// The device has run out of space.
        case outOfSpace = 4
        /// The operation was cancelled.
        case operationCancelled = 5
        /// The connection timed out (a link lost: supervision timeout).
        case connectionTimeout = 6
        /// The peripheral disconnected.
        case peripheralDisconnected = 7
        /// The UUID is not allowed for this operation.
        case uuidNotAllowed = 8
        /// The peripheral is already advertising.
        case alreadyAdvertising = 9
        /// The connection failed.
        case connectionFailed = 10
        /// The device already has the maximum number of connections.
        case connectionLimitReached = 11
        /// The device is unknown.
        case unknownDevice = 12
        /// The operation is not supported.
        case operationNotSupported = 13
        /// The peer removed its pairing information.
        case peerRemovedPairingInformation = 14
        /// Encryption timed out.
        case encryptionTimedOut = 15
        /// Too many LE devices are paired.
        case tooManyLEPairedDevices = 16
    }

    /// Which error this is.
    public let code: Code

    /// An error with `code`; `userInfo` is accepted for Apple's signature, the message is Apple's.
    public init(_ code: Code, userInfo: [String: Any] = [:]) { self.code = code }

    /// `CBErrorDomain`.
    public static var errorDomain: String { CBErrorDomain }
    /// The code's raw value.
    public var errorCode: Int { code.rawValue }
    /// Apple's message under `NSLocalizedDescriptionKey` (what `localizedDescription` shows).
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: Self.message(code)] }
    /// Apple's message for the code.
    public var localizedDescription: String { Self.message(code) }


    /// Apple's code names at the type, as imported error enums have them (`CBError.connectionTimeout`).
    public static var unknown: Code { .unknown }
    /// See `Code.invalidParameters`.
    public static var invalidParameters: Code { .invalidParameters }
    /// See `Code.invalidHandle`.
    public static var invalidHandle: Code { .invalidHandle }
    /// See `Code.notConnected`.
    public static var notConnected: Code { .notConnected }
    /// See `Code.outOfSpace`.
    public static var outOfSpace: Code { .outOfSpace }
    /// See `Code.operationCancelled`.
    public static var operationCancelled: Code { .operationCancelled }
    /// See `Code.connectionTimeout`.
    public static var connectionTimeout: Code { .connectionTimeout }
    /// See `Code.peripheralDisconnected`.
    public static var peripheralDisconnected: Code { .peripheralDisconnected }
    /// See `Code.uuidNotAllowed`.
    public static var uuidNotAllowed: Code { .uuidNotAllowed }
    /// See `Code.alreadyAdvertising`.
    public static var alreadyAdvertising: Code { .alreadyAdvertising }
    /// See `Code.connectionFailed`.
    public static var connectionFailed: Code { .connectionFailed }
    /// See `Code.connectionLimitReached`.
    public static var connectionLimitReached: Code { .connectionLimitReached }
    /// See `Code.unknownDevice`.
    public static var unknownDevice: Code { .unknownDevice }
    /// See `Code.operationNotSupported`.
    public static var operationNotSupported: Code { .operationNotSupported }
    /// See `Code.peerRemovedPairingInformation`.
    public static var peerRemovedPairingInformation: Code { .peerRemovedPairingInformation }
    /// See `Code.encryptionTimedOut`.
    public static var encryptionTimedOut: Code { .encryptionTimedOut }
    /// See `Code.tooManyLEPairedDevices`.
    public static var tooManyLEPairedDevices: Code { .tooManyLEPairedDevices }

    static func message(_ code: Code) -> String {
        switch code {
        case .unknown: return "Unknown error."
        case .invalidParameters: return "One or more parameters were invalid."
        case .invalidHandle: return "The specified attribute handle is invalid."
        case .notConnected: return "The device is not connected."
        case .outOfSpace: return "The device has run out of space to complete the intended operation."
        case .operationCancelled: return "The operation was cancelled."
        case .connectionTimeout: return "The connection has timed out unexpectedly."
        case .peripheralDisconnected: return "The specified device has disconnected from us."
        case .uuidNotAllowed: return "The specified UUID is not allowed for this operation."
        case .alreadyAdvertising: return "The peripheral is already advertising."
        case .connectionFailed: return "The connection has failed unexpectedly."
        case .connectionLimitReached: return "The device already has the maximum number of connections."
        case .unknownDevice: return "The device is unknown."
        case .operationNotSupported: return "The operation is not supported."
        case .peerRemovedPairingInformation: return "Peer removed pairing information."
        case .encryptionTimedOut: return "Encryption timed out."
        case .tooManyLEPairedDevices: return "Too many LE paired devices."
        }
    }
}

/// ATT errors (domain `CBATTErrorDomain`): the peer's ATT Error Response codes, Apple's shape.
public struct CBATTError: CustomNSError, Hashable, Sendable {
    /// The ATT error codes (Core spec Vol 3 Part F §3.4.1.1), Apple's names.
    public enum Code: Int, Sendable {
        /// Success (used with `respond(to:withResult:)`).
        case success = 0
        /// The handle is invalid.
        case invalidHandle = 1
        /// Reading is not permitted.
        case readNotPermitted = 2
        /// Writing is not permitted.
        case writeNotPermitted = 3
        /// The PDU is invalid.
        case invalidPdu = 4
        /// Authentication is insufficient.
        case insufficientAuthentication = 5
        /// The request is not supported.
        case requestNotSupported = 6
        /// The offset is invalid.
        case invalidOffset = 7
        /// Authorization is insufficient.
        case insufficientAuthorization = 8
        /// The prepare queue is full.
        case prepareQueueFull = 9
        /// The attribute was not found.
        case attributeNotFound = 10
        /// The attribute is not long.
        case attributeNotLong = 11
        /// The encryption key size is insufficient.
        case insufficientEncryptionKeySize = 12
        /// The value's length is invalid.
        case invalidAttributeValueLength = 13
        /// The request failed unexpectedly (and codes the stack has no name for).
        case unlikelyError = 14
        /// Encryption is insufficient.
        case insufficientEncryption = 15
        /// The group type is unsupported.
        case unsupportedGroupType = 16
        /// Resources are insufficient.
        case insufficientResources = 17
    }

    /// Which error this is: `.unlikelyError` for a code Apple has no name for (an application
    /// or profile error, 0x80–0xFF), whose value is in `errorCode`.
    public let code: Code
    /// The ATT error code as the peer sent it (the `NSError` code, as on Apple platforms, where an
    /// application error such as 0x80 arrives with that code).
    public let errorCode: Int

    /// An error with `code`; `userInfo` is accepted for Apple's signature, the message is Apple's.
    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        self.code = code
        self.errorCode = code.rawValue
    }

    /// The error an ATT Error Response with `attErrorCode` stands for (Core spec Vol 3 Part F
    /// §3.4.1.1: 0x80–0x9F application errors, 0xE0–0xFF common profile and service errors).
    init(attErrorCode: UInt8) {
        self.code = Code(rawValue: Int(attErrorCode)) ?? .unlikelyError
        self.errorCode = Int(attErrorCode)
    }

    /// `CBATTErrorDomain`.
    public static var errorDomain: String { CBATTErrorDomain }
    /// Apple's message under `NSLocalizedDescriptionKey`.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: localizedDescription] }
    /// Apple's message for the code ("Unknown ATT error." for one it has no name for).
    public var localizedDescription: String { Code(rawValue: errorCode).map(Self.message) ?? "Unknown ATT error." }


    /// See `Code.success`.
    public static var success: Code { .success }
    /// See `Code.invalidHandle`.
    public static var invalidHandle: Code { .invalidHandle }
    /// See `Code.readNotPermitted`.
    public static var readNotPermitted: Code { .readNotPermitted }
    /// See `Code.writeNotPermitted`.
    public static var writeNotPermitted: Code { .writeNotPermitted }
    /// See `Code.invalidPdu`.
    public static var invalidPdu: Code { .invalidPdu }
    /// See `Code.insufficientAuthentication`.
    public static var insufficientAuthentication: Code { .insufficientAuthentication }
    /// See `Code.requestNotSupported`.
    public static var requestNotSupported: Code { .requestNotSupported }
    /// See `Code.invalidOffset`.
    public static var invalidOffset: Code { .invalidOffset }
    /// See `Code.insufficientAuthorization`.
    public static var insufficientAuthorization: Code { .insufficientAuthorization }
    /// See `Code.prepareQueueFull`.
    public static var prepareQueueFull: Code { .prepareQueueFull }
    /// See `Code.attributeNotFound`.
    public static var attributeNotFound: Code { .attributeNotFound }
    /// See `Code.attributeNotLong`.
    public static var attributeNotLong: Code { .attributeNotLong }
    /// See `Code.insufficientEncryptionKeySize`.
    public static var insufficientEncryptionKeySize: Code { .insufficientEncryptionKeySize }
    /// See `Code.invalidAttributeValueLength`.
    public static var invalidAttributeValueLength: Code { .invalidAttributeValueLength }
    /// See `Code.unlikelyError`.
    public static var unlikelyError: Code { .unlikelyError }
    /// See `Code.insufficientEncryption`.
    public static var insufficientEncryption: Code { .insufficientEncryption }
    /// See `Code.unsupportedGroupType`.
    public static var unsupportedGroupType: Code { .unsupportedGroupType }
    /// See `Code.insufficientResources`.
    public static var insufficientResources: Code { .insufficientResources }

    static func message(_ code: Code) -> String {
        switch code {
        case .success: return "The request succeeded."
        case .invalidHandle: return "The handle is invalid."
        case .readNotPermitted: return "Reading is not permitted."
        case .writeNotPermitted: return "Writing is not permitted."
        case .invalidPdu: return "The PDU is invalid."
        case .insufficientAuthentication: return "Authentication is insufficient."
        case .requestNotSupported: return "The request is not supported."
        case .invalidOffset: return "The offset is invalid."
        case .insufficientAuthorization: return "Authorization is insufficient."
        case .prepareQueueFull: return "The prepare queue is full."
        case .attributeNotFound: return "The attribute could not be found."
        case .attributeNotLong: return "The attribute is not long."
        case .insufficientEncryptionKeySize: return "The encryption key size is insufficient."
        case .invalidAttributeValueLength: return "The value's length is invalid."
        case .unlikelyError: return "The request has failed unexpectedly."
        case .insufficientEncryption: return "Encryption is insufficient."
        case .unsupportedGroupType: return "The group type is not supported."
        case .insufficientResources: return "Resources are insufficient."
        }
    }
}

extension CBError.Code {
    /// Matches an error against a code: `catch CBError.connectionTimeout`, `case CBError.notConnected`.
    public static func ~= (match: CBError.Code, error: any Error) -> Bool { (error as? CBError)?.code == match }
}

extension CBATTError.Code {
    /// Matches an error against a code: `catch CBATTError.readNotPermitted`.
    /// An application error (no name of Apple's) matches none of the codes.
    public static func ~= (match: CBATTError.Code, error: any Error) -> Bool { (error as? CBATTError)?.errorCode == match.rawValue }
}

/// How the stack's errors reach CoreBluetooth code: an ATT Error Response as `CBATTError` with
/// its code, link and host failures as the `CBError` Apple reports for them.
enum CBErrorMapping {
    static func map(_ error: any Error) -> any Error {
        if error is CBError || error is CBATTError { return error }
        if error is CancellationError { return CBError(.operationCancelled) }
        guard let ble = error as? BLEError else { return CBError(.unknown) }
        switch ble {
        case let .gatt(gatt):
            switch gatt {
            case let .att(code, _, _):
                return CBATTError(attErrorCode: code.rawValue)
            case .timeout: return CBError(.connectionTimeout)
            case .bearerClosed: return CBError(.peripheralDisconnected)
            case .invalidArgument: return CBError(.invalidParameters)
            case .unsupported: return CBError(.operationNotSupported)
            case .cancelled: return CBError(.operationCancelled)
            default: return CBError(.unknown)
            }
        case let .disconnected(reason): return disconnection(reason)
        case .notConnected: return CBError(.notConnected)
        case .connectionFailed: return CBError(.connectionFailed)
        case .invalidArgument: return CBError(.invalidParameters)
        case .unsupported: return CBError(.operationNotSupported)
        case .timeout: return CBError(.connectionTimeout)
        case .security: return CBError(.encryptionTimedOut)
        case .closed, .transport: return CBError(.peripheralDisconnected)
        case let .l2cap(l2cap):
            switch l2cap {
            case .refused, .rejected: return CBError(.connectionFailed)
            case .timeout: return CBError(.connectionTimeout)
            case .closed: return CBError(.peripheralDisconnected)
            default: return CBError(.unknown)
            }
        default: return CBError(.unknown)
        }
    }

    /// A link's end as `didDisconnectPeripheral` reports it: lost (supervision or LMP response
    /// timeout) is `connectionTimeout`, anything else from the peer `peripheralDisconnected`.
    static func disconnection(_ reason: HCIStatus) -> CBError {
        switch reason.rawValue {
        case 0x08, 0x22, 0x3E: return CBError(reason.rawValue == 0x3E ? .connectionFailed : .connectionTimeout)
        default: return CBError(.peripheralDisconnected)
        }
    }
}

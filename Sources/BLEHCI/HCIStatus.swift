import BLEWire

/// An HCI status / error code, as carried by Command Status, Command Complete return parameters,
/// and the Status and Reason fields of events. Core spec Vol 1 Part F §1.3 (list of error codes).
///
/// A struct, not an enum: new spec versions add codes, and a controller's value must never fail
/// to decode. Values without a name here print as "Unknown HCI Error (0xNN)".
public struct HCIStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8

    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    public var isSuccess: Bool { rawValue == 0 }

    public static let success = HCIStatus(0x00)
    public static let unknownCommand = HCIStatus(0x01)
    public static let unknownConnectionIdentifier = HCIStatus(0x02)
    public static let hardwareFailure = HCIStatus(0x03)
    public static let pageTimeout = HCIStatus(0x04)
    public static let authenticationFailure = HCIStatus(0x05)
    public static let pinOrKeyMissing = HCIStatus(0x06)
    public static let memoryCapacityExceeded = HCIStatus(0x07)
    public static let connectionTimeout = HCIStatus(0x08)
    public static let connectionLimitExceeded = HCIStatus(0x09)
    public static let synchronousConnectionLimitExceeded = HCIStatus(0x0A)
    public static let connectionAlreadyExists = HCIStatus(0x0B)
    public static let commandDisallowed = HCIStatus(0x0C)
    public static let connectionRejectedLimitedResources = HCIStatus(0x0D)
    public static let connectionRejectedSecurityReasons = HCIStatus(0x0E)
    public static let connectionRejectedUnacceptableBDAddr = HCIStatus(0x0F)
    public static let connectionAcceptTimeoutExceeded = HCIStatus(0x10)
    public static let unsupportedFeatureOrParameterValue = HCIStatus(0x11)
    public static let invalidHCICommandParameters = HCIStatus(0x12)
    public static let remoteUserTerminatedConnection = HCIStatus(0x13)
    public static let remoteDeviceTerminatedLowResources = HCIStatus(0x14)
    public static let remoteDeviceTerminatedPowerOff = HCIStatus(0x15)
    public static let connectionTerminatedByLocalHost = HCIStatus(0x16)
    public static let repeatedAttempts = HCIStatus(0x17)
    public static let pairingNotAllowed = HCIStatus(0x18)
    public static let unknownLMPPDU = HCIStatus(0x19)
    public static let unsupportedRemoteFeature = HCIStatus(0x1A)
    public static let scoOffsetRejected = HCIStatus(0x1B)
    public static let scoIntervalRejected = HCIStatus(0x1C)
    public static let scoAirModeRejected = HCIStatus(0x1D)
    public static let invalidLLParameters = HCIStatus(0x1E)
    public static let unspecifiedError = HCIStatus(0x1F)
    public static let unsupportedLLParameterValue = HCIStatus(0x20)
    public static let roleChangeNotAllowed = HCIStatus(0x21)
    public static let llResponseTimeout = HCIStatus(0x22)
    public static let llProcedureCollision = HCIStatus(0x23)
    public static let lmpPDUNotAllowed = HCIStatus(0x24)
    public static let encryptionModeNotAcceptable = HCIStatus(0x25)
    public static let linkKeyCannotBeChanged = HCIStatus(0x26)
    public static let requestedQoSNotSupported = HCIStatus(0x27)
    public static let instantPassed = HCIStatus(0x28)
    public static let pairingWithUnitKeyNotSupported = HCIStatus(0x29)
    public static let differentTransactionCollision = HCIStatus(0x2A)
    public static let qosUnacceptableParameter = HCIStatus(0x2C)
    public static let qosRejected = HCIStatus(0x2D)
    public static let channelClassificationNotSupported = HCIStatus(0x2E)
    public static let insufficientSecurity = HCIStatus(0x2F)
    public static let parameterOutOfMandatoryRange = HCIStatus(0x30)
    public static let roleSwitchPending = HCIStatus(0x32)
    public static let reservedSlotViolation = HCIStatus(0x34)
    public static let roleSwitchFailed = HCIStatus(0x35)
    public static let extendedInquiryResponseTooLarge = HCIStatus(0x36)
    public static let secureSimplePairingNotSupportedByHost = HCIStatus(0x37)
    public static let hostBusyPairing = HCIStatus(0x38)
    public static let connectionRejectedNoSuitableChannel = HCIStatus(0x39)
    public static let controllerBusy = HCIStatus(0x3A)
    public static let unacceptableConnectionParameters = HCIStatus(0x3B)
    public static let advertisingTimeout = HCIStatus(0x3C)
    public static let connectionTerminatedMICFailure = HCIStatus(0x3D)
    public static let connectionFailedToBeEstablished = HCIStatus(0x3E)
    public static let coarseClockAdjustmentRejected = HCIStatus(0x40)
    public static let type0SubmapNotDefined = HCIStatus(0x41)
    public static let unknownAdvertisingIdentifier = HCIStatus(0x42)
    public static let limitReached = HCIStatus(0x43)
    public static let operationCancelledByHost = HCIStatus(0x44)
    public static let packetTooLong = HCIStatus(0x45)
    public static let tooLate = HCIStatus(0x46)
    public static let tooEarly = HCIStatus(0x47)

    /// Names as Vol 1 Part F §1.3 spells them (LE wording where the spec gives "LMP/LL" pairs).
    static let names: [UInt8: String] = [
        0x00: "Success",
        0x01: "Unknown HCI Command",
        0x02: "Unknown Connection Identifier",
        0x03: "Hardware Failure",
        0x04: "Page Timeout",
        0x05: "Authentication Failure",
        0x06: "PIN or Key Missing",
        0x07: "Memory Capacity Exceeded",
        0x08: "Connection Timeout",
        0x09: "Connection Limit Exceeded",
        0x0A: "Synchronous Connection Limit To A Device Exceeded",
        0x0B: "Connection Already Exists",
        0x0C: "Command Disallowed",
        0x0D: "Connection Rejected due to Limited Resources",
        0x0E: "Connection Rejected Due To Security Reasons",
        0x0F: "Connection Rejected due to Unacceptable BD_ADDR",
        0x10: "Connection Accept Timeout Exceeded",
        0x11: "Unsupported Feature or Parameter Value",
        0x12: "Invalid HCI Command Parameters",
        0x13: "Remote User Terminated Connection",
        0x14: "Remote Device Terminated Connection due to Low Resources",
        0x15: "Remote Device Terminated Connection due to Power Off",
        0x16: "Connection Terminated By Local Host",
        0x17: "Repeated Attempts",
        0x18: "Pairing Not Allowed",
        0x19: "Unknown LMP PDU",
        0x1A: "Unsupported Remote Feature",
        0x1B: "SCO Offset Rejected",
        0x1C: "SCO Interval Rejected",
        0x1D: "SCO Air Mode Rejected",
        0x1E: "Invalid LMP Parameters / Invalid LL Parameters",
        0x1F: "Unspecified Error",
        0x20: "Unsupported LMP Parameter Value / Unsupported LL Parameter Value",
        0x21: "Role Change Not Allowed",
        0x22: "LMP Response Timeout / LL Response Timeout",
        0x23: "LMP Error Transaction Collision / LL Procedure Collision",
        0x24: "LMP PDU Not Allowed",
        0x25: "Encryption Mode Not Acceptable",
        0x26: "Link Key cannot be Changed",
        0x27: "Requested QoS Not Supported",
        0x28: "Instant Passed",
        0x29: "Pairing With Unit Key Not Supported",
        0x2A: "Different Transaction Collision",
        0x2C: "QoS Unacceptable Parameter",
        0x2D: "QoS Rejected",
        0x2E: "Channel Classification Not Supported",
        0x2F: "Insufficient Security",
        0x30: "Parameter Out Of Mandatory Range",
        0x32: "Role Switch Pending",
        0x34: "Reserved Slot Violation",
        0x35: "Role Switch Failed",
        0x36: "Extended Inquiry Response Too Large",
        0x37: "Secure Simple Pairing Not Supported By Host",
        0x38: "Host Busy - Pairing",
        0x39: "Connection Rejected due to No Suitable Channel Found",
        0x3A: "Controller Busy",
        0x3B: "Unacceptable Connection Parameters",
        0x3C: "Advertising Timeout",
        0x3D: "Connection Terminated due to MIC Failure",
        0x3E: "Connection Failed to be Established / Synchronization Timeout",
        0x40: "Coarse Clock Adjustment Rejected but Will Try to Adjust Using Clock Dragging",
        0x41: "Type0 Submap Not Defined",
        0x42: "Unknown Advertising Identifier",
        0x43: "Limit Reached",
        0x44: "Operation Cancelled by Host",
        0x45: "Packet Too Long",
        0x46: "Too Late",
        0x47: "Too Early",
    ]

    /// The spec name without the code, or nil for a reserved/unknown value.
    public var name: String? { Self.names[rawValue] }

    /// E.g. "Remote User Terminated Connection (0x13)".
    public var description: String {
        "\(name ?? "Unknown HCI Error") (0x\(hex2(rawValue)))"
    }
}

/// Why an HCI exchange failed: the command and the controller's code, or a local condition.
public enum HCIError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The controller answered the command with a non-zero status (Command Status, or the status
    /// byte of Command Complete's return parameters). Core spec Vol 4 Part E §7.7.14, §7.7.15.
    case commandFailed(opcode: HCIOpcode, status: HCIStatus)
    /// No Command Complete/Status arrived within the deadline the command was queued with.
    case commandTimeout(opcode: HCIOpcode)
    /// The controller reported a Hardware Error event (code is vendor defined). §7.7.16.
    case hardwareError(code: UInt8)
    /// The controller's bytes could not be decoded.
    case malformed(WireError)
    /// Command Complete arrived but its return parameters do not fit the command.
    case unexpectedReturnParameters(opcode: HCIOpcode)
    /// The transport to the controller closed while the command was outstanding.
    case transportClosed

    public var description: String {
        switch self {
        case let .commandFailed(opcode, status):
            return "HCI command \(opcode) failed: \(status)"
        case let .commandTimeout(opcode):
            return "HCI command \(opcode) timed out (no Command Complete/Status from the controller)"
        case let .hardwareError(code):
            return "controller hardware error 0x\(hex2(code))"
        case let .malformed(error):
            return "malformed HCI data: \(error)"
        case let .unexpectedReturnParameters(opcode):
            return "unexpected return parameters for HCI command \(opcode)"
        case .transportClosed:
            return "HCI transport closed"
        }
    }

    /// The controller's code, when the failure carries one.
    public var status: HCIStatus? {
        if case let .commandFailed(_, status) = self { return status }
        return nil
    }
}

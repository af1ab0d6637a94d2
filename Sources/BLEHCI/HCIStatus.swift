import BLEWire

/// An HCI status / error code, as carried by Command Status, Command Complete return parameters,
/// and the Status and Reason fields of events. Core spec Vol 1 Part F §1.3 (list of error codes).
///
/// A struct, not an enum: new spec versions add codes, and a controller's value must never fail
/// to decode. Values without a name here print as "Unknown HCI Error (0xNN)".
public struct HCIStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code as it appears in the packet.
    public var rawValue: UInt8

    /// The code `rawValue`, named here or not.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The code `rawValue` (unlabelled, for tables of codes).
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    /// True for 0x00, Success: every other code is an error.
    public var isSuccess: Bool { rawValue == 0 }

    /// 0x00: the command succeeded.
    public static let success = HCIStatus(0x00)
    /// 0x01: the controller does not know the command's opcode (§2.1); for an optional command
    /// the host takes it as not supported.
    public static let unknownCommand = HCIStatus(0x01)
    /// 0x02: no connection has the handle given (§2.2), e.g. one that has just gone down; also
    /// the status of the LE Connection Complete that follows a successful LE Create Connection
    /// Cancel (Vol 4 Part E §7.8.13).
    public static let unknownConnectionIdentifier = HCIStatus(0x02)
    /// 0x03: the controller failed in a way it cannot describe further (§2.3).
    public static let hardwareFailure = HCIStatus(0x03)
    /// 0x04: a BR/EDR page went unanswered (§2.4); not used on LE.
    public static let pageTimeout = HCIStatus(0x04)
    /// 0x05: pairing or authentication failed, e.g. a wrong PIN or key (§2.5).
    public static let authenticationFailure = HCIStatus(0x05)
    /// 0x06: no key for the peer (§2.6); on LE, the host answered the Long Term Key Request
    /// negatively.
    public static let pinOrKeyMissing = HCIStatus(0x06)
    /// 0x07: the controller has no memory left for what was asked (§2.7).
    public static let memoryCapacityExceeded = HCIStatus(0x07)
    /// 0x08: the link's supervision timeout expired: the peer went out of range or silent (§2.8).
    public static let connectionTimeout = HCIStatus(0x08)
    /// 0x09: the controller already has as many connections as it can hold (§2.9).
    public static let connectionLimitExceeded = HCIStatus(0x09)
    /// 0x0A: too many synchronous connections to one device (BR/EDR, §2.10).
    public static let synchronousConnectionLimitExceeded = HCIStatus(0x0A)
    /// 0x0B: a connection to that device already exists (§2.11).
    public static let connectionAlreadyExists = HCIStatus(0x0B)
    /// 0x0C: the command is valid but not allowed in the controller's present state (§2.12),
    /// e.g. LE Create Connection while one is pending.
    public static let commandDisallowed = HCIStatus(0x0C)
    /// 0x0D: the connection was refused for lack of resources (§2.13).
    public static let connectionRejectedLimitedResources = HCIStatus(0x0D)
    /// 0x0E: the connection was refused for security reasons (§2.14).
    public static let connectionRejectedSecurityReasons = HCIStatus(0x0E)
    /// 0x0F: the connection was refused: the host does not accept this address (§2.15).
    public static let connectionRejectedUnacceptableBDAddr = HCIStatus(0x0F)
    /// 0x10: the host did not accept a connection in time (§2.16).
    public static let connectionAcceptTimeoutExceeded = HCIStatus(0x10)
    /// 0x11: a feature or parameter value the controller does not support (§2.17).
    public static let unsupportedFeatureOrParameterValue = HCIStatus(0x11)
    /// 0x12: a parameter is out of range or the parameters are inconsistent (§2.18).
    public static let invalidHCICommandParameters = HCIStatus(0x12)
    /// 0x13: the peer's user ended the link (§2.19): the usual reason of a deliberate disconnect.
    public static let remoteUserTerminatedConnection = HCIStatus(0x13)
    /// 0x14: the peer ended the link for lack of resources (§2.20).
    public static let remoteDeviceTerminatedLowResources = HCIStatus(0x14)
    /// 0x15: the peer ended the link because it is powering off (§2.21).
    public static let remoteDeviceTerminatedPowerOff = HCIStatus(0x15)
    /// 0x16: this host ended the link (§2.22): the reason Disconnection Complete reports
    /// after our own disconnect.
    public static let connectionTerminatedByLocalHost = HCIStatus(0x16)
    /// 0x17: pairing or authentication refused because of too many recent attempts (§2.23).
    public static let repeatedAttempts = HCIStatus(0x17)
    /// 0x18: the device does not allow pairing now (§2.24).
    public static let pairingNotAllowed = HCIStatus(0x18)
    /// 0x19: the peer sent an LMP PDU the controller does not know (BR/EDR, §2.25).
    public static let unknownLMPPDU = HCIStatus(0x19)
    /// 0x1A: the peer lacks the feature a procedure needs (§2.26), e.g. Data Length Extension.
    public static let unsupportedRemoteFeature = HCIStatus(0x1A)
    /// 0x1B: an SCO offset was rejected (BR/EDR, §2.27).
    public static let scoOffsetRejected = HCIStatus(0x1B)
    /// 0x1C: an SCO interval was rejected (BR/EDR, §2.28).
    public static let scoIntervalRejected = HCIStatus(0x1C)
    /// 0x1D: an SCO air mode was rejected (BR/EDR, §2.29).
    public static let scoAirModeRejected = HCIStatus(0x1D)
    /// 0x1E: the peer's LMP or LL PDU had invalid parameters (§2.30).
    public static let invalidLLParameters = HCIStatus(0x1E)
    /// 0x1F: no other code fits (§2.31).
    public static let unspecifiedError = HCIStatus(0x1F)
    /// 0x20: the peer's LMP or LL PDU had a parameter value this device does not support (§2.32).
    public static let unsupportedLLParameterValue = HCIStatus(0x20)
    /// 0x21: a role change is not allowed now (BR/EDR, §2.33).
    public static let roleChangeNotAllowed = HCIStatus(0x21)
    /// 0x22: the peer did not answer an LL procedure within 40 s (§2.34).
    public static let llResponseTimeout = HCIStatus(0x22)
    /// 0x23: both ends started an LL procedure at once (§2.35); one is abandoned.
    public static let llProcedureCollision = HCIStatus(0x23)
    /// 0x24: an LMP PDU not allowed in this state (BR/EDR, §2.36).
    public static let lmpPDUNotAllowed = HCIStatus(0x24)
    /// 0x25: the requested encryption mode is not acceptable (§2.37).
    public static let encryptionModeNotAcceptable = HCIStatus(0x25)
    /// 0x26: the link key cannot be changed (BR/EDR, §2.38).
    public static let linkKeyCannotBeChanged = HCIStatus(0x26)
    /// 0x27: the requested quality of service is not supported (§2.39).
    public static let requestedQoSNotSupported = HCIStatus(0x27)
    /// 0x28: an LL procedure's instant passed before the PDU arrived (§2.40); the link is
    /// usually lost.
    public static let instantPassed = HCIStatus(0x28)
    /// 0x29: pairing with a unit key is not supported (BR/EDR, §2.41).
    public static let pairingWithUnitKeyNotSupported = HCIStatus(0x29)
    /// 0x2A: two different LL procedures collided (§2.42).
    public static let differentTransactionCollision = HCIStatus(0x2A)
    /// 0x2C: a quality-of-service parameter is not acceptable.
    public static let qosUnacceptableParameter = HCIStatus(0x2C)
    /// 0x2D: the quality-of-service request was rejected.
    public static let qosRejected = HCIStatus(0x2D)
    /// 0x2E: channel classification is not supported.
    public static let channelClassificationNotSupported = HCIStatus(0x2E)
    /// 0x2F: the link's security is too low for the request.
    public static let insufficientSecurity = HCIStatus(0x2F)
    /// 0x30: a parameter is outside the range the spec makes mandatory.
    public static let parameterOutOfMandatoryRange = HCIStatus(0x30)
    /// 0x32: a role switch is in progress (BR/EDR).
    public static let roleSwitchPending = HCIStatus(0x32)
    /// 0x34: a reserved slot could not be honoured (BR/EDR).
    public static let reservedSlotViolation = HCIStatus(0x34)
    /// 0x35: a role switch failed (BR/EDR).
    public static let roleSwitchFailed = HCIStatus(0x35)
    /// 0x36: extended inquiry response data too large (BR/EDR).
    public static let extendedInquiryResponseTooLarge = HCIStatus(0x36)
    /// 0x37: the host does not support Secure Simple Pairing (BR/EDR).
    public static let secureSimplePairingNotSupportedByHost = HCIStatus(0x37)
    /// 0x38: the host is busy pairing with another device.
    public static let hostBusyPairing = HCIStatus(0x38)
    /// 0x39: no suitable channel was found for the connection.
    public static let connectionRejectedNoSuitableChannel = HCIStatus(0x39)
    /// 0x3A: the controller is too busy to do it now.
    public static let controllerBusy = HCIStatus(0x3A)
    /// 0x3B: the connection parameters asked for are not acceptable.
    public static let unacceptableConnectionParameters = HCIStatus(0x3B)
    /// 0x3C: directed or timed advertising ended without a connection.
    public static let advertisingTimeout = HCIStatus(0x3C)
    /// 0x3D: a packet failed its message integrity check, or encryption failed to start
    /// (keys differ), and the link was ended.
    public static let connectionTerminatedMICFailure = HCIStatus(0x3D)
    /// 0x3E: the link was never established: the peer did not answer the first connection
    /// events.
    public static let connectionFailedToBeEstablished = HCIStatus(0x3E)
    /// 0x40: a coarse clock adjustment was rejected (BR/EDR).
    public static let coarseClockAdjustmentRejected = HCIStatus(0x40)
    /// 0x41: the Type0 submap is not defined (BR/EDR).
    public static let type0SubmapNotDefined = HCIStatus(0x41)
    /// 0x42: no advertising set has the handle given.
    public static let unknownAdvertisingIdentifier = HCIStatus(0x42)
    /// 0x43: a limit was reached, e.g. advertising events or scan time.
    public static let limitReached = HCIStatus(0x43)
    /// 0x44: the operation was cancelled by the host.
    public static let operationCancelledByHost = HCIStatus(0x44)
    /// 0x45: a packet is longer than allowed.
    public static let packetTooLong = HCIStatus(0x45)
    /// 0x46: the information arrived too late to be used.
    public static let tooLate = HCIStatus(0x46)
    /// 0x47: the information arrived too early to be used.
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

    /// What failed: the command and its status, a timeout, a hardware error or lost transport.
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

import BLEWire

/// Why a GATT client procedure did not produce its output. Says which side failed: `.att` is
/// the peer's answer; `.unexpectedResponse`, `.malformedResponse` and `.protocolViolation` are the
/// peer breaking the protocol; `.databaseChanged` is the peer's database changing under the
/// request; `.timeout` and `.bearerClosed` are the link; `.invalidArgument`, `.unsupported` and
/// `.cancelled` are local.
public enum GATTError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The server answered `request` with an Error Response (Core spec Vol 3 Part F §3.4.1.1).
    case att(code: ATTErrorCode, handle: UInt16, request: ATTOpcode)
    /// The server answered with a PDU that does not answer the outstanding request, or with an
    /// Error Response naming another request (Vol 3 Part F §3.3.2, §3.4.1.1).
    case unexpectedResponse(expected: ATTOpcode, got: ATTOpcode)
    /// The response to the outstanding request could not be decoded.
    case malformedResponse(WireError)
    /// The response decoded but its content breaks the procedure's rules, e.g. a discovery
    /// response whose handles do not advance (which would loop forever).
    case protocolViolation(String)
    /// No response within 30 s (Vol 3 Part F §3.3.3); the bearer is closed after this.
    case timeout
    /// The bearer closed (disconnection, or an earlier timeout) before the procedure ended.
    case bearerClosed
    /// The caller asked for something the procedure cannot do (e.g. a value too long).
    case invalidArgument(String)
    /// A feature this stack does not provide yet.
    case unsupported(String)
    /// A Prepare Write Response did not echo the handle, offset and value sent (Vol 3 Part G
    /// §4.9.4, §4.9.5); the queued writes were cancelled with Execute Write (flags 0x00).
    case reliableWriteEchoMismatch(handle: UInt16)
    /// The caller cancelled the procedure.
    case cancelled
    /// The server's database changed in this handle range (a Service Changed indication, Vol 3
    /// Part G §7.1; 0x0001...0xFFFF after Database Out Of Sync, §2.5.2.1) while the procedure
    /// ran, over handles it had named: an answer may come from what is now another attribute,
    /// so none was used. Nothing says whether the server carried out a write that was answered.
    case databaseChanged(ClosedRange<UInt16>)

    /// What failed, with the ATT error code, handle and request where there is one.
    public var description: String {
        switch self {
        case let .att(code, handle, request):
            return "ATT error \(code) on handle 0x\(attHex16(handle)) for \(request)"
        case let .unexpectedResponse(expected, got):
            return "unexpected ATT response: expected \(expected), got \(got)"
        case let .malformedResponse(error):
            return "malformed ATT response: \(error)"
        case let .protocolViolation(what):
            return "ATT protocol violation by the server: \(what)"
        case .timeout:
            return "ATT transaction timed out (30 s); the bearer is closed"
        case .bearerClosed:
            return "ATT bearer closed"
        case let .invalidArgument(what):
            return "invalid argument: \(what)"
        case let .unsupported(what):
            return "not supported: \(what)"
        case let .reliableWriteEchoMismatch(handle):
            return "prepared write echo mismatch on handle 0x\(attHex16(handle)); writes cancelled"
        case .cancelled:
            return "GATT procedure cancelled"
        case let .databaseChanged(range):
            return "the server's database changed (handles 0x\(attHex16(range.lowerBound))...0x\(attHex16(range.upperBound))) during the request; no answer to it was used"
        }
    }
}

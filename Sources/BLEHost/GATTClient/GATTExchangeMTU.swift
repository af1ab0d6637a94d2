import BLEWire

/// Exchange MTU, Core spec Vol 3 Part G §4.3.1 / Vol 3 Part F §3.4.2.
///
/// Output: the ATT_MTU now in effect, min(client Rx MTU, server Rx MTU) and never below the LE
/// default 23 (§3.4.2.2 forbids smaller values; a server that sends one is taken as 23). A server
/// that answers Request Not Supported keeps the default 23, which is success, not failure.
public struct ExchangeMTUProcedure: GATTProcedure {
    public typealias Output = Int
    /// The LE default and minimum ATT_MTU (Vol 3 Part F §3.2.8).
    public static let minimumMTU = 23
    /// 512 octets of value plus the largest header, the most any ATT PDU needs.
    public static let defaultClientMTU = 517

    public var mtu: Int
    /// The Client Rx MTU to offer: 23...65535.
    public let clientMTU: Int

    public init(clientMTU: Int = ExchangeMTUProcedure.defaultClientMTU, mtu: Int = ExchangeMTUProcedure.minimumMTU) {
        self.clientMTU = clientMTU
        self.mtu = mtu
    }

    public mutating func start() -> ProcedureStep<Int> {
        guard clientMTU >= Self.minimumMTU, let offered = UInt16(exactly: clientMTU) else {
            return .failed(.invalidArgument("client Rx MTU \(clientMTU) is outside \(Self.minimumMTU)...65535"))
        }
        return .send(.exchangeMTURequest(clientMTU: offered))
    }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<Int> {
        switch ATTAnswer(pdu, to: .exchangeMTURequest) {
        case let .invalid(error):
            return .failed(error)
        case .error(.requestNotSupported, _):
            return .done(Self.minimumMTU)
        case let .error(code, handle):
            return .failed(.att(code: code, handle: handle, request: .exchangeMTURequest))
        case let .response(response):
            guard case let .exchangeMTUResponse(serverRx) = response else {
                return .failed(.unexpected(response, for: .exchangeMTURequest))
            }
            return .done(max(Self.minimumMTU, min(clientMTU, Int(serverRx))))
        }
    }

    /// The ATT_MTU does not depend on the database.
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        .unaffected
    }

    public static func gattOutput(_ output: Int) -> GATTOutput { .mtu(output) }
}


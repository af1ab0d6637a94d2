import BLEHCI

extension PeripheralManager {
    /// Asks a central for new connection parameters: HCI LE Connection Update sent by the
    /// peripheral (Core spec Vol 4 Part E §7.8.18), which has the controller run the Connection
    /// Parameters Request procedure with the central (Vol 6 Part B §5.1.7). Intervals are in
    /// units of 1.25 ms, the timeout in 10 ms. Returns the parameters the link has once the
    /// controller reports LE Connection Update Complete (§7.7.65.3); the central picks them
    /// within what was asked.
    ///
    /// Throws `.invalidArgument` for parameters outside the spec's ranges, `.notConnected` for a
    /// central that is gone (or why the link went down meanwhile), and
    /// `.hci(.commandFailed(opcode: .leConnectionUpdate, status:))` when our controller refuses
    /// the command or the procedure ends with a non-zero status (the central refused, or its
    /// controller lacks the procedure): the status is the one HCI reported, and the link keeps
    /// the parameters it had. `.timeout` when no completion comes within the command timeout
    /// plus the Link Layer's 40 s procedure response timeout (Vol 6 Part B §5.2).
    @discardableResult
    public func requestConnectionParameters(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16,
                                            supervisionTimeout: UInt16, for central: ConnectedCentral) async throws -> LinkParameters {
        guard LinkParameters.isValid(intervalMin: intervalMin, intervalMax: intervalMax, latency: latency, timeout: supervisionTimeout) else {
            throw BLEError.invalidArgument("connection parameters \(intervalMin)...\(intervalMax), latency \(latency), timeout \(supervisionTimeout) are outside the spec's ranges")
        }
        return try await host.run { host in
            try await host.connections.updateParameters(linkID: central.id, intervalMin: intervalMin, intervalMax: intervalMax,
                                                        latency: latency, supervisionTimeout: supervisionTimeout, host)
        }
    }
}

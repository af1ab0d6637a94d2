import BLEHCI

extension PeripheralManager {
    /// Asks a central for new connection parameters: HCI LE Connection Update sent by the
    /// peripheral (Core spec Vol 4 Part E §7.8.18), which has the controller run the Connection
    /// Parameters Request procedure with the central (Vol 6 Part B §5.1.7). Intervals are in
    /// units of 1.25 ms, the timeout in 10 ms. Returns once the controller has taken the
    /// request; the central decides, and the link's parameters change when it applies them.
    /// Throws `.invalidArgument` for parameters outside the spec's ranges, `.notConnected` for
    /// a central that is gone, `.hci` when our controller refuses the command. The central's
    /// answer comes later, in LE Connection Update Complete (§7.7.65.3), and is not awaited: a
    /// central that refuses (or whose controller lacks the procedure) leaves the parameters as
    /// they were, and nothing reports it to the caller.
    public func requestConnectionParameters(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16,
                                            supervisionTimeout: UInt16, for central: ConnectedCentral) async throws {
        guard LinkParameters.isValid(intervalMin: intervalMin, intervalMax: intervalMax, latency: latency, timeout: supervisionTimeout) else {
            throw BLEError.invalidArgument("connection parameters \(intervalMin)...\(intervalMax), latency \(latency), timeout \(supervisionTimeout) are outside the spec's ranges")
        }
        try await host.run { host in
            guard let handle = host.connections.links.handle(forID: central.id) else { throw BLEError.notConnected }
            try await host.command(.leConnectionUpdate(handle: handle, intervalMin: intervalMin, intervalMax: intervalMax,
                                                       maxLatency: latency, supervisionTimeout: supervisionTimeout,
                                                       minCELength: 0, maxCELength: 0))
        }
    }
}

import BLERuntime

/// Opens the transport a spec names. TCP resolution and connection run off the cooperative pool.
/// `virtual` throws `TransportError.Kind.notAvailable`: the in-process virtual radio lives in
/// another layer, which intercepts that spec before it gets here.
public func openTransport(_ spec: TransportSpec) async throws -> any HCITransport {
    switch spec {
    case .virtual, .virtualProfile:
        throw TransportError(.notAvailable,
            "the virtual radio is not available in this build (transport 'virtual' must be opened by the BLE API layer)")
    #if canImport(Glibc)
    case let .tcp(host, port):
        return try await TCPTransport.connect(host: host, port: port)
    case let .serial(path, baud, rtscts):
        return try await SerialTransport.open(path: path, baud: baud, rtscts: rtscts)
    case let .hciUserChannel(index):
        return try await HCIUserChannelTransport.open(index: index)
    #else
    case .tcp, .serial, .hciUserChannel:
        throw TransportError(.notAvailable, "transport '\(spec)' is only implemented on Linux in this build")
    #endif
    }
}

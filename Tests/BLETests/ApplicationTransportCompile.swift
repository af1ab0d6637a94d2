import BLE

/// A transport an application brings of its own, written with `import BLE` alone: the
/// `HCITransport` protocol is part of the API, and so are the frames it moves (`H4Frame`,
/// `HCIPacketType`). Never used: it only has to compile.
private final class ApplicationTransport: HCITransport {
    let incoming: AsyncThrowingStream<H4Frame, any Error>
    private let continuation: AsyncThrowingStream<H4Frame, any Error>.Continuation

    init() {
        (incoming, continuation) = AsyncThrowingStream.makeStream()
    }

    /// Echoes every command back as if it were an event: enough to name the types.
    func send(_ frame: H4Frame) async throws {
        guard frame.type == .command else { throw TransportError(.io, "only commands") }
        continuation.yield(H4Frame(type: HCIPacketType.event, payload: frame.payload))
    }

    func close() async { continuation.finish() }

    var description: String { "application" }
}

import BLEHCI
import BLERuntime
import Synchronization

/// Passes frames through to a transport and keeps a btsnoop capture of them in memory, both
/// ways (what `ble --capture` writes to a file), for tests that count what went over HCI. The
/// forwarding task runs on `executor` (a virtual-time world's, so it keeps virtual time).
public final class RecordingTransport: HCITransport {
    public let inner: any HCITransport
    public let incoming: AsyncThrowingStream<H4Frame, any Error>
    private let recorded = Capture()
    private let forwarder: Task<Void, Never>

    public init(wrapping inner: any HCITransport, executor: (any TaskExecutor)?) {
        self.inner = inner
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: H4Frame.self, throwing: (any Error).self)
        incoming = stream
        let recorded = self.recorded
        forwarder = Task(executorPreference: executor) {
            do {
                for try await frame in inner.incoming {
                    recorded.append(BTSnoop.record(frame: frame, direction: .received, timestamp: 0))
                    continuation.yield(frame)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }

    public func send(_ frame: H4Frame) async throws {
        recorded.append(BTSnoop.record(frame: frame, direction: .sent, timestamp: 0))
        try await inner.send(frame)
    }

    public func close() async {
        await inner.close()
        await forwarder.value
    }

    /// The capture so far, as a btsnoop file.
    public var btsnoop: [UInt8] { recorded.bytes }

    public var description: String { "\(inner.description) (recording)" }
}

/// The capture's bytes, shared with the forwarding task.
private final class Capture: Sendable {
    private let state = Mutex<[UInt8]>(BTSnoop.fileHeader)
    func append(_ record: [UInt8]) { state.withLock { $0 += record } }
    var bytes: [UInt8] { state.withLock { $0 } }
}

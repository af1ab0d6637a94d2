import BLE
import BLEHCI
import BLEHost
import BLETestSupport
import BLEVirtual
import BLEVirtualRadio
import BLEWire
import BLERuntime
import Synchronization
import XCTest

/// Passes HCI frames through and keeps them, both ways, so a test can see which path a
/// procedure took (commands sent, L2CAP signaling, LE events).
final class HCITap: HCITransport {
    let inner: any HCITransport
    let incoming: AsyncThrowingStream<H4Frame, any Error>
    private let frames = Frames()
    private let forwarder: Task<Void, Never>

    init(wrapping inner: any HCITransport, executor: (any TaskExecutor)?) {
        self.inner = inner
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: H4Frame.self, throwing: (any Error).self)
        incoming = stream
        let frames = self.frames
        forwarder = Task(executorPreference: executor) {
            do {
                for try await frame in inner.incoming {
                    frames.append(false, frame)
                    continuation.yield(frame)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }

    func send(_ frame: H4Frame) async throws {
        frames.append(true, frame)
        try await inner.send(frame)
    }

    func close() async {
        await inner.close()
        await forwarder.value
    }

    var description: String { "\(inner.description) (tapped)" }

    /// How many HCI commands with `opcode` the host sent.
    func sentCommands(_ opcode: UInt16) -> Int {
        frames.all.filter { $0.sent && $0.frame.type == .command && $0.frame.payload.count >= 2
            && UInt16($0.frame.payload[0]) | UInt16($0.frame.payload[1]) << 8 == opcode }.count
    }

    /// How many LE signaling commands (CID 5) with `code` went `sent` (host to controller) or came.
    func signals(sent: Bool, code: UInt8) -> Int {
        frames.all.filter { entry in
            let b = entry.frame.payload
            // ACL header (4), L2CAP header (4), then the command's code; first fragments only.
            guard entry.sent == sent, entry.frame.type == .acl, b.count >= 9, (b[1] >> 4) & 0x3 != 0x1 else { return false }
            return UInt16(b[6]) | UInt16(b[7]) << 8 == 0x0005 && b[8] == code
        }.count
    }

    /// The statuses of the LE Connection Update Complete events that came, in order.
    func connectionUpdateCompletions() -> [HCIStatus] {
        frames.all.compactMap { entry in
            let b = entry.frame.payload
            guard !entry.sent, entry.frame.type == .event, b.count >= 4, b[0] == 0x3E, b[2] == 0x03 else { return nil }
            return HCIStatus(rawValue: b[3])
        }
    }
}

/// What an `HCITap` kept, shared with its forwarding task.
private final class Frames: Sendable {
    private let state = Mutex<[(sent: Bool, frame: H4Frame)]>([])
    func append(_ sent: Bool, _ frame: H4Frame) { state.withLock { $0.append((sent, frame)) } }
    var all: [(sent: Bool, frame: H4Frame)] { state.withLock { $0 } }
}

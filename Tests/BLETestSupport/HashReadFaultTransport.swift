import BLEHCI
import BLERuntime
import Synchronization

/// Passes frames through to a client's transport, but spoils the server's answer to its
/// Database Hash reads (Core spec Vol 3 Part G §7.3: a Read By Type Request for «Database Hash»
/// 0x2B2A, Vol 3 Part F §3.4.4.1) while `fault` is set: replaced by an Error Response with a
/// code (an ATT error, or Attribute Not Found for a server without the characteristic), or
/// dropped (a server that never answers, so the client's transaction times out). The rest of
/// the traffic is untouched. The forwarding task runs on `executor` (a virtual-time world's).
///
/// It reads ATT on the fixed channel 0x0004 from the first fragment of each ACL packet; a hash
/// read and its answer fit one fragment of the 27-octet LE ACL buffers the virtual controller has.
public final class HashReadFaultTransport: HCITransport {
    /// What happens to the answer of a Database Hash read.
    public enum Fault: Sendable, Equatable {
        /// An Error Response with this ATT error code instead.
        case error(UInt8)
        /// No answer at all.
        case silence
    }

    public let inner: any HCITransport
    public let incoming: AsyncThrowingStream<H4Frame, any Error>
    private let state = FaultState()
    private let forwarder: Task<Void, Never>

    public init(wrapping inner: any HCITransport, executor: (any TaskExecutor)?) {
        self.inner = inner
        let state = self.state
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: H4Frame.self, throwing: (any Error).self)
        incoming = stream
        forwarder = Task(executorPreference: executor) {
            do {
                for try await frame in inner.incoming {
                    guard let packet = Self.attAnswer(frame) else {
                        continuation.yield(frame)
                        continue
                    }
                    let fault = state.locked.withLock { s -> Fault? in
                        guard s.pending, let f = s.fault else { return nil }
                        s.pending = false
                        s.spoiled += 1
                        return f
                    }
                    switch fault {
                    case nil:
                        continuation.yield(frame)
                    case let .error(code)?:
                        let pdu: [UInt8] = [0x01, 0x08, 0x01, 0x00, code]
                        let l2cap = [UInt8(pdu.count), 0x00, 0x04, 0x00] + pdu
                        continuation.yield(ACLPacket(handle: packet.handle, boundary: packet.boundary, data: l2cap).h4Frame)
                    case .silence?:
                        break
                    }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }

    /// Spoils the answers of the Database Hash reads from now on, or (nil) stops.
    public func setFault(_ fault: Fault?) { state.locked.withLock { $0.fault = fault } }

    /// How many answers were spoiled so far.
    public var spoiled: Int { state.locked.withLock { $0.spoiled } }

    public func send(_ frame: H4Frame) async throws {
        if Self.isHashRead(frame) { state.locked.withLock { $0.pending = true } }
        try await inner.send(frame)
    }

    public func close() async {
        await inner.close()
        await forwarder.value
    }

    public var description: String { "\(inner.description) (Database Hash faults)" }

    /// The ATT payload on channel 0x0004 of an ACL frame's first fragment.
    static func att(_ frame: H4Frame) -> (packet: ACLPacket, pdu: ArraySlice<UInt8>)? {
        guard frame.type == .acl, let packet = try? ACLPacket.decode(frame.payload), packet.boundary.isStart,
              packet.data.count >= 5, packet.data[2] == 0x04, packet.data[3] == 0x00 else { return nil }
        return (packet, packet.data[4...])
    }

    /// A Read By Type Request whose type is the 16-bit UUID 0x2B2A.
    static func isHashRead(_ frame: H4Frame) -> Bool {
        guard let (_, pdu) = att(frame), pdu.count == 7, pdu.first == 0x08 else { return false }
        let i = pdu.startIndex
        return pdu[i + 5] == 0x2A && pdu[i + 6] == 0x2B
    }

    /// A Read By Type Response, or an Error Response to a Read By Type Request.
    static func attAnswer(_ frame: H4Frame) -> ACLPacket? {
        guard let (packet, pdu) = att(frame), let opcode = pdu.first else { return nil }
        if opcode == 0x09 { return packet }
        if opcode == 0x01, pdu.count >= 2, pdu[pdu.startIndex + 1] == 0x08 { return packet }
        return nil
    }
}

/// The fault, whether a hash read awaits its answer, and how many answers were spoiled, shared
/// with the forwarding task.
private final class FaultState: Sendable {
    let locked = Mutex<(fault: HashReadFaultTransport.Fault?, pending: Bool, spoiled: Int)>((nil, false, 0))
}

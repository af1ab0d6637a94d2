import BLEHCI
import BLEWire

/// Counts a GATT client's round trips in a btsnoop capture taken on its host (ATT
/// requests other than Exchange MTU from Connection Complete to the first notification).
///
/// Reads HCI as it was captured: the first LE Connection Complete (or Enhanced Connection
/// Complete) event starts the count; every ACL packet the host sent that starts an L2CAP PDU
/// (Core spec Vol 4 Part E §5.4.2: Packet_Boundary_Flag 0b00 or 0b10) on the ATT fixed channel
/// 0x0004 (Vol 3 Part A §2.1) and carries an ATT request (Vol 3 Part F §3.3: an opcode that
/// expects a response) counts, except Exchange MTU; the first Handle Value Notification
/// received ends it. Continuation fragments are skipped, so 27-byte controller buffers
/// (rootcanal) count the same as 251-byte ones.
public struct ATTRoundTrips: Sendable, Equatable, CustomStringConvertible {
    /// The requests counted, by opcode, in the order sent.
    public var requests: [UInt8] = []
    /// A Connection Complete event was found.
    public var connected = false
    /// A notification was received after it.
    public var notified = false

    /// Counting goes on after the first notification.
    private var wholeConnection = false

    /// How many requests were counted.
    public var count: Int { requests.count }

    public var description: String {
        "\(count) ATT requests [" + requests.map { "0x" + String($0, radix: 16) }.joined(separator: " ") + "]"
            + (connected ? "" : " (no Connection Complete)") + (notified ? "" : " (no notification)")
    }

    /// Counts in the records of a btsnoop file, from its `connection`th successful Connection
    /// Complete (1 = the first); with `wholeConnection`, every request to the capture's end,
    /// not only those before the first notification.
    public init(btsnoop bytes: [UInt8], connection: Int = 1, wholeConnection: Bool = false) throws {
        self.wholeConnection = wholeConnection
        var toSkip = connection - 1
        for record in try BTSnoop.parse(bytes) {
            guard let frame = try? record.frame() else { continue }
            if take(frame, direction: record.direction) { break }
            if connected, toSkip > 0, frame.type == .event {
                toSkip -= 1
                connected = false
            }
        }
    }

    /// ATT opcodes of requests (Vol 3 Part F §3.4, Table 3.37), without Exchange MTU (0x02).
    static let requestOpcodes: Set<UInt8> = [0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20]

    /// Takes one frame; true once the count is complete.
    private mutating func take(_ frame: H4Frame, direction: BTSnoop.Direction) -> Bool {
        let p = frame.payload
        switch frame.type {
        case .event:
            // LE Meta event 0x3E: Connection Complete 0x01, Enhanced 0x0A, Enhanced v2 0x29.
            if direction == .received, p.count >= 3, p[0] == 0x3E, [0x01, 0x0A, 0x29].contains(p[2]), !connected {
                connected = p.count > 3 && p[3] == 0x00
            }
            return false
        case .acl:
            guard connected, p.count >= 9 else { return false }
            let boundary = (p[1] >> 4) & 0x03
            guard boundary == 0b00 || boundary == 0b10 else { return false }
            let channel = UInt16(p[6]) | UInt16(p[7]) << 8
            guard channel == 0x0004 else { return false }
            let opcode = p[8]
            if direction == .sent, Self.requestOpcodes.contains(opcode) { requests.append(opcode) }
            if direction == .received, opcode == 0x1B {
                notified = true
                return !wholeConnection
            }
            return false
        default:
            return false
        }
    }
}

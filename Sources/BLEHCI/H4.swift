import BLEWire

/// HCI packet indicators of the UART transport (H4). Core spec Vol 4 Part A §2.
public enum HCIPacketType: UInt8, Sendable, Hashable {
    /// 0x01: an HCI command, host to controller.
    case command = 0x01
    /// 0x02: ACL data (fragments of the layer above's PDUs), either direction.
    case acl = 0x02
    /// 0x03: synchronous (SCO) data, BR/EDR only; an LE host never sees it.
    case sco = 0x03
    /// 0x04: an HCI event, controller to host.
    case event = 0x04
    /// 0x05: isochronous data (LE Audio), either direction.
    case iso = 0x05
}

/// One HCI packet with its H4 indicator: what every transport moves, one at a time.
public struct H4Frame: Sendable, Hashable {
    /// Which kind of packet `payload` is.
    public var type: HCIPacketType
    /// The packet without the indicator byte (header + parameters/data).
    public var payload: [UInt8]

    /// A frame of `type` carrying `payload` (the packet's header and parameters or data).
    public init(type: HCIPacketType, payload: [UInt8]) {
        self.type = type
        self.payload = payload
    }

    /// Indicator byte followed by the packet, as written on a UART or a user-channel socket.
    public var bytes: [UInt8] { [type.rawValue] + payload }

    /// Parses one whole frame (indicator + packet), as a user-channel socket read delivers it.
    public init(bytes: [UInt8]) throws(WireError) {
        guard let first = bytes.first else { throw WireError.truncated(needed: 1, remaining: 0, "H4 frame") }
        guard let t = HCIPacketType(rawValue: first) else { throw WireError.invalid("H4 packet indicator 0x\(String(first, radix: 16))") }
        self.init(type: t, payload: Array(bytes.dropFirst()))
    }
}

/// Splits a byte stream (UART or TCP) into H4 frames. Sans-IO: feed it whatever the transport read.
///
/// Header lengths per Core spec Vol 4 Part E §5.4: command 3 bytes (length at offset 2, 1 byte),
/// ACL 4 bytes (length at offset 2, 2 bytes), SCO 3 bytes (1 byte), event 2 bytes (1 byte),
/// ISO 4 bytes (14-bit length at offset 2).
public struct H4StreamDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    /// Appends bytes and returns every frame now complete. An unknown indicator byte is an
    /// error: the stream has lost sync and the transport should be closed.
    public mutating func push(_ bytes: [UInt8]) throws(WireError) -> [H4Frame] {
        var frames: [H4Frame] = []
        try push(bytes, into: &frames)
        return frames
    }

    /// Like `push(_:)`, but frames completed before a bad indicator byte are already in
    /// `frames` when the error is thrown, so a transport can deliver them before closing.
    public mutating func push(_ bytes: [UInt8], into frames: inout [H4Frame]) throws(WireError) {
        buffer.append(contentsOf: bytes)
        while let frame = try nextFrame() { frames.append(frame) }
        if start > 4096 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
    }

    private mutating func nextFrame() throws(WireError) -> H4Frame? {
        let available = buffer.count - start
        guard available >= 1 else { return nil }
        guard let type = HCIPacketType(rawValue: buffer[start]) else {
            throw WireError.invalid("H4 packet indicator 0x\(String(buffer[start], radix: 16))")
        }
        let headerLength: Int
        switch type {
        case .command, .sco: headerLength = 3
        case .event: headerLength = 2
        case .acl, .iso: headerLength = 4
        }
        guard available >= 1 + headerLength else { return nil }
        let h = start + 1
        let bodyLength: Int
        switch type {
        case .command, .sco: bodyLength = Int(buffer[h + 2])
        case .event: bodyLength = Int(buffer[h + 1])
        case .acl: bodyLength = Int(buffer[h + 2]) | Int(buffer[h + 3]) << 8
        case .iso: bodyLength = (Int(buffer[h + 2]) | Int(buffer[h + 3]) << 8) & 0x3FFF
        }
        let total = 1 + headerLength + bodyLength
        guard available >= total else { return nil }
        let payload = Array(buffer[(start + 1)..<(start + total)])
        start += total
        return H4Frame(type: type, payload: payload)
    }
}

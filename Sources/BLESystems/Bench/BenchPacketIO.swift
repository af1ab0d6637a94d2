import BLE
import Synchronization

/// Where a bench scenario's packets go and come from: a GATT characteristic pair (client or
/// server side) or an L2CAP channel. bumble-bench's "mode" is the choice of one of these.
public protocol BenchPacketIO: Sendable {
    /// Octets each packet costs beyond itself on the link: 2 for the stream framing of L2CAP, 0 for GATT.
    var overhead: Int { get }
    /// The longest packet `send` takes now (the ATT_MTU − 3 of a notification or write, 65535 on a stream).
    func maximumPacketLength() async -> Int
    /// Waits until packets can be sent (a GATT server: until the client subscribes), or throws
    /// when the link ends first.
    func waitUntilReady() async throws
    /// Sends one packet, waiting while the link is full (backpressure).
    func send(_ packet: [UInt8]) async throws
    /// The next packet the peer sent, waiting for one; nil once the link or channel has ended.
    /// One task reads at a time; what came since the IO was made waits for it (nothing is lost).
    func receive() async throws -> [UInt8]?
}

/// Why a bench run could not go on.
public enum BenchError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The link (or channel) ended before the run did; `waiting` says what was still to come.
    case linkEnded(waiting: String)
    /// The peer lacks the bench service or one of its characteristics.
    case missingAttribute(String)
    /// `--packet-size` does not fit what the link takes.
    case packetTooLong(size: Int, maximum: Int, why: String)
    /// No device of that name was heard advertising.
    case peripheralNotFound(String)
    /// A combination this implementation does not run.
    case unsupported(String)

    public var description: String {
        switch self {
        case let .linkEnded(waiting): return "the link ended while waiting for \(waiting)"
        case let .missingAttribute(what): return "the peer has no \(what)"
        case let .packetTooLong(size, maximum, why): return "packet size \(size) is more than the \(maximum) bytes \(why)"
        case let .peripheralNotFound(name): return "no device named '\(name)' was heard advertising"
        case let .unsupported(what): return what
        }
    }
}

/// bumble-bench's packets on an LE credit-based channel: a stream of length-prefixed packets,
/// cut into SDUs of at most the peer's MTU. Reading takes SDUs from the channel only as packets
/// are asked for, so the channel's credits hold a slow reader's peer back.
public final class BenchL2CAPIO: BenchPacketIO {
    /// The open channel.
    public let channel: LECreditBasedChannel
    private struct Reading: Sendable {
        var deframer = BenchStreamDeframer()
        var ready: [[UInt8]] = []
    }
    private let reading = BenchLocked(Reading())

    /// The packets of `channel`, from now on.
    public init(channel: LECreditBasedChannel) {
        self.channel = channel
    }

    public var overhead: Int { BenchStreamFraming.overhead }

    public func maximumPacketLength() async -> Int { BenchStreamFraming.maximumPacketLength }

    public func waitUntilReady() async throws {}

    public func receive() async throws -> [UInt8]? {
        while true {
            if let packet = reading.withLock({ $0.ready.isEmpty ? nil : $0.ready.removeFirst() }) { return packet }
            guard let sdu = try await channel.receive() else { return nil }
            reading.withLock { $0.ready += $0.deframer.receive(sdu) }
        }
    }

    public func send(_ packet: [UInt8]) async throws {
        guard let framed = BenchStreamFraming.frame(packet) else {
            throw BenchError.packetTooLong(size: packet.count, maximum: BenchStreamFraming.maximumPacketLength, why: "a two-byte length can frame")
        }
        let size = max(1, channel.peerMTU)
        var offset = 0
        while offset < framed.count {
            let end = min(framed.count, offset + size)
            try await channel.send(Array(framed[offset..<end]))
            offset = end
        }
    }
}

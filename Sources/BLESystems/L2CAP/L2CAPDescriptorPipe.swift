#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLE
import Dispatch
import Synchronization

/// What `ble l2cap` does with a channel, like netcat: a file descriptor's bytes become SDUs, SDUs
/// become bytes on a file descriptor, or every SDU goes back (echo). The reading side is bounded:
/// at most `bufferedChunks` chunks are read ahead of the channel, so a slow peer (few credits)
/// stops the reading rather than filling memory.
public enum L2CAPDescriptorPipe {
    /// Chunks read ahead of the channel.
    public static let bufferedChunks = 4

    /// What moved on one channel.
    public struct Totals: Sendable {
        /// Bytes sent.
        public var sent = 0
        /// Bytes received.
        public var received = 0
        /// SDUs sent.
        public var sdusSent = 0
        /// SDUs received.
        public var sdusReceived = 0
        /// From the channel's opening to the last byte moved (not to its close, which may wait).
        public var elapsed: Duration = .zero

        /// Nothing moved yet.
        public init() {}

        /// `12345 bytes in 10 SDUs` each way, the time, and the rate of the larger direction.
        public var description: String {
            var text = "sent \(sent) bytes in \(sdusSent) SDUs, received \(received) bytes in \(sdusReceived) SDUs, "
                + NumberText.spacedSeconds(elapsed)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let bytes = max(sent, received)
            if seconds > 0, bytes > 0 {
                text += ", \(NumberText.fixed(Double(bytes) / seconds / 1000, 1)) kB/s"
            }
            return text
        }
    }

    /// Reads `fd` on a thread of its own in chunks of at most `size` bytes until end of file or
    /// an error; the stream ends then. At most `bufferedChunks` chunks wait unread.
    public static func chunks(fd: Int32, size: Int) -> RoomedStream {
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .unbounded)
        let room = DispatchSemaphore(value: bufferedChunks)
        let stopped = Atomic<Bool>(false)
        continuation.onTermination = { _ in
            stopped.store(true, ordering: .relaxed)
            room.signal()
        }
        let size = max(1, size)
        DispatchQueue.global().async {
            var buffer = [UInt8](repeating: 0, count: size)
            while !stopped.load(ordering: .relaxed) {
                room.wait()
                if stopped.load(ordering: .relaxed) { break }
                // Fill the chunk as far as the input goes, so SDUs are full when input is fast.
                var filled = 0
                while filled < size {
                    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, size - filled) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }
                    filled += n
                    if filled > 0 && !isRegularFile(fd) { break }
                }
                if filled == 0 { break }
                continuation.yield(Array(buffer[0..<filled]))
                if filled < size && isRegularFile(fd) { break }
            }
            continuation.finish()
        }
        return stream.withRoom(room)
    }

    private static func isRegularFile(_ fd: Int32) -> Bool {
        var s = stat()
        return fstat(fd, &s) == 0 && (s.st_mode & S_IFMT) == S_IFREG
    }

    /// Sends every chunk of `input` as one SDU; returns the bytes and SDUs sent. `sent` is told
    /// the size of each SDU once it is out.
    public static func send(_ input: RoomedStream, on channel: LECreditBasedChannel,
                            sent: @Sendable (Int) -> Void = { _ in }) async throws -> (bytes: Int, sdus: Int) {
        var bytes = 0, sdus = 0
        for await chunk in input {
            try await channel.send(chunk)
            bytes += chunk.count
            sdus += 1
            sent(chunk.count)
        }
        return (bytes, sdus)
    }

    /// Writes every SDU to `fd` until the channel ends; returns the bytes and SDUs received and
    /// when the last SDU arrived. `received` is told the running total after each SDU.
    public static func receive(_ channel: LECreditBasedChannel, to fd: Int32,
                               received: @Sendable (Int) -> Void = { _ in }) async throws -> (bytes: Int, sdus: Int, last: ContinuousClock.Instant?) {
        var bytes = 0, sdus = 0
        var last: ContinuousClock.Instant?
        for try await sdu in channel {
            last = ContinuousClock.now
            writeAll(fd, sdu)
            bytes += sdu.count
            sdus += 1
            received(bytes)
        }
        return (bytes, sdus, last)
    }

    /// Sends every SDU back until the channel ends; the time is from the opening to the last
    /// echo sent. An SDU longer than the peer's MTU (ours may be larger) goes back in pieces of
    /// at most that MTU: an SDU over it must not be sent (Core spec Vol 3 Part A §3.4.3).
    public static func echo(_ channel: LECreditBasedChannel) async throws -> Totals {
        let start = ContinuousClock.now
        var totals = Totals()
        let piece = max(1, channel.peerMTU)
        for try await sdu in channel {
            totals.received += sdu.count
            totals.sdusReceived += 1
            var offset = 0
            repeat {
                let end = min(sdu.count, offset + piece)
                try await channel.send(Array(sdu[offset..<end]))
                totals.sdusSent += 1
                offset = end
            } while offset < sdu.count
            totals.sent += sdu.count
            totals.elapsed = ContinuousClock.now - start
        }
        return totals
    }

    /// Whether a channel that ended with `error` ended because the peer closed the link on
    /// purpose (HCI reason 0x13, Remote User Terminated Connection, Core spec Vol 1 Part F
    /// §2.19), as a peer does once it has what it wanted. For a pipe whose input has all gone
    /// out that is the end of the conversation, not a failure; a lost link (e.g. 0x08) or a
    /// broken rule is.
    public static func isDeliberateDisconnect(_ error: any Error) -> Bool {
        if case .disconnected(reason: .remoteUserTerminatedConnection)? = error as? BLEError { return true }
        return false
    }

    /// Writes all of `bytes` to `fd` (a closed pipe drops the rest).
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }
}

/// A stream of chunks whose reader makes room for the next read as it takes each one.
public struct RoomedStream: AsyncSequence, Sendable {
    let stream: AsyncStream<[UInt8]>
    let room: DispatchSemaphore

    /// Takes chunks and makes room for the next read.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<[UInt8]>.Iterator
        let room: DispatchSemaphore
        /// The next chunk, nil at the end of the input.
        public mutating func next() async -> [UInt8]? {
            let chunk = await base.next()
            if chunk != nil { room.signal() }
            return chunk
        }
    }

    /// One iteration per stream.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator(), room: room) }
}

extension AsyncStream where Element == [UInt8] {
    func withRoom(_ room: DispatchSemaphore) -> RoomedStream { RoomedStream(stream: self, room: room) }
}

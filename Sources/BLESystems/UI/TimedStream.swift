import BLERuntime

/// A `UIByteStream` whose every write waits at most `limit` on `clock`: a client that stops
/// reading fills its socket buffer and the write would wait for ever, holding the connection's
/// slot (and, for an event stream, its producer's buffer). Past the limit the connection is
/// closed, which ends the write with an error (the transport's parked write wakes on close).
struct TimedStream<Base: UIByteStream>: UIByteStream {
    let base: Base
    let clock: any BLEClock
    let limit: Duration

    init(_ base: Base, clock: any BLEClock, limit: Duration) {
        self.base = base
        self.clock = clock
        self.limit = limit
    }

    var incoming: AsyncThrowingStream<[UInt8], any Error> { base.incoming }
    var peerAddress: String? { base.peerAddress }
    func close() async { await base.close() }

    /// Writes `bytes`, or closes the connection and throws `UIWriteTimeout` when the client has
    /// not taken them within `limit`.
    func send(_ bytes: [UInt8]) async throws {
        let base = self.base, clock = self.clock, limit = self.limit
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await base.send(bytes)
                return true
            }
            group.addTask {
                // Ends at the limit, or at once when the caller is cancelled (an event stream's
                // keep-alive when its events end): a cancelled caller gave up on the write, which
                // would otherwise wait on with no limit, since only closing wakes it. Cancelled by
                // the group when the write ends first, its answer then unread.
                try? await clock.sleep(for: limit)
                return false
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { return }
            if !first {
                // The write is still parked: closing wakes it (and it throws).
                await base.close()
                if Task.isCancelled { throw CancellationError() }
                throw UIWriteTimeout()
            }
        }
    }
}

/// A client did not read what it was sent within `UIServer.writeTimeout`.
struct UIWriteTimeout: Error {}

import BLEHost
import BLEWire

/// What `Peripheral.follow(_:find:)` yields.
public enum FollowedUpdate: Sendable, Hashable {
    /// A value the server notified or indicated (Core Vol 3 Part G §4.10, §4.11).
    case value([UInt8])
    /// A Service Changed indication (§7.1) covered the characteristic: it was found again,
    /// perhaps at other handles, and subscribed again; values now come from it.
    case resubscribed(GATTCharacteristic)
}

extension Peripheral {
    /// The values of `characteristic`, which the caller has subscribed to, followed across
    /// changes of the server's database: when a Service Changed indication (Vol 3 Part G §7.1)
    /// names a range that overlaps the characteristic, its handles may mean something else now,
    /// so `find` locates it again (through the attribute cache, which the indication already cut
    /// that range out of, §2.5.2), its Client Characteristic Configuration is written again
    /// (§3.3.3.3), `.resubscribed` says where it now is, and values continue from there; values
    /// still arriving at the old handle are no longer taken.
    ///
    /// Service Changed indications reach only a client that subscribed to them
    /// (`completeCaching()`, or a discovery that did). The sequence ends when the link ends,
    /// and throws what `find` or the new subscription throws (for instance when the server no
    /// longer has the characteristic). Ending the iteration stops following.
    public func follow(_ characteristic: GATTCharacteristic,
                       find: @escaping @Sendable (Peripheral) async throws -> GATTCharacteristic) async -> AsyncThrowingStream<FollowedUpdate, any Error> {
        let changes = await servicesChanged()
        let first = await notifications(for: characteristic)
        let (stream, continuation) = AsyncThrowingStream<FollowedUpdate, any Error>.makeStream()
        let executor = host.clock.taskExecutor
        // Forwards one subscription's values; its end (unless cancelled: a newer one took
        // over) is the link's.
        let forward = { @Sendable (values: NotificationStream) -> Task<Void, Never> in
            Task(executorPreference: executor) {
                for await value in values { continuation.yield(.value(value)) }
                if !Task.isCancelled { continuation.finish() }
            }
        }
        let task = Task(executorPreference: executor) { [self] in
            var current = characteristic
            var forwarder = forward(first)
            // One iteration of the Service Changed stream for the whole follow: cancelling an
            // iteration would end the stream.
            for await range in changes {
                let span = current.declarationHandle...max(current.declarationHandle, current.endHandle)
                guard range.overlaps(span) else { continue }
                do {
                    let found = try await find(self)
                    if found == current {
                        // Where it was: the values keep coming through the same stream; the
                        // CCCD is written again in case the change reset it.
                        try await enableUpdates(for: current, force: true)
                        continuation.yield(.resubscribed(current))
                        continue
                    }
                    forwarder.cancel()
                    current = found
                    // Registered before the CCCD write, so no value is missed; forwarded after
                    // `.resubscribed` is told.
                    let values = await notifications(for: current)
                    try await enableUpdates(for: current, force: true)
                    continuation.yield(.resubscribed(current))
                    forwarder = forward(values)
                } catch {
                    forwarder.cancel()
                    continuation.finish(throwing: error)
                    return
                }
            }
            // The link ended: what it delivered before is still forwarded. Or the consumer left.
            if Task.isCancelled { forwarder.cancel() } else { await forwarder.value }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

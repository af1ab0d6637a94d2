import BLEHost
import BLERuntime
import Synchronization

/// The devices one scan reports, in order (`Central.scan`): an `AsyncSequence` that ends at the
/// scan's timeout, when the scan is stopped, or with the error that ended it.
///
/// The host hands devices over in batches: each report's devices go into a buffer under one
/// lock, and the consumer, when it runs, takes everything buffered at once and then iterates
/// its own array, so a busy scan costs the consumer no suspension and no stream machinery per
/// device. The buffering policy is that of `AsyncThrowingStream`'s `.bufferingNewest(4096)`:
/// a consumer that falls behind by more than `ScanResults.bufferLimit` devices loses the oldest.
/// Ending the iteration (leaving the loop, or dropping the sequence) or cancelling the
/// consuming task ends the scan.
public struct ScanResults: AsyncSequence, Sendable {
    /// Each element is a device as the scan merged it.
    public typealias Element = ScannedDevice
    /// The error that ended the scan (a transport failure, the controller refusing it).
    public typealias Failure = any Error

    /// The most devices held for a consumer that has not taken them yet.
    public static let bufferLimit = 4096

    let buffer: ScanBuffer
    /// Ends the scan when the last copy of the sequence and its iterators are gone.
    private let lifetime: Lifetime

    init(buffer: ScanBuffer) {
        self.buffer = buffer
        self.lifetime = Lifetime(buffer)
    }

    /// An iterator over the devices, for `for try await`.
    public func makeAsyncIterator() -> Iterator { Iterator(buffer: buffer, lifetime: lifetime) }

    /// Takes the devices out of the buffer a batch at a time.
    public struct Iterator: AsyncIteratorProtocol {
        let buffer: ScanBuffer
        let lifetime: Lifetime
        private var batch: [ScannedDevice] = []
        private var index = 0

        init(buffer: ScanBuffer, lifetime: Lifetime) {
            self.buffer = buffer
            self.lifetime = lifetime
        }

        /// The next device, nil when the scan has ended (or the task was cancelled); throws
        /// the error that ended the scan, after the devices before it.
        public mutating func next() async throws -> ScannedDevice? {
            if index < batch.count {
                defer { index += 1 }
                return batch[index]
            }
            index = 0
            guard try await buffer.next(into: &batch), !batch.isEmpty else { return nil }
            index = 1
            return batch[0]
        }
    }

    /// Cancels the buffer when deinitialised: the consumer has gone away.
    final class Lifetime: Sendable {
        let buffer: ScanBuffer
        init(_ buffer: ScanBuffer) { self.buffer = buffer }
        deinit { buffer.abandon() }
    }
}

/// The buffer between the host and one scan's consumer: a `SingleConsumerQueue` of devices
/// that keeps the newest `ScanResults.bufferLimit` (as `.bufferingNewest` would), read a batch
/// at a time; the consumer going away, or its task being cancelled, abandons it and so ends the
/// scan.
typealias ScanBuffer = SingleConsumerQueue<ScannedDevice>

extension SingleConsumerQueue where Element == ScannedDevice {
    /// A scan's buffer, holding at most `limit` devices for the consumer.
    convenience init(limit: Int = ScanResults.bufferLimit) {
        self.init(limit: limit, overflow: .dropOldest, cancellation: .abandonsQueue)
    }
}

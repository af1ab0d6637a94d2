import BLEHost
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
            guard try await buffer.take(into: &batch), !batch.isEmpty else { return nil }
            index = 1
            return batch[0]
        }
    }

    /// Cancels the buffer when deinitialised: the consumer has gone away.
    final class Lifetime: Sendable {
        let buffer: ScanBuffer
        init(_ buffer: ScanBuffer) { self.buffer = buffer }
        deinit { buffer.cancel() }
    }
}

/// The buffer between the host and one scan's consumer. The host side (`yield`, `finish`) never
/// waits; the consumer side (`take`) waits only when nothing is buffered.
final class ScanBuffer: Sendable {
    private struct State {
        /// Buffered devices from `head` on (the ones before it were dropped or taken).
        var devices: [ScannedDevice] = []
        var head = 0
        var waiter: UnsafeContinuation<Void, Never>?
        var finished = false
        var failure: (any Error)?
        var onTermination: (@Sendable () -> Void)?
        var buffered: Int { devices.count - head }

        /// Appends `more` after the buffered devices, dropping the oldest beyond `limit`.
        mutating func append(contentsOf more: some Collection<ScannedDevice>, limit: Int) {
            devices.append(contentsOf: more)
            if buffered > limit {
                head += buffered - limit
                if head >= limit {
                    devices.removeFirst(head)
                    head = 0
                }
            }
        }
    }

    private let limit: Int
    private let state = Mutex(State())

    init(limit: Int = ScanResults.bufferLimit) {
        self.limit = max(1, limit)
    }

    /// Called once, when the buffer is finished or cancelled (at once if it has been already).
    func onTermination(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            if s.finished { return true }
            s.onTermination = body
            return false
        }
        if now { body() }
    }

    /// Buffers `device` for the consumer (dropping the oldest beyond the limit), unless finished.
    func yield(_ device: ScannedDevice) {
        let waiter = state.withLock { s -> UnsafeContinuation<Void, Never>? in
            guard !s.finished else { return nil }
            if s.buffered == limit {
                s.head += 1
                if s.head >= limit {
                    s.devices.removeFirst(s.head)
                    s.head = 0
                }
            }
            s.devices.append(device)
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// Buffers `devices` in order under one lock, as `yield` would one by one: beyond the limit
    /// the oldest are dropped.
    func yield(contentsOf devices: ArraySlice<ScannedDevice>) {
        guard !devices.isEmpty else { return }
        let waiter = state.withLock { s -> UnsafeContinuation<Void, Never>? in
            guard !s.finished else { return nil }
            s.append(contentsOf: devices, limit: limit)
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// `yield(contentsOf:)` for devices the caller gives up: when nothing is buffered the array
    /// itself becomes the buffer (and `devices` gets the buffer's old, empty storage), so the
    /// devices are neither copied nor released here.
    func yield(moving devices: inout [ScannedDevice]) {
        guard !devices.isEmpty else { return }
        let waiter = state.withLock { s -> UnsafeContinuation<Void, Never>? in
            guard !s.finished else { return nil }
            if s.buffered == 0 && devices.count <= limit {
                s.devices.removeAll(keepingCapacity: true)
                s.head = 0
                swap(&s.devices, &devices)
            } else {
                s.append(contentsOf: devices, limit: limit)
            }
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// Ends the sequence: the consumer gets what is buffered, then nil, or `error`.
    func finish(throwing error: (any Error)? = nil) {
        end(failure: error)
    }

    /// The consumer went away: finished at once, buffered devices dropped.
    func cancel() {
        end(failure: nil) { s in
            s.devices = []
            s.head = 0
            s.failure = nil
        }
    }

    /// Under the lock, `prepare`, then, unless already finished, finishes with `failure`; then
    /// wakes the consumer and calls the termination handler (each once, outside the lock).
    private func end(failure: (any Error)?, _ prepare: (inout State) -> Void = { _ in }) {
        let (waiter, termination) = state.withLock { s -> (UnsafeContinuation<Void, Never>?, (@Sendable () -> Void)?) in
            prepare(&s)
            guard !s.finished else { return (nil, nil) }
            s.finished = true
            s.failure = failure
            defer {
                s.waiter = nil
                s.onTermination = nil
            }
            return (s.waiter, s.onTermination)
        }
        waiter?.resume()
        termination?()
    }

    /// Moves every buffered device into `batch` (replacing its contents), waiting until there
    /// is one; false once finished with nothing left, throwing the error it finished with.
    func take(into batch: inout [ScannedDevice]) async throws -> Bool {
        batch.removeAll(keepingCapacity: true)
        while true {
            switch takeBuffered(into: &batch) {
            case .devices:
                return true
            case let .ended(failure):
                if let failure { throw failure }
                return false
            case .nothing:
                await withTaskCancellationHandler {
                    await withUnsafeContinuation { (c: UnsafeContinuation<Void, Never>) in
                        let ready = state.withLock { s -> Bool in
                            if s.finished || s.buffered > 0 { return true }
                            s.waiter = c
                            return false
                        }
                        if ready { c.resume() }
                    }
                } onCancel: {
                    cancel()
                }
            }
        }
    }

    private enum Taken {
        case devices
        case ended((any Error)?)
        case nothing
    }

    private func takeBuffered(into batch: inout [ScannedDevice]) -> Taken {
        state.withLock { s -> Taken in
            if s.buffered > 0 {
                if s.head == 0 {
                    swap(&s.devices, &batch)
                } else {
                    batch.append(contentsOf: s.devices[s.head...])
                    s.devices.removeAll(keepingCapacity: true)
                    s.head = 0
                }
                return .devices
            }
            guard s.finished else { return .nothing }
            defer { s.failure = nil }
            return .ended(s.failure)
        }
    }
}

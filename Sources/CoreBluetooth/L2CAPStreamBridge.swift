import Synchronization
import BLE
import BLERuntime
import Foundation

/// Which of a channel's two streams.
enum L2CAPStreamSide: Sendable {
    case input, output
}

/// How one direction of a channel ended.
enum L2CAPEnd: Sendable {
    /// Closed cleanly (by either side): `.endEncountered`.
    case closed
    /// The link or the channel failed: `.errorOccurred`, with the error as `streamError`.
    case failed(any Error)
}

/// What moves bytes between an open LE credit-based channel and its two streams, and decides
/// which stream event is due. Two tasks run the channel: one receives SDUs into the inbound
/// bytes while they hold less than one SDU (so an app that stops reading stops the peer through
/// its credits, and memory stays bounded), one sends the outbound bytes as SDUs of up to the
/// peer's MTU, waiting for the peer's credits; `write` lets at most one SDU's worth wait beside
/// the one in flight, and returns 0 while that is full. The streams' events are
/// level-triggered and re-armed by the app's own reads and writes, as CFStream does: one
/// `.hasBytesAvailable` per read that leaves bytes (or per arrival after a read that drained
/// them), one `.hasSpaceAvailable` per write that leaves room (or per room made after a write
/// that filled it).
final class L2CAPStreamBridge: @unchecked Sendable {
    /// What a stream has seen and where its events go.
    struct Side {
        var status: Stream.Status = .notOpen
        var openReported = false
        /// A read (input) or write (output) happened since the last bytes/space event.
        var armed = true
        var endReported = false
        var targets: [RunLoopTarget] = []
        /// Where an event delivery is on its way to.
        var postedTo: RunLoopTarget?
    }

    struct State {
        var input = Side()
        var output = Side()
        var inbound = FIFOBuffer<UInt8>()
        var outbound = FIFOBuffer<UInt8>()
        /// No more bytes will arrive (once `inbound` is read, the input stream has ended).
        var inboundEnd: L2CAPEnd?
        /// Writes fail from now on.
        var outboundEnd: L2CAPEnd?
        var roomWaiter: CheckedContinuation<Bool, Never>?
        var dataWaiter: CheckedContinuation<[UInt8]?, Never>?
        var sending = false
        var channelClosed = false
        var shutDown = false
        var pumps: [Task<Void, Never>] = []

        subscript(side: L2CAPStreamSide) -> Side {
            get { side == .input ? input : output }
            set { if side == .input { input = newValue } else { output = newValue } }
        }
    }

    let channel: LECreditBasedChannel
    /// The receiving task reads the next SDU only while fewer bytes than this wait unread.
    let inboundLimit: Int
    /// At most this many written bytes wait beside the SDU being sent; one SDU's worth.
    let outboundLimit: Int
    let state = Mutex(State())
    let inputStream = WeakReference<L2CAPInputStream>(nil)
    let outputStream = WeakReference<L2CAPOutputStream>(nil)

    init(channel: LECreditBasedChannel) {
        self.channel = channel
        self.inboundLimit = max(1, channel.mtu)
        self.outboundLimit = max(1, channel.peerMTU)
    }

    /// Starts the two tasks.
    func start() {
        let receiving = Task { await self.receiveLoop() }
        let sending = Task { await self.sendLoop() }
        state.withLock { $0.pumps = [receiving, sending] }
    }

    /// Everything that used the channel is gone (`L2CAPChannelLifetime`): both streams close,
    /// as if the app had closed them. What `write` took still goes out (as a socket's closed
    /// descriptor leaves its sent bytes to the kernel), then the channel closes; the receiving
    /// task stops at once.
    func shutDown() {
        let (pumps, room, data) = state.withLock { s in
            s.shutDown = true
            for side in [L2CAPStreamSide.input, .output] {
                s[side].status = .closed
                s[side].targets = []
            }
            defer {
                s.roomWaiter = nil
                s.dataWaiter = nil
            }
            return (s.pumps, s.roomWaiter, s.dataWaiter)
        }
        room?.resume(returning: false)
        // A waiting sending task has nothing left to send: it ends, and closes the channel.
        data?.resume(returning: nil)
        if let receiving = pumps.first { receiving.cancel() }
        closeIfDone()
    }

    // MARK: The channel's side

    private func receiveLoop() async {
        while await waitForRoom() {
            do {
                guard let sdu = try await channel.receive() else {
                    ended(.closed)
                    return
                }
                state.withLock { $0.inbound.append(contentsOf: sdu) }
                kick(.input)
            } catch {
                // Cancelled by `shutDown`: nobody reads any more, and the output still drains.
                if !state.withLock({ $0.shutDown }) { ended(.failed(error)) }
                return
            }
        }
    }

    /// Waits until the app has read enough for another SDU; false once it closed its stream.
    private func waitForRoom() async -> Bool {
        await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let now = state.withLock { s -> Bool? in
                if s.shutDown || s.input.status == .closed || s.inboundEnd != nil { return false }
                if s.inbound.count < inboundLimit { return true }
                s.roomWaiter = c
                return nil
            }
            if let now { c.resume(returning: now) }
        }
    }

    private func sendLoop() async {
        while let bytes = await nextChunk() {
            kick(.output)
            do {
                try await channel.send(bytes)
            } catch {
                // Only the output ends here: SDUs that arrived before the peer closed may still
                // wait in the host, and the input gives them before it ends (the receiving
                // task sees the end itself).
                if case BLEError.l2cap(.closed) = error {
                    outputEnded(.closed)
                } else {
                    outputEnded(.failed(error))
                }
                return
            }
            state.withLock { $0.sending = false }
            closeIfDone()
        }
        closeIfDone()
    }

    /// The next bytes to send (up to one SDU), waiting for the app to write some; nil once the
    /// output is closed and sent, or the channel has ended.
    private func nextChunk() async -> [UInt8]? {
        await withCheckedContinuation { (c: CheckedContinuation<[UInt8]?, Never>) in
            let now = state.withLock { s -> [UInt8]?? in
                if s.outboundEnd != nil { return .some(nil) }
                if !s.outbound.isEmpty {
                    s.sending = true
                    return .some(s.outbound.removeFirst(upTo: outboundLimit))
                }
                if s.output.status == .closed { return .some(nil) }
                s.dataWaiter = c
                return .none
            }
            if let now { c.resume(returning: now) }
        }
    }

    /// The channel ended (the peer closed it, or the link went): reads drain what arrived,
    /// writes fail.
    private func ended(_ end: L2CAPEnd) {
        let (room, data) = state.withLock { s in
            if s.inboundEnd == nil { s.inboundEnd = end }
            if s.outboundEnd == nil { s.outboundEnd = end }
            s.sending = false
            s.channelClosed = true
            defer {
                s.roomWaiter = nil
                s.dataWaiter = nil
            }
            return (s.roomWaiter, s.dataWaiter)
        }
        room?.resume(returning: false)
        data?.resume(returning: nil)
        kick(.input)
        kick(.output)
    }

    /// A send failed: writes fail from now on; reads go on until the receiving task sees the
    /// end.
    private func outputEnded(_ end: L2CAPEnd) {
        state.withLock { s in
            if s.outboundEnd == nil { s.outboundEnd = end }
            s.sending = false
        }
        kick(.output)
    }

    /// Both streams are closed and everything written has gone: close the channel.
    private func closeIfDone() {
        let close = state.withLock { s -> Bool in
            guard s.input.status == .closed, s.output.status == .closed, s.outbound.isEmpty, !s.sending, !s.channelClosed else { return false }
            s.channelClosed = true
            return true
        }
        if close {
            let channel = self.channel
            Task { await channel.close() }
        }
    }

    // MARK: The streams' side

    /// `InputStream.read`: up to `length` bytes; 0 when none wait (it never blocks), and at the
    /// end; -1 when the stream is not open or the channel failed.
    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        let (n, room) = state.withLock { s -> (Int, CheckedContinuation<Bool, Never>?) in
            guard s.input.status == .open, length >= 0 else { return (-1, nil) }
            s.input.armed = true
            let n = s.inbound.removeFirst(into: buffer, capacity: length)
            if n == 0, case .failed? = s.inboundEnd { return (-1, nil) }
            guard n > 0, s.inbound.count < inboundLimit, let room = s.roomWaiter else { return (n, nil) }
            s.roomWaiter = nil
            return (n, room)
        }
        room?.resume(returning: true)
        kick(.input)
        return n
    }

    /// `OutputStream.write`: takes as many of the bytes as there is room for (0 when the peer's
    /// credits hold back what was written before); -1 when the stream is not open or the
    /// channel ended.
    func write(_ buffer: UnsafePointer<UInt8>, maxLength length: Int) -> Int {
        let (n, waiter, chunk) = state.withLock { s -> (Int, CheckedContinuation<[UInt8]?, Never>?, [UInt8]) in
            guard s.output.status == .open, s.outboundEnd == nil, length >= 0 else { return (-1, nil, []) }
            s.output.armed = true
            let n = min(length, outboundLimit - s.outbound.count)
            guard n > 0 else { return (0, nil, []) }
            s.outbound.append(contentsOf: UnsafeBufferPointer(start: buffer, count: n))
            guard let waiter = s.dataWaiter else { return (n, nil, []) }
            s.dataWaiter = nil
            s.sending = true
            return (n, waiter, s.outbound.removeFirst(upTo: outboundLimit))
        }
        waiter?.resume(returning: chunk)
        kick(.output)
        return n
    }

    /// Whether unread bytes wait.
    var hasBytesAvailable: Bool {
        state.withLock { $0.input.status == .open && !$0.inbound.isEmpty }
    }

    /// Whether a write would take at least one byte.
    var hasSpaceAvailable: Bool {
        state.withLock { $0.output.status == .open && $0.outboundEnd == nil && $0.outbound.count < outboundLimit }
    }

    /// The stream's status: `.atEnd` (or `.error`) once its direction has ended and, for the
    /// input, everything that arrived has been read.
    func status(_ side: L2CAPStreamSide) -> Stream.Status {
        state.withLock { s in
            guard s[side].status == .open else { return s[side].status }
            let end = side == .input ? (s.inbound.isEmpty ? s.inboundEnd : nil) : s.outboundEnd
            switch end {
            case nil: return .open
            case .closed?: return .atEnd
            case .failed?: return .error
            }
        }
    }

    /// The error the stream ended with, as CoreBluetooth reports it.
    func error(_ side: L2CAPStreamSide) -> (any Error)? {
        state.withLock { s in
            let end = side == .input ? s.inboundEnd : s.outboundEnd
            if case let .failed(error)? = end { return CBErrorMapping.map(error) }
            return nil
        }
    }

    func open(_ side: L2CAPStreamSide) {
        state.withLock { s in
            if s[side].status == .notOpen { s[side].status = .open }
        }
        kick(side)
    }

    func close(_ side: L2CAPStreamSide) {
        let (room, data) = state.withLock { s in
            s[side].status = .closed
            s[side].targets = []
            var room: CheckedContinuation<Bool, Never>?
            var data: CheckedContinuation<[UInt8]?, Never>?
            if side == .input {
                room = s.roomWaiter
                s.roomWaiter = nil
            } else {
                data = s.dataWaiter
                s.dataWaiter = nil
            }
            return (room, data)
        }
        room?.resume(returning: false)
        data?.resume(returning: nil)
        closeIfDone()
    }

    func schedule(_ side: L2CAPStreamSide, _ target: RunLoopTarget) {
        state.withLock { s in
            guard s[side].status != .closed, !s[side].targets.contains(where: { $0.matches(target.runLoop, target.mode) }) else { return }
            s[side].targets.append(target)
        }
        kick(side)
    }

    /// No more events on `runLoop` in `mode`: a delivery on its way there is dropped when it
    /// comes (it may never, if that loop does not run), and the next goes where the stream is
    /// scheduled now.
    func remove(_ side: L2CAPStreamSide, from runLoop: RunLoop, mode: RunLoop.Mode) {
        state.withLock { s in
            s[side].targets.removeAll { $0.matches(runLoop, mode) }
            if let posted = s[side].postedTo, posted.matches(runLoop, mode) { s[side].postedTo = nil }
        }
        kick(side)
    }
}

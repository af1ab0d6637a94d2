import BLEHCI
import BLERuntime
import BLEWire

/// A controller on a `VirtualRadio`: its identifier for the fault-injection API, its public
/// address, and the host end of its HCI transport.
public struct VirtualDevice: Sendable {
    public let id: VirtualMedium.ControllerID
    public let address: BDAddress
    public let transport: any HCITransport
}

/// The driver of a `VirtualMedium`: hands out one `HCITransport` per controller, feeds the
/// frames hosts send into the medium, delivers what comes back in order, and wakes at the
/// medium's deadlines. All mutable state lives in this actor; the transports only move frames.
/// Its API also injects faults: moving a device out of range, powering it off,
/// resetting it, dropping a link, delaying or stalling its HCI path, losing or delaying its scan
/// responses.
///
/// A controller's frames go to its host synchronously, from inside the actor turn that produced
/// them (the in-memory transport's send never waits), so a host sees them in exactly the order
/// the medium produced them; frames from the host are read by one loop per device that runs on
/// this actor, so a frame costs one task switch each way and no relay task.
public actor VirtualRadio {
    private var medium = VirtualMedium()
    private let clock: any BLEClock
    /// The controller end of each device's transport: what its host receives is sent here.
    /// Indexed by `ControllerID.rawValue` (the medium numbers controllers from 0): a frame to a
    /// host looks its outlet up without hashing; nil once removed.
    private var outlets: [InMemoryTransport?] = []
    private var paths: [VirtualMedium.ControllerID: HCIPath] = [:]
    /// Every path is direct (no delay, no stall, nothing held): frames skip the per-path
    /// checks. Recomputed whenever a path changes (`refreshDirect`).
    private var allDirect = true
    /// Each device's reader: the loop taking its host's frames into the medium.
    private var tasks: [VirtualMedium.ControllerID: Task<Void, Never>] = [:]
    private var timer: Task<Void, Never>?
    private var timerDeadline: Duration?
    private var nextAutomaticAddress: UInt64 = 0xC0_00_00_00_00_01
    private var closed = false
    /// The last batch's deliveries array, emptied with its capacity kept: the next batch builds
    /// its deliveries in it, so a steady stream of batches allocates no array.
    private var spareDeliveries: [VirtualMedium.Delivery] = []

    /// The HCI path between one controller and its host: a delay on every frame both ways, or a
    /// stall that holds frames until resumed. Frames keep their order.
    private struct HCIPath {
        var delay: Duration = .zero
        var stalled = false
        var toController: [(due: Duration, frame: H4Frame)] = []
        var toHost: [(due: Duration, frame: H4Frame)] = []
        var isDirect: Bool { delay == .zero && !stalled && toController.isEmpty && toHost.isEmpty }
    }

    /// - Parameters:
    ///   - clock: real time by default; a `VirtualTime` for virtual time.
    ///   - airTimeModel: whether ACL data waits for connection events (see `VirtualMedium`).
    public init(clock: any BLEClock = SystemClock(), airTimeModel: Bool = true) {
        self.clock = clock
        medium.airTimeModel = airTimeModel
    }

    /// Replaces the propagation model (path loss, sensitivity). Links it takes out of range are
    /// lost at their supervision timeout from now, as after `move`.
    public func setPropagation(_ propagation: VirtualMedium.Propagation) {
        medium.latest = max(medium.latest, clock.now())
        medium.propagation = propagation
        schedule()
    }

    /// A new controller with public address `address` at `position`.
    /// (nil `configuration`: the default one, made here. A default of
    /// `VirtualControllerConfiguration()` is compiled into every calling module; after the
    /// configuration grew, an incremental build ran such a copy made for the old layout and
    /// handed the controller a corrupt configuration.)
    public func addDevice(address: BDAddress? = nil, configuration: VirtualControllerConfiguration? = nil,
                          at position: VirtualMedium.Position = .origin) -> VirtualDevice {
        let configuration = configuration ?? VirtualControllerConfiguration()
        let address = address ?? nextAddress()
        let (hostEnd, controllerEnd) = InMemoryTransport.pair()
        let id = medium.add(VirtualController(address: address, configuration: configuration))
        medium.move(id, to: position, now: clock.now())
        paths[id] = HCIPath()
        if closed {
            // The radio shut down: the host's stream ends at once.
            controllerEnd.closeNow()
        } else {
            while outlets.count <= id.rawValue { outlets.append(nil) }
            outlets[id.rawValue] = controllerEnd
            tasks[id] = Task(executorPreference: clock.taskExecutor) { [weak self] in
                await self?.read(controllerEnd.incomingQueue, from: id)
            }
        }
        return VirtualDevice(id: id, address: address, transport: hostEnd)
    }

    /// Takes a host's frames into the medium until its transport ends or the device is removed.
    /// Isolated to the radio, so a frame is handled where it arrives, without a hop, and every
    /// frame that arrived since the last wake-up in one turn.
    private func read(_ queue: HCIFrameQueue?, from id: VirtualMedium.ControllerID) async {
        guard let queue else { return }
        do {
            try await queue.read { frames in receive(&frames, from: id) }
        } catch {}
    }

    /// Hands one frame to a controller's host; a host that closed its end just misses it.
    private func send(_ frame: H4Frame, to id: VirtualMedium.ControllerID) {
        guard outlets.indices.contains(id.rawValue) else { return }
        try? outlets[id.rawValue]?.sendImmediately(frame)
    }

    /// A new controller with public address `address`, and the host end of its transport.
    public func makeController(address: BDAddress, configuration: VirtualControllerConfiguration? = nil) -> any HCITransport {
        addDevice(address: address, configuration: configuration).transport
    }

    /// A new controller with the next address of a built-in sequence (C0:00:00:00:00:01, ...).
    public func makeController() -> any HCITransport {
        addDevice().transport
    }

    private func nextAddress() -> BDAddress {
        defer { nextAutomaticAddress += 1 }
        return BDAddress(rawValue: nextAutomaticAddress)
    }

    /// A snapshot of one controller's state (for tests and diagnostics).
    public func controller(_ index: Int) -> VirtualController? {
        medium.controller(VirtualMedium.ControllerID(rawValue: index))
    }

    /// A snapshot of one controller's state.
    public func controller(_ id: VirtualMedium.ControllerID) -> VirtualController? { medium.controller(id) }

    // MARK: Faults and placement

    /// Moves a device; out of range, scanners stop hearing it and its links time out.
    public func move(_ id: VirtualMedium.ControllerID, to position: VirtualMedium.Position) {
        medium.move(id, to: position, now: clock.now())
        schedule()
    }

    /// Sets a device's transmit power in dBm (0 by default).
    public func setTxPower(_ id: VirtualMedium.ControllerID, _ dBm: Int8) {
        medium.setTxPower(id, dBm, now: clock.now())
        schedule()
    }

    /// What `listener` measures of `sender` now, nil when out of range.
    public func rssi(from sender: VirtualMedium.ControllerID, to listener: VirtualMedium.ControllerID) -> Int8? {
        medium.rssi(from: sender, to: listener)
    }

    /// Powers a device off (silent to its host and to the air; its peers' links time out) or on
    /// (in its reset state).
    public func setPower(_ id: VirtualMedium.ControllerID, on: Bool) {
        deliver(medium.setPower(id, on: on, now: clock.now()))
        schedule()
    }

    /// The controller resets itself: its host gets a Hardware Error event, its peers time out.
    public func reset(_ id: VirtualMedium.ControllerID) {
        deliver(medium.resetController(id, now: clock.now()))
        schedule()
    }

    /// Drops every link of a device as if contact were lost; both ends see Connection Timeout
    /// after the supervision timeout. Returns the handles dropped.
    @discardableResult
    public func dropLinks(of id: VirtualMedium.ControllerID) -> [UInt16] {
        let handles = medium.linkHandles(of: id)
        for h in handles { medium.dropLink(id, handle: h, now: clock.now()) }
        schedule()
        return handles
    }

    /// Makes the device's scan responses go wrong as `fault` says (some scan requests lost,
    /// responses reported late), for every scanner; nil puts them right.
    public func setScanResponseFault(_ id: VirtualMedium.ControllerID, _ fault: VirtualMedium.ScanResponseFault?) {
        medium.setScanResponseFault(id, fault)
    }

    /// Makes every auxiliary chain the device sends (extended advertising data, scan responses,
    /// periodic trains) lose its PDU at `index` (1: the first AUX_CHAIN_IND), for every
    /// scanner; nil puts them right (`VirtualMedium.loseAuxiliaryPDU`).
    public func loseAuxiliaryPDU(_ id: VirtualMedium.ControllerID, index: Int?) {
        medium.loseAuxiliaryPDU(of: id, index: index)
    }

    /// Delays every HCI frame between the device and its host by `delay`, both ways.
    public func setHCIDelay(_ id: VirtualMedium.ControllerID, _ delay: Duration) {
        paths[id]?.delay = max(delay, .zero)
        refreshDirect()
        schedule()
    }

    /// Holds every HCI frame between the device and its host (both ways) until `resumeHCI`.
    public func stallHCI(_ id: VirtualMedium.ControllerID) {
        paths[id]?.stalled = true
        refreshDirect()
    }

    /// Releases a stalled HCI path; held frames go on in order.
    public func resumeHCI(_ id: VirtualMedium.ControllerID) {
        paths[id]?.stalled = false
        pump(now: clock.now())
        schedule()
    }

    /// Takes a device off the medium for good; its peers' links time out. Its host's transport
    /// ends, and the radio keeps nothing of it but the inert entry in the medium.
    public func remove(_ id: VirtualMedium.ControllerID) {
        medium.remove(id, now: clock.now())
        if outlets.indices.contains(id.rawValue) {
            outlets[id.rawValue]?.closeNow()
            outlets[id.rawValue] = nil
        }
        tasks.removeValue(forKey: id)?.cancel()
        paths[id] = nil
        refreshDirect()
        schedule()
    }

    /// Stops the timer and every task; hosts see their transports' streams end.
    public func shutdown() {
        closed = true
        timer?.cancel()
        timer = nil
        // Closing a controller end ends its host's incoming stream (and the device's reader).
        for end in outlets { end?.closeNow() }
        outlets = []
        for t in tasks.values { t.cancel() }
        tasks = [:]
    }

    // MARK: Frames

    /// A batch of frames from the host of `id`, in order. What a direct path's frames produce is
    /// delivered together, with the completed-packet reports merged
    /// (`coalescingCompletedPackets`); a delayed or stalled path holds each frame as before.
    ///
    /// Each frame is taken out of `frames` as it is handled, so the medium holds the only
    /// reference to its bytes and rewrites a passed-through ACL header in place (the
    /// batch's reference made that a copy of the whole packet).
    private func receive(_ frames: inout [H4Frame], from id: VirtualMedium.ControllerID) {
        guard !closed else { return }
        let now = clock.now()
        var out = medium.advance(to: now)
        if out.isEmpty { swap(&out, &spareDeliveries) }
        // Room for what a batch usually gives: a packet each and a credit report per host.
        out.reserveCapacity(out.count + frames.count + 2)
        var credits = VirtualMedium.CompletedPacketsTally()
        // Whether anything in the batch can have scheduled work for now (see below).
        var schedulesWork = false
        let airTimeModel = medium.airTimeModel
        for i in frames.indices {
            var frame = H4Frame(type: frames[i].type, payload: [])
            swap(&frame, &frames[i])
            if VirtualMedium.mayScheduleWork(frame, airTimeModel: airTimeModel) { schedulesWork = true }
            if !allDirect, let path = paths[id], !path.isDirect {
                schedulesWork = true
                credits.write(into: &out)
                deliver(out.coalescingCompletedPackets())
                out = []
                paths[id]?.toController.append((now + path.delay, frame))
                pump(now: now)
                refreshDirect()
            } else {
                medium.receive(consume frame, from: id, now: now, into: &out, credits: &credits)
            }
        }
        credits.write(into: &out)
        // A command may have made work due now (the first advertising event follows the
        // enable at once); a batch of ACL data that crossed at once made none.
        if schedulesWork { out += medium.advance(to: now) }
        // Nothing changed the medium since `advance` unless the batch could schedule work or
        // a held path took frames into it: `deliver` pumps those when not all paths are direct,
        // and may leave them all direct, so this is decided before it runs (review finding F1).
        let reuseAdvance = !schedulesWork && allDirect
        deliver(out.coalescingCompletedPackets())
        // Delivered (the batch, which may share the array, let go): kept for the next batch.
        out.removeAll(keepingCapacity: true)
        spareDeliveries = out
        schedule(reusingAdvance: reuseAdvance)
    }

    private func deliver(_ deliveries: [VirtualMedium.Delivery]) {
        if allDirect {
            // Each delivery read where it lies: `for d in deliveries` copied every one out (its
            // packet enum through an outlined copy), a cost per fragment.
            deliveries.withUnsafeBufferPointer { batch in
                for i in batch.indices { send(batch[i].h4Frame, to: batch[i].to) }
            }
            return
        }
        let now = clock.now()
        for d in deliveries {
            if let path = paths[d.to], !path.isDirect {
                paths[d.to]?.toHost.append((now + path.delay, d.h4Frame))
            } else {
                send(d.h4Frame, to: d.to)
            }
        }
        if deliveries.contains(where: { paths[$0.to]?.isDirect == false }) { pump(now: now) }
        refreshDirect()
    }

    /// Recomputes `allDirect` after a path changed.
    private func refreshDirect() {
        allDirect = paths.values.allSatisfy(\.isDirect)
    }

    /// Moves held frames whose time has come, in order, on every path that is not stalled.
    private func pump(now: Duration) {
        for id in paths.keys.sorted() {
            guard let path = paths[id], !path.stalled else { continue }
            var toHost = path.toHost
            while let first = toHost.first, first.due <= now {
                toHost.removeFirst()
                send(first.frame, to: id)
            }
            paths[id]?.toHost = toHost
            while let first = paths[id]?.toController.first, first.due <= now, paths[id]?.stalled == false {
                paths[id]?.toController.removeFirst()
                deliver(medium.receive(first.frame, from: id, now: now))
            }
        }
        refreshDirect()
    }

    /// The earliest held frame that can move.
    private var nextHeldFrame: Duration? {
        guard !allDirect else { return nil }
        return paths.values.filter { !$0.stalled }.flatMap { ($0.toHost.first.map { [$0.due] } ?? []) + ($0.toController.first.map { [$0.due] } ?? []) }.min()
    }

    /// Keeps one timer task sleeping until the next deadline (the medium's or a held frame's).
    /// `reusingAdvance`: the medium is as its last `advance(to:)` left it, whose deadline holds.
    private func schedule(reusingAdvance: Bool = false) {
        let mediumDeadline = reusingAdvance ? medium.deadlineAfterAdvance : medium.nextDeadlineInPlace()
        let deadline = earliest(mediumDeadline, nextHeldFrame)
        guard deadline != timerDeadline || timer == nil else { return }
        timer?.cancel()
        timer = nil
        timerDeadline = deadline
        guard let deadline, !closed else { return }
        let clock = self.clock
        timer = Task(executorPreference: clock.taskExecutor) { [weak self] in
            do { try await clock.sleep(until: deadline) } catch { return }
            guard !Task.isCancelled else { return }
            await self?.fire()
        }
    }

    private func fire() {
        timer = nil
        timerDeadline = nil
        guard !closed else { return }
        let now = clock.now()
        pump(now: now)
        deliver(medium.advance(to: now))
        schedule()
    }
}

/// The earlier of two optional times (nil when neither is set).
private func earliest(_ a: Duration?, _ b: Duration?) -> Duration? {
    guard let a else { return b }
    guard let b else { return a }
    return min(a, b)
}

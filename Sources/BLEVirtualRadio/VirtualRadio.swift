import BLEHCI
import BLETransport
import BLEWire

/// The time source of a `VirtualRadio`: the radio asks it for "now" and sleeps on it until the
/// medium's next deadline. Injected so that a virtual clock can replace real time (issue 4,
/// "Time") without touching the medium, which only ever sees `Duration`s. Its shape matches the
/// host's `HostClock` (module BLE), so one manual clock can drive hosts and radio together.
public protocol VirtualRadioClock: Sendable {
    /// Time since an arbitrary fixed origin.
    func now() -> Duration
    /// Returns at `deadline` (or throws `CancellationError` when the task is cancelled).
    func sleep(until deadline: Duration) async throws
}

/// Real time, from the continuous clock.
public struct SystemRadioClock: VirtualRadioClock {
    private let origin = ContinuousClock.now

    public init() {}

    public func now() -> Duration { ContinuousClock.now - origin }

    public func sleep(until deadline: Duration) async throws {
        try await Task.sleep(until: origin + deadline, clock: .continuous)
    }
}

/// The driver of a `VirtualMedium`: hands out one `HCITransport` per controller, feeds the
/// frames hosts send into the medium, delivers what comes back in order, and wakes at the
/// medium's deadlines. All mutable state lives in this actor; the transports only move frames.
///
/// Each controller's outgoing frames go through one queue drained by one task, so a host sees
/// them in exactly the order the medium produced them, whatever the actor's reentrancy.
public actor VirtualRadio {
    private var medium = VirtualMedium()
    private let clock: any VirtualRadioClock
    private var outlets: [VirtualMedium.ControllerID: AsyncStream<H4Frame>.Continuation] = [:]
    private var tasks: [Task<Void, Never>] = []
    private var timer: Task<Void, Never>?
    private var timerDeadline: Duration?
    private var nextAutomaticAddress: UInt64 = 0xC0_00_00_00_00_01
    private var closed = false

    public init(clock: any VirtualRadioClock = SystemRadioClock()) {
        self.clock = clock
    }

    /// The RSSI every scanner reports.
    public func setRSSI(_ rssi: Int8) { medium.rssi = rssi }

    /// A new controller with public address `address`, and the host end of its transport.
    public func makeController(address: BDAddress, configuration: VirtualControllerConfiguration = VirtualControllerConfiguration()) -> any HCITransport {
        let (hostEnd, controllerEnd) = InMemoryTransport.pair()
        let id = medium.add(VirtualController(address: address, configuration: configuration))
        let (stream, continuation) = AsyncStream.makeStream(of: H4Frame.self)
        outlets[id] = continuation
        if closed { continuation.finish() }
        tasks.append(Task {
            for await frame in stream {
                do { try await controllerEnd.send(frame) } catch { break }
            }
        })
        tasks.append(Task { [weak self] in
            do {
                for try await frame in controllerEnd.incoming {
                    guard let self else { return }
                    await self.receive(frame, from: id)
                }
            } catch {}
        })
        return hostEnd
    }

    /// A new controller with the next address of a built-in sequence (C0:00:00:00:00:01, ...).
    public func makeController() -> any HCITransport {
        let address = BDAddress(rawValue: nextAutomaticAddress)
        nextAutomaticAddress += 1
        return makeController(address: address)
    }

    /// A snapshot of one controller's state (for tests and diagnostics).
    public func controller(_ index: Int) -> VirtualController? {
        medium.controller(VirtualMedium.ControllerID(rawValue: index))
    }

    /// Stops the timer and every task; hosts see their transports' streams end.
    public func shutdown() {
        closed = true
        timer?.cancel()
        timer = nil
        for c in outlets.values { c.finish() }
        for t in tasks { t.cancel() }
        tasks = []
    }

    private func receive(_ frame: H4Frame, from id: VirtualMedium.ControllerID) {
        guard !closed else { return }
        let now = clock.now()
        deliver(medium.advance(to: now))
        deliver(medium.receive(frame, from: id, now: now))
        deliver(medium.advance(to: now))
        schedule()
    }

    private func deliver(_ deliveries: [VirtualMedium.Delivery]) {
        for d in deliveries { outlets[d.to]?.yield(d.packet.h4Frame) }
    }

    /// Keeps one timer task sleeping until the medium's next deadline.
    private func schedule() {
        let deadline = medium.nextDeadline
        guard deadline != timerDeadline || timer == nil else { return }
        timer?.cancel()
        timer = nil
        timerDeadline = deadline
        guard let deadline, !closed else { return }
        let clock = self.clock
        timer = Task { [weak self] in
            do { try await clock.sleep(until: deadline) } catch { return }
            guard !Task.isCancelled else { return }
            await self?.fire()
        }
    }

    private func fire() {
        timer = nil
        timerDeadline = nil
        guard !closed else { return }
        deliver(medium.advance(to: clock.now()))
        schedule()
    }
}

import BLE
import BLEHost
import BLEHCI
@testable import BLEVirtualRadio
import BLEWire
import BLETestSupport
import Foundation
import XCTest

/// An actor that keeps its thread busy in real time.
actor BusyActor {
    let time: VirtualTime
    init(_ time: VirtualTime) { self.time = time }
    func work() -> (Duration, String?) {
        let t0 = time.now()
        let end = Date().addingTimeInterval(0.05)
        var x = 0
        while Date() < end { x &+= 1 }
        return (time.now() - t0, threadName())
    }
}

/// Virtual time's contract: default actors run in the world (the clock cannot move while they
/// work), a world past its limit fails instead of hanging, cancelling the caller cancels the world.
final class VirtualTimeRegressionTests: XCTestCase {
    /// Does a default actor's code run on the world's thread (so the clock cannot jump meanwhile)?
    func testDefaultActorRunsInTheWorld() async throws {
        let (elapsed, thread) = try await VirtualTime.run { time -> (Duration, String?) in
            let sleeper = Task(executorPreference: time) { try await time.sleep(until: .seconds(5)) }
            let a = BusyActor(time)
            let r = await a.work()
            sleeper.cancel()
            return r
        }
        XCTAssertEqual(elapsed, .zero, "the clock moved while the actor worked on \(thread ?? "?")")
    }

    /// Runs `body` on a Dispatch thread (where outside work runs) once `time`'s world is idle,
    /// waiting for that at most 20 s of real time (then it runs anyway, and the test's
    /// assertions say what went wrong).
    static func onAnotherThreadWhenIdle(_ time: VirtualTime, _ body: @escaping @Sendable () -> Void) {
        DispatchQueue.global().async {
            let idle = DispatchSemaphore(value: 0)
            time.whenIdle { idle.signal() }
            _ = idle.wait(timeout: .now() + 20)
            body()
        }
    }

    /// Work outside the world (here a Dispatch thread, as a file read is) holds time still: a
    /// 30-second sleeper does not come due while the world, idle, waits for it, and once it is
    /// over the clock jumps again. Without the hold the idle world jumped to the sleeper's deadline.
    func testOutsideWorkHoldsTimeStillUntilItEnds() async throws {
        let (during, after) = try await VirtualTime.run { time -> (Duration, Duration) in
            let sleeper = Task(executorPreference: time) { try await time.sleep(until: .seconds(30)) }
            let during = await time.whileOutsideWork { () -> Duration in
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    Self.onAnotherThreadWhenIdle(time) { c.resume() }
                }
                return time.now()
            }
            try await sleeper.value
            return (during, time.now())
        }
        XCTAssertEqual(during, .zero, "the clock jumped while the world waited for outside work")
        XCTAssertEqual(after, .seconds(30), "time moves again once the outside work is over")
    }

    /// The hold's end from another thread (a Dispatch read completing) wakes the idle world at
    /// once, which then jumps to its sleeper: it does not sit out its latch's 30 s timeout (the
    /// real-time bound below only tells that failure, 30 s, from the normal case, milliseconds).
    func testAnEndFromAnotherThreadWakesTheIdleWorld() async throws {
        let start = ContinuousClock.now
        let after = try await VirtualTime.run { time -> Duration in
            let sleeper = Task(executorPreference: time) { try await time.sleep(until: .seconds(30)) }
            time.beginOutsideWork()
            Self.onAnotherThreadWhenIdle(time) { time.endOutsideWork() }
            try await sleeper.value
            return time.now()
        }
        XCTAssertEqual(after, .seconds(30))
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(20), "the world waited for its latch's 30 s timeout")
    }

    /// A hold that does not end (outside work waiting on the world's own time, a deadlock) is
    /// reported like any other stall, instead of the world hanging silently.
    func testAHoldThatDoesNotEndIsReportedAsAStall() async throws {
        let time = VirtualTime(stallReport: .milliseconds(50))
        defer { time.finish() }
        let sleeper = Task(executorPreference: time) { () -> Duration in
            try await time.sleep(until: .seconds(1))
            return time.now()
        }
        time.beginOutsideWork()
        await waitUntil("the stall report", within: .seconds(20)) { time.stallReports == 1 }
        time.endOutsideWork()
        let woke = try await sleeper.value
        XCTAssertEqual(woke, .seconds(1), "time moves on once the hold ends")
        XCTAssertEqual(time.stallReports, 1)
    }

    /// A world whose next deadline lies past the limit fails with `limitReached`, not a hang.
    func testASleepPastTheLimitFails() async throws {
        do {
            try await VirtualTime.run(limit: .seconds(1)) { time in
                try await time.sleep(until: .seconds(2))
            }
            XCTFail("slept past the limit")
        } catch let error as VirtualTimeError {
            XCTAssertEqual(error, .limitReached(.seconds(1)))
        }
    }
}

final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSCondition()
    private var flag = false
    func set() { lock.lock(); flag = true; lock.broadcast(); lock.unlock() }
    var value: Bool { lock.lock(); defer { lock.unlock() }; return flag }

    /// Blocks the calling thread until `set()` or `seconds` pass; false on a time-out.
    func waitBlocking(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        lock.lock()
        defer { lock.unlock() }
        while !flag { if !lock.wait(until: deadline) { break } }
        return flag
    }
}

func threadName() -> String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? "?"
}

final class VirtualTimeCancellationTests: XCTestCase {
    /// Cancelling the task that awaits `VirtualTime.run` cancels the world's body, waking a
    /// sleep already parked on the clock. Not timed: a task in the world holds the world's thread
    /// (so the clock cannot jump past the parked sleep) until the test has cancelled; without
    /// the cancellation the body would run all 600 virtual seconds and never see it.
    func testCancellingTheCallerCancelsTheWorld() async throws {
        let sawCancel = ManagedAtomicFlag()
        let parked = SharedValue(false)
        let cancelled = ManagedAtomicFlag()
        let outer = Task {
            try await VirtualTime.run { time in
                // Runs once the body below has parked its first sleep and given up the thread.
                Task(executorPreference: time) {
                    parked.set(true)
                    XCTAssertTrue(cancelled.waitBlocking(seconds: 10), "the test never cancelled")
                }
                for _ in 0..<600 {
                    do { try await time.sleep(for: .seconds(1)) } catch {
                        // At virtual zero: the cancel woke the parked sleep, not a later one.
                        if time.now() == .zero { sawCancel.set() }
                        throw error
                    }
                }
            }
        }
        guard await parked.wait("the world's body to park its sleep", within: .seconds(10), until: { $0 }) else { return }
        outer.cancel()
        cancelled.set()
        // Bounded: a cancel that never reaches the parked sleep would leave the world hanging.
        let ending = Task { _ = await outer.result }
        guard await end(of: ending, "the world to end after the cancel", within: .seconds(10)) != nil else { return }
        XCTAssertTrue(sawCancel.value, "the world's body did not see the caller's cancellation in its parked sleep")
    }
}

import XCTest

/// Waits until `condition` holds, for tests that must let other tasks (a host actor, a fake
/// controller's reader) catch up before they look.
///
/// The bound is explicit because a condition that never holds is a test failure, not a hang:
/// when `bound` of real time has passed, the test fails at the caller's line saying what was
/// awaited and for how long, and the function returns false so the caller can stop early.
///
/// It only polls, sleeping a millisecond between looks to let other tasks run. It never moves a
/// test clock: protocol time (a `ManualClock`, virtual time) is stepped by the test itself, so
/// what a test checks never depends on how fast the machine is; only the safety bound is real time.
@discardableResult
public func waitUntil(_ what: String = "the condition", within bound: Duration,
                      file: StaticString = #filePath, line: UInt = #line,
                      _ condition: @Sendable () async -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + bound
    while true {
        if await condition() { return true }
        if Task.isCancelled {
            XCTFail("cancelled while waiting for \(what)", file: file, line: line)
            return false
        }
        if clock.now >= deadline {
            XCTFail("\(what) still did not hold after \(bound)", file: file, line: line)
            return false
        }
        try? await Task.sleep(for: .milliseconds(1))
    }
}

/// The bound of an event wait: runs `fire` after `bound` of real time unless cancelled first.
/// The one real-time sleep of these helpers; it never decides what a test sees, it only turns a
/// wait that would hang into a failure.
public func expiry(after bound: Duration, _ fire: @escaping @Sendable () -> Void) -> Task<Void, Never> {
    Task {
        try? await Task.sleep(for: bound)
        if !Task.isCancelled { fire() }
    }
}

/// What `body` returns, or nil if it has not returned after `bound` of real time (it is then
/// cancelled). For tests against outside processes (Bumble, rootcanal), which run in real time:
/// the test waits for the event itself, and the bound only turns a hang into a failure.
public func result<T: Sendable>(within bound: Duration, _ body: @escaping @Sendable () async -> T) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: bound)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// The value of `task` once it ends: an event, awaited with a bound. After `bound` of real time
/// the test fails at the caller's line, saying what was awaited, and the result is nil (the
/// task is left running: the caller decides whether to cancel it).
@discardableResult
public func end<T: Sendable>(of task: Task<T, Never>, _ what: String = "the task's end", within bound: Duration,
                             file: StaticString = #filePath, line: UInt = #line) async -> T? {
    // Not `result(within:)`: awaiting a task's value ignores cancellation, so a task group
    // would wait for a task that never ends.
    let (ends, end) = AsyncStream<T?>.makeStream()
    Task { end.yield(await task.value) }
    let timer = expiry(after: bound) { end.yield(nil) }
    var first = ends.makeAsyncIterator()
    let value = await first.next() ?? nil
    timer.cancel()
    end.finish()
    if value == nil { XCTFail("\(what) did not come within \(bound)", file: file, line: line) }
    return value
}

/// Waits for the first of several events, each an async call that returns true when its event
/// has come (false when it gave up): the index of the first to come. After `bound` of real time,
/// or when every one gave up, the test fails at the caller's line saying what was awaited, and
/// the result is nil. The others are cancelled (a wait that ignores cancellation runs on to its
/// own end, unread).
@discardableResult
public func firstOf(_ what: String, within bound: Duration, file: StaticString = #filePath, line: UInt = #line,
                    _ events: (@Sendable () async -> Bool)...) async -> Int? {
    let (arrivals, arrival) = AsyncStream<(index: Int, came: Bool)?>.makeStream()
    let waits = events.enumerated().map { index, event in Task { arrival.yield((index, await event())) } }
    let timer = expiry(after: bound) { arrival.yield(nil) }
    var winner: Int?
    var gaveUp = 0
    for await a in arrivals {
        guard let a else { break }
        if a.came { winner = a.index; break }
        gaveUp += 1
        if gaveUp == events.count { break }
    }
    timer.cancel()
    waits.forEach { $0.cancel() }
    arrival.finish()
    if winner == nil { XCTFail("\(what) did not come within \(bound)", file: file, line: line) }
    return winner
}

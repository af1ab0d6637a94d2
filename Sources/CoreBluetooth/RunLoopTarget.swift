import Foundation

/// A run loop and mode a stream is scheduled in (`Stream.schedule(in:forMode:)`): where its
/// delegate's `stream(_:handle:)` calls run.
///
/// Linux Foundation's `RunLoop` is not `Sendable` and has no public way to wake a loop for a
/// block, so an event is delivered as a one-shot `Timer` added to the loop in the mode (adding a
/// timer re-arms the loop's timer source, which wakes it from any thread). The main run loop is
/// reached through the main dispatch queue instead, which it drains while it runs, so a program
/// that parks in `dispatchMain()` rather than `RunLoop.main.run()` gets its stream events too.
struct RunLoopTarget: @unchecked Sendable {
    // Only compared and handed to `add(_:forMode:)` and `===`: both safe from any thread.
    let runLoop: RunLoop
    let mode: RunLoop.Mode

    /// Whether this is `runLoop` in `mode`.
    func matches(_ other: RunLoop, _ otherMode: RunLoop.Mode) -> Bool {
        runLoop === other && mode == otherMode
    }

    /// Runs `body` once on the run loop (soon, in the mode).
    func post(_ body: @escaping @Sendable () -> Void) {
        if runLoop === RunLoop.main {
            DispatchQueue.main.async(execute: body)
            return
        }
        let timer = Timer(fire: Date(), interval: 0, repeats: false) { _ in body() }
        runLoop.add(timer, forMode: mode)
    }
}

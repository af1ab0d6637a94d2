import BLERuntime
import BLE

/// An element of a stream, or a tick of the host's clock between elements.
enum Ticked<Element: Sendable>: Sendable {
    case element(Element)
    case tick(now: Duration)
}

/// Interleaves `stream` with a tick every `interval` on `clock`, so a live view can age its
/// entries and redraw while nothing is heard. Ticks sleep on the host clock and the tasks prefer
/// its executor, so this runs in virtual time too. The result ends (or fails) with `stream`;
/// ending its consumer stops both tasks and so ends the consumer's interest in `stream`.
func ticking<Element: Sendable, Stream: AsyncSequence & Sendable>(_ stream: Stream, every interval: Duration,
                                on clock: any BLEClock) -> AsyncThrowingStream<Ticked<Element>, any Error> where Stream.Element == Element {
    let (merged, continuation) = AsyncThrowingStream<Ticked<Element>, any Error>.makeStream()
    let feeder = Task(executorPreference: clock.taskExecutor) {
        do {
            for try await element in stream { continuation.yield(.element(element)) }
            continuation.finish()
        } catch {
            continuation.finish(throwing: error)
        }
    }
    let ticker = Task(executorPreference: clock.taskExecutor) {
        while !Task.isCancelled {
            do { try await clock.sleep(for: interval) } catch { return }
            continuation.yield(.tick(now: clock.now()))
        }
    }
    continuation.onTermination = { _ in
        feeder.cancel()
        ticker.cancel()
    }
    return merged
}

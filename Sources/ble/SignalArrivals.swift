#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// Arrivals of the signal `number` (SIGUSR1) from when this returns, as elements of the stream:
/// the signal no longer ends the process (its default action), for the rest of the process.
/// Returns once Dispatch has registered its source: until then a signal sent would be dropped
/// by the kernel as ignored. A standard signal does not queue, so arrivals close together may
/// be one element (the kernel keeps one pending at a time). Ending the stream stops delivering;
/// the signal then stays ignored.
func signalArrivals(_ number: Int32) async -> AsyncStream<Void> {
    let (stream, continuation) = AsyncStream<Void>.makeStream()
    signal(number, SIG_IGN)
    let box = DispatchSourceSignalBox(source: DispatchSource.makeSignalSource(signal: number, queue: .global()))
    box.source.setEventHandler {
        for _ in 0..<box.source.data { continuation.yield() }
    }
    continuation.onTermination = { _ in box.source.cancel() }
    await withCheckedContinuation { (registered: CheckedContinuation<Void, Never>) in
        box.source.setRegistrationHandler { registered.resume() }
        box.source.resume()
    }
    return stream
}

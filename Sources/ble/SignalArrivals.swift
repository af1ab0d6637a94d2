#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// Each arrival of the signal `number` (SIGUSR1) from this call on, as one element of the
/// stream: the signal no longer ends the process (its default action), for the rest of the
/// process. Arrivals the kernel merges into one are each delivered. Ending the stream stops
/// delivering; the signal then stays ignored.
func signalArrivals(_ number: Int32) -> AsyncStream<Void> {
    let (stream, continuation) = AsyncStream<Void>.makeStream()
    signal(number, SIG_IGN)
    let box = DispatchSourceSignalBox(source: DispatchSource.makeSignalSource(signal: number, queue: .global()))
    box.source.setEventHandler {
        for _ in 0..<box.source.data { continuation.yield() }
    }
    continuation.onTermination = { _ in box.source.cancel() }
    box.source.resume()
    return stream
}

import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Process {
    /// `run()`, from a thread of its own whose signal mask is empty, so the child starts with no
    /// signal blocked and a SIGTERM to it is delivered.
    ///
    /// A child inherits the signal mask of the thread that spawns it, and the threads async code
    /// runs on (libdispatch's workers, and every thread they create) block nearly all signals:
    /// a `mosquitto` or `mosquitto_sub` started from an async test with plain `run()` has SIGTERM
    /// blocked, and stops only when SIGKILL follows. Blocks the caller for the spawn itself.
    func runWithSignalsUnblocked() throws {
        let outcome = Mutex<Result<Void, any Error>?>(nil)
        let spawned = DispatchSemaphore(value: 0)
        Thread {
            var empty = sigset_t()
            sigemptyset(&empty)
            pthread_sigmask(SIG_SETMASK, &empty, nil)
            let result = Result { try self.run() }
            outcome.withLock { $0 = result }
            spawned.signal()
        }.start()
        spawned.wait()
        try outcome.withLock { $0 }?.get()
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Flushes stdout (and every other stdio stream) so that streamed lines reach a pipe at once:
/// a reader of `ble serve --json` or `ble heart-rate` sees each event as it happens, not when a
/// buffer fills.
public func flushOutput() {
    fflush(nil)
}

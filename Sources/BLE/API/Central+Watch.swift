import BLEHost
import Synchronization

extension Central {
    /// Scans continuously and keeps a live list: yields a change whenever a device matching
    /// `filter` appears, is heard again, or drops off after `maximumAge` of silence (checked
    /// every tenth of it, on the host's clock). Ending or cancelling the consumer stops the scan.
    public func watch(filter: ScanFilter = ScanFilter(), active: Bool = true,
                      maximumAge: Duration = .seconds(10)) -> AsyncThrowingStream<DeviceListChange, any Error> {
        var everyReport = filter
        everyReport.allowDuplicates = true
        let scan = self.scan(filter: everyReport, active: active)
        let (stream, continuation) = AsyncThrowingStream<DeviceListChange, any Error>.makeStream()
        let list = SharedDeviceList(DeviceList(maximumAge: maximumAge))
        let clock = host.clock
        let feeder = Task(executorPreference: clock.taskExecutor) {
            do {
                for try await device in scan {
                    continuation.yield(list.state.withLock { $0.heard(device) })
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        let period = max(maximumAge / 10, .milliseconds(100))
        let ager = Task(executorPreference: clock.taskExecutor) {
            while !Task.isCancelled {
                do { try await clock.sleep(for: period) } catch { return }
                for change in list.state.withLock({ $0.expire(now: clock.now()) }) { continuation.yield(change) }
            }
        }
        continuation.onTermination = { _ in
            feeder.cancel()
            ager.cancel()
        }
        return stream
    }
}

/// The list, shared by the feeding and the ageing task.
private final class SharedDeviceList: Sendable {
    let state: Mutex<DeviceList>
    init(_ list: DeviceList) { state = Mutex(list) }
}

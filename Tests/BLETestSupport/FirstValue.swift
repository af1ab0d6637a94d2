import BLEVirtual

/// The first element of `values`, or nil once `limit` of `world`'s time has passed.
///
/// A bounded wait in virtual time for the event itself (a notification, a Service Changed
/// indication): both the reader and the bound run as tasks on the world's executor, so the bound
/// is the world's clock, never the machine's speed, and a value that never comes fails the test
/// instead of hanging it.
public func firstValue<Values: AsyncSequence & Sendable>(_ values: Values, within limit: Duration,
                                                         _ world: VirtualWorld) async -> Values.Element?
    where Values.Element: Sendable, Values.Failure == Never {
    await withTaskGroup(of: Values.Element?.self) { group in
        group.addTask(executorPreference: world.clock.taskExecutor) {
            for await v in values { return v }
            return nil
        }
        group.addTask(executorPreference: world.clock.taskExecutor) {
            try? await world.clock.sleep(for: limit)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

import BLEHost

extension GATTClientSessions {
    /// Queues a procedure on the link's bearer without waiting for it: its completion is not
    /// reported to anyone (the bearer still reports it, to no waiting caller). For the MTU
    /// exchange, whose result arrives as `.mtuChanged` anyway: the requests queued behind it go
    /// out the moment its response arrives, each sized by the new ATT_MTU (the bearer sets a
    /// procedure's MTU when it starts), instead of after a round trip through the caller. The
    /// bearer's one outstanding request (Vol 3 Part F §3.3.2) still orders them.
    func submitWithoutWaiting(_ procedure: AnyGATTProcedure, onLink linkID: UInt64, _ host: isolated some GATTClientDriver) {
        guard host.failure == nil, let handle = host.linkHandle(forID: linkID) else { return }
        let id = host.makeToken()
        let t = host.now
        guard let actions = host.withLink(handle, { $0.clients.submit(procedure, id: id, now: t) }) else { return }
        perform(actions, handle: handle, host)
        host.rescheduleTimer()
    }
}

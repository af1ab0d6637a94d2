import BLE

/// The L2CAP channels handed to the client as cookies, with what each has received and not
/// yet been read (a reader task per channel keeps the peer's credits flowing back as SDUs
/// are queued here, up to `queueLimit` SDUs), and the listeners that `WaitConnection` opened.
actor PandoraChannels {
    /// SDUs kept unread per channel; beyond it the reader stops, and so do the peer's credits.
    static let queueLimit = 64

    private struct Record {
        let channel: LECreditBasedChannel
        var queue: [[UInt8]] = []
        var closed = false
        var readers: [CheckedContinuation<[UInt8]?, Never>] = []
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        var room: [CheckedContinuation<Void, Never>] = []
    }

    private var records: [UInt64: Record] = [:]
    private var nextCookie: UInt64 = 1
    private var listeners: [UInt16: L2CAPListener] = [:]
    private var listening: [Task<Void, Never>] = []
    /// Channels peers opened that no WaitConnection has taken yet.
    private var accepted: [LECreditBasedChannel] = []
    private var acceptWaiters: [(psm: UInt16, peer: DeviceAddress, continuation: CheckedContinuation<LECreditBasedChannel?, Never>)] = []

    /// Forgets every channel and listener (FactoryReset): their host is gone.
    func reset() async {
        for task in listening { task.cancel() }
        listening = []
        for listener in listeners.values { await listener.stop() }
        listeners = [:]
        accepted = []
        for w in acceptWaiters { w.continuation.resume(returning: nil) }
        acceptWaiters = []
        for cookie in Array(records.keys) { markClosed(cookie) }
        records = [:]
    }

    /// Hands a channel a cookie and starts reading it.
    func add(_ channel: LECreditBasedChannel) -> UInt64 {
        let cookie = nextCookie
        nextCookie += 1
        records[cookie] = Record(channel: channel)
        Task { [weak self] in
            do {
                for try await sdu in channel {
                    guard let self, await self.enqueue(sdu, cookie) else { return }
                }
            } catch {}
            await self?.markClosed(cookie)
        }
        return cookie
    }

    private func enqueue(_ sdu: [UInt8], _ cookie: UInt64) async -> Bool {
        while let r = records[cookie], !r.closed, r.queue.count >= Self.queueLimit {
            await withCheckedContinuation { c in records[cookie]?.room.append(c) }
        }
        guard var r = records[cookie], !r.closed else { return false }
        if !r.readers.isEmpty {
            r.readers.removeFirst().resume(returning: sdu)
        } else {
            r.queue.append(sdu)
        }
        records[cookie] = r
        return true
    }

    private func markClosed(_ cookie: UInt64) {
        guard var r = records[cookie], !r.closed else { return }
        r.closed = true
        let (readers, closeWaiters, room) = (r.readers, r.closeWaiters, r.room)
        r.readers = []
        r.closeWaiters = []
        r.room = []
        records[cookie] = r
        for c in readers { c.resume(returning: nil) }
        for c in closeWaiters { c.resume() }
        for c in room { c.resume() }
    }

    func channel(_ cookie: UInt64) throws(ControlError) -> LECreditBasedChannel {
        guard let r = records[cookie] else { throw ControlError(.notFound, "no channel \(cookie)") }
        return r.channel
    }

    /// The next SDU received on the channel; nil once it has closed and every SDU was read.
    func next(_ cookie: UInt64) async throws(ControlError) -> [UInt8]? {
        guard var r = records[cookie] else { throw ControlError(.notFound, "no channel \(cookie)") }
        if !r.queue.isEmpty {
            let sdu = r.queue.removeFirst()
            let room = r.room
            r.room = []
            records[cookie] = r
            for c in room { c.resume() }
            return sdu
        }
        if r.closed { return nil }
        return await withCheckedContinuation { c in records[cookie]?.readers.append(c) }
    }

    func close(_ cookie: UInt64) async throws(ControlError) {
        let channel = try channel(cookie)
        await channel.close()
        markClosed(cookie)
    }

    func waitUntilClosed(_ cookie: UInt64) async throws(ControlError) {
        guard let r = records[cookie] else { throw ControlError(.notFound, "no channel \(cookie)") }
        if r.closed { return }
        await withCheckedContinuation { c in records[cookie]?.closeWaiters.append(c) }
    }

    /// Listens on `psm` once (through `listen`) and waits for `peer` to open a channel on it.
    func waitForChannel(psm: UInt16, from peer: DeviceAddress,
                        listen: () async throws -> L2CAPListener) async throws -> LECreditBasedChannel? {
        if listeners[psm] == nil {
            let listener = try await listen()
            listeners[psm] = listener
            listening.append(Task { [weak self] in
                for await channel in listener { await self?.arrived(channel) }
            })
        }
        if let i = accepted.firstIndex(where: { $0.psm == psm && $0.peer == peer }) {
            return accepted.remove(at: i)
        }
        return await withCheckedContinuation { c in acceptWaiters.append((psm, peer, c)) }
    }

    private func arrived(_ channel: LECreditBasedChannel) {
        if let i = acceptWaiters.firstIndex(where: { $0.psm == channel.psm && $0.peer == channel.peer }) {
            acceptWaiters.remove(at: i).continuation.resume(returning: channel)
        } else {
            accepted.append(channel)
        }
    }
}

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
        /// A reader waiting for the next SDU (one at a time: a second Receive waits behind it).
        var readers: [(token: Int, continuation: CheckedContinuation<[UInt8]?, Never>)] = []
        var closeWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var room: [CheckedContinuation<Void, Never>] = []
    }

    private var nextToken = 0
    /// Counts resets: a wait that began before one ends with nil.
    private var epoch = 0
    private func token() -> Int {
        nextToken += 1
        return nextToken
    }

    private var records: [UInt64: Record] = [:]
    private var nextCookie: UInt64 = 1
    /// The listener of each SPSM a WaitConnection asked for, made once (the first request's
    /// parameters hold for the SPSM).
    private var listeners: [UInt16: Task<L2CAPListener, any Error>] = [:]
    private var listening: [Task<Void, Never>] = []
    /// Channels peers opened that no WaitConnection has taken yet (the oldest go beyond 16).
    private var accepted: [LECreditBasedChannel] = []
    private var acceptWaiters: [(token: Int, psm: UInt16, peer: DeviceAddress, continuation: CheckedContinuation<LECreditBasedChannel?, Never>)] = []

    /// Forgets every channel and listener (FactoryReset): their host is gone.
    func reset() async {
        epoch += 1
        for task in listening { task.cancel() }
        listening = []
        let made = listeners.values
        listeners = [:]
        accepted = []
        let waiters = acceptWaiters
        acceptWaiters = []
        for w in waiters { w.continuation.resume(returning: nil) }
        for cookie in Array(records.keys) { markClosed(cookie) }
        records = [:]
        for listener in made { await (try? listener.value)?.stop() }
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
            r.readers.removeFirst().continuation.resume(returning: sdu)
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
        r.closeWaiters = [:]
        r.room = []
        records[cookie] = r
        for r in readers { r.continuation.resume(returning: nil) }
        for c in closeWaiters.values { c.resume() }
        for c in room { c.resume() }
    }

    func channel(_ cookie: UInt64) throws(ControlError) -> LECreditBasedChannel {
        guard let r = records[cookie] else { throw ControlError(.notFound, "no channel \(cookie)") }
        return r.channel
    }

    /// The next SDU received on the channel; nil once it has closed and every SDU was read.
    func next(_ cookie: UInt64) async throws(ControlError) -> [UInt8]? {
        guard var r = records[cookie] else { throw ControlError(.notFound, "no channel \(cookie)") }
        // A reader already gone takes nothing from the queue.
        if Task.isCancelled { return nil }
        if !r.queue.isEmpty {
            let sdu = r.queue.removeFirst()
            let room = r.room
            r.room = []
            records[cookie] = r
            for c in room { c.resume() }
            return sdu
        }
        if r.closed { return nil }
        let token = token()
        let sdu = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<[UInt8]?, Never>) in
                if Task.isCancelled || records[cookie] == nil {
                    c.resume(returning: nil)
                } else {
                    records[cookie]?.readers.append((token, c))
                }
            }
        } onCancel: {
            Task { await self.stopReading(cookie, token: token) }
        }
        if Task.isCancelled, let sdu {
            // Woken with an SDU just as the reader went: it goes to the next reader, or back
            // to the front of the queue.
            putBack(sdu, cookie)
            return nil
        }
        return sdu
    }

    /// An SDU a cancelled reader was handed: the next reader gets it first.
    func putBack(_ sdu: [UInt8], _ cookie: UInt64) {
        guard var r = records[cookie] else { return }
        if !r.readers.isEmpty {
            r.readers.removeFirst().continuation.resume(returning: sdu)
        } else {
            r.queue.insert(sdu, at: 0)
        }
        records[cookie] = r
    }

    private func stopReading(_ cookie: UInt64, token: Int) {
        guard let i = records[cookie]?.readers.firstIndex(where: { $0.token == token }) else { return }
        records[cookie]?.readers.remove(at: i).continuation.resume(returning: nil)
    }

    func close(_ cookie: UInt64) async throws(ControlError) {
        let channel = try channel(cookie)
        await channel.close()
        markClosed(cookie)
    }

    func waitUntilClosed(_ cookie: UInt64) async throws(ControlError) {
        guard let r = records[cookie] else { throw ControlError(.notFound, "no channel \(cookie)") }
        if r.closed { return }
        let token = token()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                if Task.isCancelled || records[cookie]?.closed != false {
                    c.resume()
                } else {
                    records[cookie]?.closeWaiters[token] = c
                }
            }
        } onCancel: {
            Task { await self.stopWaitingForClose(cookie, token: token) }
        }
        if Task.isCancelled { throw ControlError(.cancelled, "cancelled") }
    }

    private func stopWaitingForClose(_ cookie: UInt64, token: Int) {
        records[cookie]?.closeWaiters.removeValue(forKey: token)?.resume()
    }

    /// Listens on `psm` once (through `listen`) and waits for `peer` to open a channel on it.
    /// nil when the stack was reset meanwhile or the wait was cancelled.
    func waitForChannel(psm: UInt16, from peer: DeviceAddress,
                        listen: @escaping @Sendable () async throws -> L2CAPListener) async throws -> LECreditBasedChannel? {
        let began = epoch
        let made: Task<L2CAPListener, any Error>
        if let existing = listeners[psm] {
            made = existing
        } else {
            made = Task { try await listen() }
            listeners[psm] = made
            listening.append(Task { [weak self] in
                guard let listener = try? await made.value else { return }
                for await channel in listener { await self?.arrived(channel) }
            })
        }
        do {
            let listener = try await made.value
            guard epoch == began else {
                // The stack was reset meanwhile: this listener belongs to the old host.
                await listener.stop()
                return nil
            }
        } catch {
            if listeners[psm] == made { listeners[psm] = nil }
            throw error
        }
        if let i = accepted.firstIndex(where: { $0.psm == psm && $0.peer == peer }) {
            return accepted.remove(at: i)
        }
        let token = token()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<LECreditBasedChannel?, Never>) in
                if Task.isCancelled { c.resume(returning: nil) } else { acceptWaiters.append((token, psm, peer, c)) }
            }
        } onCancel: {
            Task { await self.stopWaitingForChannel(token) }
        }
    }

    private func stopWaitingForChannel(_ token: Int) {
        guard let i = acceptWaiters.firstIndex(where: { $0.token == token }) else { return }
        acceptWaiters.remove(at: i).continuation.resume(returning: nil)
    }

    private func arrived(_ channel: LECreditBasedChannel) {
        if let i = acceptWaiters.firstIndex(where: { $0.psm == channel.psm && $0.peer == channel.peer }) {
            acceptWaiters.remove(at: i).continuation.resume(returning: channel)
        } else {
            accepted.append(channel)
            if accepted.count > 16 { accepted.removeFirst() }
        }
    }
}

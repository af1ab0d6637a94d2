import BLEHCI
import BLERuntime
import BLEWire
import XCTest

/// A scripted LE controller on the far end of an in-memory transport: it answers the host's
/// commands the way a conforming controller does (or the way a test tells it to misbehave),
/// records everything, and lets the test inject events and ACL data.
public actor FakeController {
    /// The controller's end of the in-memory transport; the host under test holds the other.
    public let end: InMemoryTransport
    /// Every command the host sent, in order.
    public private(set) var commands: [HCICommand] = []
    /// Every ACL packet the host sent, in order (see `l2capPayloads`).
    public private(set) var acl: [ACLPacket] = []
    /// Per-opcode override: return the events to send, or nil to stay silent (a hung controller).
    private var overrides: [HCIOpcode: @Sendable (HCICommand) -> [HCIEvent]?] = [:]
    private var waiters: [(id: UInt64, predicate: @Sendable (HCICommand) -> Bool, continuation: CheckedContinuation<HCICommand, any Error>)] = []
    private var aclWaiters: [(id: UInt64, predicate: @Sendable ([ACLPacket]) -> Bool, continuation: CheckedContinuation<Void, any Error>)] = []
    private var historyWaiters: [(id: UInt64, predicate: @Sendable ([HCICommand]) -> Bool, continuation: CheckedContinuation<Void, any Error>)] = []
    private var activityWaiters: [(id: UInt64, mark: Int, continuation: CheckedContinuation<Void, any Error>)] = []
    private var nextWaiterID: UInt64 = 0
    private var reader: Task<Void, Never>?

    /// What HCI_Read_BD_ADDR answers.
    public var address = BDAddress(rawValue: 0x00_1B_DC_00_00_01)
    /// HCI_LE_Read_Buffer_Size [v2]'s answer; nil makes the controller lack the command, so the
    /// host must fall back to v1 (Core spec Vol 4 Part E §7.8.2).
    public var leBufferV2: (length: UInt16, count: UInt8)? = (27, 4)
    /// HCI_LE_Read_Buffer_Size [v1]'s answer.
    public var leBufferV1: (length: UInt16, count: UInt8) = (27, 4)
    /// HCI_Read_Buffer_Size's answer, used when the LE buffer size is 0 (shared buffers).
    public var sharedBuffer: (length: UInt16, count: UInt16) = (1021, 8)
    /// Answer LE Create Connection with a completed connection to this handle after the status.
    public var acceptConnections = true
    /// The handle the next accepted connection gets.
    public var nextHandle: UInt16 = 0x0040
    /// The peer of an LE Create Connection not yet completed (`acceptConnections` off).
    public var pendingConnectPeer: DeviceAddress?
    /// The SID and advertiser of the periodic sync being created (LE Periodic Advertising Create
    /// Sync, until its Sync Established or cancel).
    public var pendingSync: (sid: UInt8, advertiser: DeviceAddress)?
    /// Return an ACL credit for every packet at once (a fast controller); off to build a backlog.
    public var returnCredits = true
    /// Whether Supported Commands lists Bluetooth 5's extended advertising, scanning and
    /// connecting commands (octets 36–37; off by default, so a host drives it with the legacy
    /// ones, which the tests script); every other command is listed either way.
    public var listsExtendedAdvertisingCommands = false
    /// The PHY LE Read PHY reports for a link (both directions).
    public var linkPHY: LEPHY = .le1M
    /// LE Read Local Supported Features' answer (Vol 6 Part B §4.6): encryption only by default.
    public var leFeatures: [UInt8] = [0x01, 0, 0, 0, 0, 0, 0, 0]
    private var heldCredits: [UInt16: UInt16] = [:]

    public init(end: InMemoryTransport) {
        self.end = end
    }

    /// Starts answering the host's commands and recording its ACL data.
    public func start() {
        let stream = end.incoming
        reader = Task {
            do {
                for try await frame in stream { self.receive(frame) }
            } catch {}
        }
    }

    /// Overrides the answer to `opcode`: `response` returns the events to send, or nil for none.
    public func set(_ opcode: HCIOpcode, _ response: @escaping @Sendable (HCICommand) -> [HCIEvent]?) {
        overrides[opcode] = response
    }

    /// Changes several settings at once, on the actor.
    public func configure(_ body: @Sendable (isolated FakeController) -> Void) { body(self) }

    /// Returns every credit held back while `returnCredits` was off.
    public func returnAllCredits(handle: UInt16) {
        guard let n = heldCredits.removeValue(forKey: handle), n > 0 else { return }
        send(.numberOfCompletedPackets([CompletedPackets(handle: handle, count: n)]))
    }

    /// Sends an event without waiting for the transport to take it.
    public func send(_ event: HCIEvent) {
        let frame = event.h4Frame
        Task { try? await end.send(frame) }
    }

    /// Sends an event and waits until the transport took it.
    public func sendNow(_ event: HCIEvent) async {
        try? await end.send(event.h4Frame)
    }

    /// Sends an L2CAP frame on `channel`, fragmented to `fragment` bytes per ACL packet.
    public func sendL2CAP(handle: UInt16, channel: UInt16, payload: [UInt8], fragment: Int = 27) async {
        var pdu = ByteWriter()
        pdu.u16(UInt16(payload.count))
        pdu.u16(channel)
        pdu.append(payload)
        let bytes = pdu.bytes
        var offset = 0
        var first = true
        while offset < bytes.count {
            let chunk = Array(bytes[offset..<min(offset + fragment, bytes.count)])
            let packet = ACLPacket(handle: handle, boundary: first ? .firstFlushable : .continuing, data: chunk)
            try? await end.send(packet.h4Frame)
            first = false
            offset += fragment
        }
    }

    /// Waits until the host sends a command matching `predicate` (or returns an earlier one).
    /// Bounded: after `bound` of real time it throws `FakeControllerTimeout`, so a host that never
    /// sends the command fails the test instead of hanging it.
    public func waitForCommand(within bound: Duration = .seconds(10),
                               _ predicate: @escaping @Sendable (HCICommand) -> Bool) async throws -> HCICommand {
        if let c = commands.first(where: predicate) { return c }
        let id = makeWaiterID()
        expire(id, after: bound, "the host's command")
        return try await withCheckedThrowingContinuation { waiters.append((id, predicate, $0)) }
    }

    /// Waits until the host sends a command with `opcode` (or returns an earlier one), within `bound`.
    public func waitForCommand(_ opcode: HCIOpcode, within bound: Duration = .seconds(10)) async throws -> HCICommand {
        try await waitForCommand(within: bound) { $0.opcode == opcode }
    }

    /// Waits until the host has sent `count` commands with `opcode` in all, within `bound`.
    public func waitForCommand(_ opcode: HCIOpcode, count: Int, within bound: Duration = .seconds(10)) async throws {
        let enough: @Sendable ([HCICommand]) -> Bool = { $0.lazy.filter { $0.opcode == opcode }.count >= count }
        if enough(commands) { return }
        let id = makeWaiterID()
        expire(id, after: bound, "\(count) commands \(opcode)")
        try await withCheckedThrowingContinuation { historyWaiters.append((id, enough, $0)) }
    }

    /// Waits until the commands received so far satisfy `predicate`, within `bound`.
    public func waitForCommands(within bound: Duration = .seconds(10), _ predicate: @escaping @Sendable ([HCICommand]) -> Bool) async throws {
        if predicate(commands) { return }
        let id = makeWaiterID()
        expire(id, after: bound, "such commands")
        try await withCheckedThrowingContinuation { historyWaiters.append((id, predicate, $0)) }
    }

    /// How many commands and ACL packets the host has sent in all: a mark for `waitForActivity`.
    public var received: Int { commands.count + acl.count }

    /// Waits until the host has sent more than `mark` commands and ACL packets in all (returns at
    /// once if it has), within `bound`.
    public func waitForActivity(since mark: Int, within bound: Duration = .seconds(10)) async throws {
        if received > mark { return }
        let id = makeWaiterID()
        expire(id, after: bound, "command or ACL data from the host")
        try await withCheckedThrowingContinuation { activityWaiters.append((id, mark, $0)) }
    }

    /// Plays a scripted peer against the host: `step` answers what the host sent since the last
    /// step; after each step, until `done` holds, it waits for the host to send something more
    /// (a command or ACL packet: the event, no polling) and steps again. False, with a test
    /// failure saying what was awaited, when `done` still does not hold after `bound` of real time.
    @discardableResult
    public func play(_ what: String, within bound: Duration, file: StaticString = #filePath, line: UInt = #line,
                     step: @Sendable () async -> Void, until done: @Sendable () async -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + bound
        while true {
            let mark = received
            await step()
            if await done() { return true }
            let left = deadline - clock.now
            do {
                guard left > .zero else { throw FakeControllerTimeout(message: "out of time") }
                try await waitForActivity(since: mark, within: left)
            } catch {
                XCTFail("\(what) still did not hold after \(bound)", file: file, line: line)
                return false
            }
        }
    }

    /// Whether the host sent a command with `opcode` (an earlier one counts) within `bound`; when
    /// it did not, the test fails at the caller's line saying what was awaited.
    public func sent(_ opcode: HCIOpcode, _ what: String, within bound: Duration = .seconds(10),
                     file: StaticString = #filePath, line: UInt = #line) async -> Bool {
        do {
            _ = try await waitForCommand(opcode, within: bound)
            return true
        } catch {
            XCTFail("\(what): \(error)", file: file, line: line)
            return false
        }
    }

    /// Waits until the ACL packets received so far satisfy `predicate`, within `bound`.
    public func waitForACL(within bound: Duration = .seconds(10), _ predicate: @escaping @Sendable ([ACLPacket]) -> Bool) async throws {
        if predicate(acl) { return }
        let id = makeWaiterID()
        expire(id, after: bound, "ACL data from the host")
        try await withCheckedThrowingContinuation { aclWaiters.append((id, predicate, $0)) }
    }

    private func makeWaiterID() -> UInt64 {
        nextWaiterID += 1
        return nextWaiterID
    }

    /// Fails waiter `id` with `FakeControllerTimeout` if it is still waiting after `bound`.
    private func expire(_ id: UInt64, after bound: Duration, _ what: String) {
        Task {
            try? await Task.sleep(for: bound)
            self.timeOut(id, "no \(what) within \(bound)")
        }
    }

    private func timeOut(_ id: UInt64, _ message: String) {
        if let i = waiters.firstIndex(where: { $0.id == id }) {
            waiters.remove(at: i).continuation.resume(throwing: FakeControllerTimeout(message: message))
        }
        if let i = aclWaiters.firstIndex(where: { $0.id == id }) {
            aclWaiters.remove(at: i).continuation.resume(throwing: FakeControllerTimeout(message: message))
        }
        if let i = historyWaiters.firstIndex(where: { $0.id == id }) {
            historyWaiters.remove(at: i).continuation.resume(throwing: FakeControllerTimeout(message: message))
        }
        if let i = activityWaiters.firstIndex(where: { $0.id == id }) {
            activityWaiters.remove(at: i).continuation.resume(throwing: FakeControllerTimeout(message: message))
        }
    }

    /// Waits until the L2CAP payloads the host sent on `channel` satisfy `predicate`, and
    /// returns them: checked as each ACL packet arrives (no polling), failing with
    /// `FakeControllerTimeout` after `bound` of real time.
    @discardableResult
    public func waitForL2CAP(channel: UInt16, within bound: Duration = .seconds(10),
                             _ predicate: @escaping @Sendable ([[UInt8]]) -> Bool) async throws -> [[UInt8]] {
        try await waitForACL(within: bound) { predicate(Self.l2capPayloads(in: $0, channel: channel)) }
        return l2capPayloads(channel: channel)
    }

    /// The L2CAP payloads the host sent on `channel`, reassembled.
    public func l2capPayloads(channel: UInt16) -> [[UInt8]] {
        Self.l2capPayloads(in: acl, channel: channel)
    }

    /// The L2CAP payloads on `channel` in `acl`, reassembled.
    public static func l2capPayloads(in acl: [ACLPacket], channel: UInt16) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var current: [UInt8] = []
        for p in acl {
            if p.boundary.isStart { current = p.data } else { current += p.data }
            if current.count >= 4 {
                let length = Int(current[0]) | Int(current[1]) << 8
                let cid = UInt16(current[2]) | UInt16(current[3]) << 8
                if current.count == length + 4 {
                    if cid == channel { out.append(Array(current[4...])) }
                    current = []
                }
            }
        }
        return out
    }

    private func receive(_ frame: H4Frame) {
        defer {
            let total = received
            let active = activityWaiters.filter { $0.mark < total }
            activityWaiters.removeAll { $0.mark < total }
            for w in active { w.continuation.resume() }
        }
        switch frame.type {
        case .command:
            guard let command = try? HCICommand.decode(frame.payload) else { return }
            commands.append(command)
            let events = overrides[command.opcode].map { $0(command) } ?? defaultResponse(command)
            for e in events ?? [] { send(e) }
            let ready = waiters.filter { $0.predicate(command) }
            waiters.removeAll { $0.predicate(command) }
            for w in ready { w.continuation.resume(returning: command) }
            let history = commands
            let met = historyWaiters.filter { $0.predicate(history) }
            historyWaiters.removeAll { $0.predicate(history) }
            for w in met { w.continuation.resume() }
        case .acl:
            guard let packet = try? ACLPacket.decode(frame.payload) else { return }
            acl.append(packet)
            // Return the credit at once, as a fast controller would (unless told to hold them).
            if returnCredits {
                send(.numberOfCompletedPackets([CompletedPackets(handle: packet.handle, count: 1)]))
            } else {
                heldCredits[packet.handle, default: 0] += 1
            }
            let snapshot = acl
            let ready = aclWaiters.filter { $0.predicate(snapshot) }
            aclWaiters.removeAll { $0.predicate(snapshot) }
            for w in ready { w.continuation.resume() }
        default:
            break
        }
    }

    private func complete(_ opcode: HCIOpcode, _ parameters: [UInt8] = []) -> HCIEvent {
        .commandComplete(numHCICommandPackets: 1, opcode: opcode, returnParameters: [0x00] + parameters)
    }

    private func status(_ opcode: HCIOpcode, _ status: HCIStatus = .success) -> HCIEvent {
        .commandStatus(status: status, numHCICommandPackets: 1, opcode: opcode)
    }

    /// What a conforming LE controller answers (Core spec Vol 4 Part E §7).
    private func defaultResponse(_ c: HCICommand) -> [HCIEvent] {
        switch c.opcode {
        case .readLocalVersionInformation:
            return [complete(c.opcode, [0x0C, 0x00, 0x00, 0x0C, 0xF1, 0x05, 0x00, 0x00])]
        case .readLocalSupportedCommands:
            var octets = [UInt8](repeating: 0xFF, count: 64)
            if leBufferV2 == nil { octets[41] &= ~(1 << 5) }
            if !listsExtendedAdvertisingCommands { (octets[36], octets[37]) = (0, 0) }
            return [complete(c.opcode, octets)]
        case .readLocalSupportedFeatures:
            return [complete(c.opcode, [0, 0, 0, 0, 0x60, 0, 0, 0])]
        case .readBDADDR:
            return [complete(c.opcode, address.littleEndianBytes)]
        case .leReadBufferSizeV2:
            guard let v2 = leBufferV2 else {
                return [.commandComplete(numHCICommandPackets: 1, opcode: c.opcode, returnParameters: [HCIStatus.unknownCommand.rawValue])]
            }
            return [complete(c.opcode, [UInt8(v2.length & 0xFF), UInt8(v2.length >> 8), v2.count, 0, 0, 0])]
        case .leReadBufferSizeV1:
            return [complete(c.opcode, [UInt8(leBufferV1.length & 0xFF), UInt8(leBufferV1.length >> 8), leBufferV1.count])]
        case .readBufferSize:
            let s = sharedBuffer
            return [complete(c.opcode, [UInt8(s.length & 0xFF), UInt8(s.length >> 8), 0, UInt8(s.count & 0xFF), UInt8(s.count >> 8), 0, 0])]
        case .leReadLocalSupportedFeatures:
            return [complete(c.opcode, leFeatures)]
        case .leReadNumberOfSupportedAdvertisingSets:
            return [complete(c.opcode, [4])]
        case .leReadMaximumAdvertisingDataLength:
            return [complete(c.opcode, [0x72, 0x06])]
        case .leReadPeriodicAdvertiserListSize:
            return [complete(c.opcode, [4])]
        case .leCreateConnection, .leExtendedCreateConnection:
            // The peer's type and address follow the scan timing and filter policy (§7.8.12),
            // or the filter policy and own address type (§7.8.66).
            let extended = c.opcode == .leExtendedCreateConnection
            var r = ByteReader(c.parameters)
            _ = try? r.skip(extended ? 2 : 5)
            let type = (try? r.readU8()) ?? 0
            let address = BDAddress(littleEndian: (try? r.readBytes(6)) ?? [])
            let peer = DeviceAddress(address, type: type == 0 ? .public : .random)
            pendingConnectPeer = peer
            guard acceptConnections else { return [status(c.opcode)] }
            let handle = nextHandle
            nextHandle += 1
            pendingConnectPeer = nil
            let complete: HCIEvent = .le(.connectionComplete(LEConnectionComplete(
                status: .success, handle: handle, role: .central, peer: peer, interval: 24, latency: 0,
                supervisionTimeout: 420, centralClockAccuracy: 0, format: extended ? .enhanced : .legacy)))
            // A Bluetooth 5 controller says which channel selection algorithm the link uses (#2).
            return [status(c.opcode), complete] + (extended ? [.le(.channelSelectionAlgorithm(handle: handle, algorithm: 1))] : [])
        case .leReadPHY:
            return [complete(c.opcode, Array(c.parameters.prefix(2)) + [linkPHY.rawValue, linkPHY.rawValue])]
        case .leCreateConnectionCancel:
            guard let peer = pendingConnectPeer else {
                return [.commandComplete(numHCICommandPackets: 1, opcode: c.opcode, returnParameters: [HCIStatus.commandDisallowed.rawValue])]
            }
            pendingConnectPeer = nil
            return [complete(c.opcode), .le(.connectionComplete(LEConnectionComplete(
                status: .unknownConnectionIdentifier, handle: 0, role: .central, peer: peer, interval: 0, latency: 0,
                supervisionTimeout: 0, centralClockAccuracy: 0, format: .legacy)))]
        case .disconnect:
            let handle = UInt16(c.parameters.first ?? 0) | UInt16(c.parameters.count > 1 ? c.parameters[1] : 0) << 8
            return [status(c.opcode), .disconnectionComplete(status: .success, handle: handle, reason: .connectionTerminatedByLocalHost)]
        case .leConnectionUpdate, .leReadRemoteFeatures, .leSetPHY, .readRemoteVersionInformation, .leEnableEncryption:
            return [status(c.opcode)]
        case .lePeriodicAdvertisingCreateSync:
            // Options, SID, address type, address (§7.8.67): kept for a cancel's answer.
            var r = ByteReader(c.parameters)
            _ = try? r.skip(1)
            let sid = (try? r.readU8()) ?? 0
            let type = (try? r.readU8()) ?? 0
            pendingSync = (sid, DeviceAddress(BDAddress(littleEndian: (try? r.readBytes(6)) ?? []), type: type == 0 ? .public : .random))
            return [status(c.opcode)]
        case .lePeriodicAdvertisingCreateSyncCancel:
            guard let (sid, advertiser) = pendingSync else {
                return [.commandComplete(numHCICommandPackets: 1, opcode: c.opcode, returnParameters: [HCIStatus.commandDisallowed.rawValue])]
            }
            pendingSync = nil
            // The pending sync ends with Operation Cancelled by Host (§7.8.68).
            return [complete(c.opcode), .le(.periodicAdvertisingSyncEstablished(LEPeriodicSyncEstablished(
                status: HCIStatus(0x44), syncHandle: 0, sid: sid, advertiser: advertiser, phy: .le1M, interval: 0, clockAccuracy: 0)))]
        default:
            return [complete(c.opcode)]
        }
    }
}

/// A host on one end and a fake controller on the other.
public struct HostUnderTest: Sendable {
    /// The scripted controller; call `start()` before opening the host.
    public let controller: FakeController
    /// The transport end to open the host on.
    public let hostEnd: InMemoryTransport

    public init() {
        let (host, controller) = InMemoryTransport.pair()
        self.hostEnd = host
        self.controller = FakeController(end: controller)
    }
}

/// A fake controller's wait that passed its bound: the host never sent what the test expected.
public struct FakeControllerTimeout: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

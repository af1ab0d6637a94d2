@testable import BLE
import BLEHCI
import BLEHost

/// What every test double of a part's driver shares (the `HostServices` side): commands
/// answered at once with success (or failed, for the opcodes `failing` names) and recorded,
/// and the tasks the part spawns held until the test runs them (`takeTasks`), so what runs
/// before them is the test's choice, not the scheduler's.
struct DriverRecord {
    var commands: [HCICommand] = []
    var failing: Set<HCIOpcode> = []
    /// Opcodes failed once each, the next time they are sent.
    var failingOnce: Set<HCIOpcode> = []
    var tasks: [@Sendable () async throws -> Void] = []
    /// Return parameters (after the status) for opcodes that have some.
    var answers: [HCIOpcode: [UInt8]] = [:]

    /// Records `cmd` and answers it as a controller would (status, then `answers`' parameters).
    mutating func answer(_ cmd: HCICommand) throws -> [UInt8] {
        commands.append(cmd)
        if failing.contains(cmd.opcode) || failingOnce.remove(cmd.opcode) != nil {
            throw BLEError.hci(.commandFailed(opcode: cmd.opcode, status: .commandDisallowed))
        }
        return [0] + (answers[cmd.opcode] ?? [])
    }

    mutating func spawn(_ body: @escaping @Sendable () async throws -> Void) -> UInt64 {
        tasks.append(body)
        return UInt64(tasks.count)
    }

    /// The tasks spawned so far, handed over to be run.
    mutating func takeTasks() -> [@Sendable () async throws -> Void] {
        defer { tasks = [] }
        return tasks
    }

    /// The opcodes sent so far, in order.
    var opcodes: [HCIOpcode] { commands.map(\.opcode) }
}

/// A driver double that keeps its own link table: `LinkTableAccess` over it.
protocol LinkTableDouble: LinkTableAccess {
    var links: LinkTable { get set }
}

extension LinkTableDouble {
    func withLink<R>(_ handle: UInt16, _ body: (inout Link) -> R) -> R? { links.withLink(handle, body) }
    func readLink<R>(_ handle: UInt16, _ body: (borrowing Link) -> R) -> R? { links.read(handle, body) }
    func link(_ handle: UInt16) -> Link? { links[handle] }
    func linkHandle(forID id: UInt64) -> UInt16? { links.handle(forID: id) }
    var linkHandles: [UInt16] { links.handles }
    func hasLink(_ handle: UInt16) -> Bool { links.contains(handle) }
}

/// The configuration a part double gives its part unless it states its own.
let defaultPartConfiguration = HostConfiguration()

/// A test double of a part's driver: the `HostServices` side every double shares, given here,
/// so a double states only what is particular to it (and overrides any of these by declaring
/// its own): the default configuration, time at zero, no failure, no timer to reschedule, no
/// log, `run` on the double, and `command` answered with `commandReturning`'s parameters.
protocol PartDriver: HostServices {}

extension PartDriver {
    nonisolated var configuration: HostConfiguration { defaultPartConfiguration }
    var now: Duration { .zero }
    var failure: BLEError? { nil }
    func rescheduleTimer() {}
    nonisolated func log(_ message: String) {}
    func run<T: Sendable>(_ body: @Sendable (isolated Self) async throws -> T) async rethrows -> T { try await body(self) }
    func command(_ cmd: HCICommand, timeout: Duration?) async throws -> CommandResult {
        .complete(returnParameters: try await commandReturning(cmd))
    }
}

/// A driver double that records with a `DriverRecord`: commands answered by it (status only),
/// and the part's spawned tasks held and run on demand.
protocol RecordingDriver: PartDriver {
    var record: DriverRecord { get set }
}

extension RecordingDriver {
    func commandReturning(_ cmd: HCICommand) async throws -> [UInt8] { try record.answer(cmd) }
    func spawn(_ name: String, _ body: @escaping @Sendable () async throws -> Void) -> UInt64 { record.spawn(body) }
    /// The commands sent so far, in order.
    var commands: [HCICommand] { record.commands }
    /// The opcodes sent so far, in order.
    var opcodes: [HCIOpcode] { record.opcodes }

    /// Runs the tasks the part spawned, in order, until none is left.
    func runSpawned() async {
        while !record.tasks.isEmpty {
            for task in record.takeTasks() { try? await task() }
        }
    }
}

extension Link {
    /// A peripheral-role link to a public peer, for part doubles' link tables.
    static func testPeripheralLink(handle: UInt16) -> Link {
        let parameters = LinkParameters(interval: 24, latency: 0, supervisionTimeout: 400)
        return Link(id: UInt64(handle), handle: handle, peer: DeviceAddress(BDAddress(rawValue: 0xA0), type: .public),
                    role: .peripheral, parameters: parameters,
                    clients: ATTClientBearerSet(unenhanced: ATTClientBearer(transactionTimeout: .seconds(30))),
                    server: ATTServer(), observation: LinkObservation(parameters: parameters))
    }
}

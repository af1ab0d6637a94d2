@testable import BLE
import BLEHCI

/// What every test double of a part's driver shares (the `HostServices` side): commands
/// answered at once with success (or failed, for the opcodes `failing` names) and recorded,
/// and the tasks the part spawns held until the test runs them (`takeTasks`), so what runs
/// before them is the test's choice, not the scheduler's.
struct DriverRecord {
    var commands: [HCICommand] = []
    var failing: Set<HCIOpcode> = []
    var tasks: [@Sendable () async throws -> Void] = []

    /// Records `cmd` and answers it as a controller would (status only).
    mutating func answer(_ cmd: HCICommand) throws -> [UInt8] {
        commands.append(cmd)
        if failing.contains(cmd.opcode) { throw BLEError.hci(.commandFailed(opcode: cmd.opcode, status: .commandDisallowed)) }
        return [0]
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

/// A driver double that records with a `DriverRecord`: the part's spawned tasks run on demand.
protocol RecordingDriver: Actor {
    var record: DriverRecord { get set }
}

extension RecordingDriver {
    /// Runs the tasks the part spawned, in order, until none is left.
    func runSpawned() async {
        while !record.tasks.isEmpty {
            for task in record.takeTasks() { try? await task() }
        }
    }
}

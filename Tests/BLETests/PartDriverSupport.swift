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

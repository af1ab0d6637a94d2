import BLETransport
import Foundation
import Synchronization

/// The Python gRPC bridge `ble pandora` starts: `pandora_bridge.py`, shipped as a resource of
/// `ble`. It gets the control port and the token (in its environment, not on its command line,
/// which `ps` shows) and proves itself with the token as its first line.
final class PandoraBridgeProcess: Sendable {
    private let process: Process
    private let exit = Mutex<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    private init(process: Process) {
        self.process = process
    }

    /// Where the bridge script is: `$BLE_PANDORA_BRIDGE`, else the resource next to `ble`.
    static func scriptPath() throws -> String {
        if let path = ProcessInfo.processInfo.environment["BLE_PANDORA_BRIDGE"], !path.isEmpty { return path }
        guard let url = Bundle.module.url(forResource: "pandora_bridge", withExtension: "py") else {
            throw UsageError("pandora_bridge.py is not installed next to ble (set BLE_PANDORA_BRIDGE to its path)")
        }
        return url.path
    }

    static func start(python: String, grpcPort: UInt16, controlPort: UInt16, token: String) throws -> PandoraBridgeProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, try scriptPath(), "--port", String(grpcPort), "--control", String(controlPort)]
        var environment = ProcessInfo.processInfo.environment
        environment["BLE_PANDORA_TOKEN"] = token
        environment["PYTHONUNBUFFERED"] = "1"
        process.environment = environment
        let bridge = PandoraBridgeProcess(process: process)
        process.terminationHandler = { [weak bridge] p in bridge?.exited(p.terminationStatus) }
        do {
            try process.run()
        } catch {
            throw UsageError("cannot start the Pandora bridge with \(python): \(error)")
        }
        return bridge
    }

    private func exited(_ status: Int32) {
        let waiters = exit.withLock { e -> [CheckedContinuation<Int32, Never>] in
            e.status = status
            defer { e.waiters = [] }
            return e.waiters
        }
        for w in waiters { w.resume(returning: status) }
    }

    /// Waits for the bridge to exit; its status.
    func exitStatus() async -> Int32 {
        await withCheckedContinuation { c in
            let status = exit.withLock { e -> Int32? in
                if e.status == nil { e.waiters.append(c) }
                return e.status
            }
            if let status { c.resume(returning: status) }
        }
    }

    /// Stops the bridge (SIGTERM) if it still runs.
    func terminate() {
        if process.isRunning { process.terminate() }
    }
}

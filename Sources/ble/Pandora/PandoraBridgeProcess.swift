import Foundation
import Synchronization

/// The Python gRPC bridge `ble pandora` starts: `Bridge/pandora_bridge.py` (with
/// `pandora_datatypes.py` beside it), shipped as a resource of `ble`. It gets the control port and the token (in its environment, not on its command line,
/// which `ps` shows) and proves itself with the token as its first line.
final class PandoraBridgeProcess: Sendable {
    private let process: Process
    private let exit = Mutex<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    private init(process: Process) {
        self.process = process
    }

    /// The bridge script installed with `ble`: in its resource bundle, the directory
    /// `SwiftBLE_ble.resources` beside the executable (where SwiftPM puts it). Looked up by
    /// hand: SwiftPM's `Bundle.module` stops the process when the bundle is missing.
    static func installedScript() throws -> String {
        let name = "SwiftBLE_ble.resources/Bridge/pandora_bridge.py"
        let executable = Bundle.main.executableURL?.resolvingSymlinksInPath()
        for directory in [executable?.deletingLastPathComponent(), Bundle.main.bundleURL].compactMap({ $0 }) {
            let path = directory.appendingPathComponent(name).path
            if FileManager.default.fileExists(atPath: path) { return path }
        }
        throw UsageError("pandora_bridge.py is not installed beside ble (\(name)); give its path with --bridge")
    }

    static func start(python: String, script: String, grpcPort: UInt16, controlPort: UInt16, token: String) throws -> PandoraBridgeProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, script, "--port", String(grpcPort), "--control", String(controlPort)]
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

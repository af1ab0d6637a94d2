import BLE
import Foundation
import XCTest

/// A bond writer killed with SIGKILL at random moments leaves every bond file old or new,
/// never torn (PrivateFiles: temporary file, fsync, rename, fsync of the directory).
final class BondStoreCrashTests: XCTestCase {
    func testKillingAWriterAtRandomPointsNeverLeavesATornBond() throws {
        let writer = try BLETool.executableURL(named: "ble-bond-writer")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ble-crash-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var generator = SystemRandomNumberGenerator()
        var lastSeen: [DeviceAddress: UInt32] = [:]
        for round in 0..<25 {
            let process = Process()
            process.executableURL = writer
            process.arguments = [dir]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            // Let it write a random number of bonds (an explicit event: its "wrote N" lines),
            // then kill it wherever it is.
            let target = Int.random(in: 1...40, using: &generator)
            var seen = 0
            var buffer = Data()
            let handle = pipe.fileHandleForReading
            while seen < target {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                seen = buffer.split(separator: UInt8(ascii: "\n")).count
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            XCTAssertGreaterThanOrEqual(seen, target, "round \(round): the writer stopped early")

            let store = try DirectoryBondStore(directory: dir)
            let bonds = try store.bonds()
            XCTAssertEqual(store.problems(), [], "round \(round): a torn or unreadable bond")
            XCTAssertFalse(bonds.isEmpty)
            for b in bonds {
                // Whole: the keys agree with the counter they were written with, and counters
                // never go backwards across kills.
                let n = b.localSignCounter
                XCTAssertEqual(b.peerLongTermKey, (0..<16).map { UInt8(truncatingIfNeeded: n &+ UInt32($0)) }, "round \(round)")
                XCTAssertEqual(b.clientConfigurations.count, Int(n % 40), "round \(round)")
                XCTAssertGreaterThanOrEqual(n, lastSeen[b.peer] ?? 0, "round \(round): an older bond came back")
                lastSeen[b.peer] = n
            }
            _ = try store.localIdentity()
        }
        // Temporary files of killed writers are cleaned up when the store opens.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix(".") }
        XCTAssertEqual(leftovers, [])
    }
}

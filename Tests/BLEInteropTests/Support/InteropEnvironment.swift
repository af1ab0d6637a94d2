import Foundation
import Synchronization
import XCTest

/// Where the interop rig is: rootcanal's HCI port, the venv's Python and the Bumble peer scripts.
///
/// `scripts/test.sh` starts rootcanal on free loopback ports and exports
/// `BLE_TEST_ROOTCANAL=tcp:127.0.0.1:PORT`, `BLE_TEST_PYTHON=/abs/.venv/bin/python` and
/// `BLE_TEST_PEERS=/abs/Tests/BLEInteropTests/peers`. A plain `swift test` has none of them, and
/// the interop tests then skip with a message that says how to run them.
struct InteropEnvironment: Sendable {
    /// The value of `BLE_TEST_ROOTCANAL` as given, e.g. `tcp:127.0.0.1:40123` (the transport spec
    /// the Swift stack's `TransportSpec` parses).
    let rootcanal: String
    let host: String
    let port: UInt16
    /// The venv's Python, which has Bumble installed.
    let python: URL
    /// The directory that holds the peer scripts (`peripheral.py`, …).
    let peers: URL

    /// The same controller port as a Bumble transport spec, for `--transport`.
    var bumbleTransport: String { "tcp-client:\(host):\(port)" }

    /// The peer script `name` (e.g. `"peripheral.py"`) in ``peers``.
    func peerScript(_ name: String) -> URL { peers.appendingPathComponent(name) }

    /// The repository root, found from this file's path (used for defaults only).
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // BLEInteropTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    enum ConfigurationError: Error, CustomStringConvertible {
        case malformedRootcanal(String)
        case missingFile(variable: String, path: String)

        var description: String {
            switch self {
            case .malformedRootcanal(let value):
                return "BLE_TEST_ROOTCANAL=\(value) is not of the form tcp:HOST:PORT"
            case .missingFile(let variable, let path):
                return "\(variable): \(path) does not exist (run the tests with scripts/test.sh)"
            }
        }
    }

    /// Reads the environment. Throws `XCTSkip` when `BLE_TEST_ROOTCANAL` is unset, and a
    /// ``ConfigurationError`` when a variable is set but wrong.
    static func current(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> InteropEnvironment {
        guard let spec = environment["BLE_TEST_ROOTCANAL"], !spec.isEmpty else {
            throw XCTSkip("""
                interop test skipped: BLE_TEST_ROOTCANAL is not set. Run `scripts/test.sh` \
                (it starts rootcanal and sets BLE_TEST_ROOTCANAL, BLE_TEST_PYTHON, BLE_TEST_PEERS).
                """)
        }
        let parts = spec.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, parts[0] == "tcp", !parts[1].isEmpty, let port = UInt16(parts[2]),
            port != 0
        else { throw ConfigurationError.malformedRootcanal(spec) }

        let python = URL(fileURLWithPath: environment["BLE_TEST_PYTHON"]
            ?? repositoryRoot.appendingPathComponent(".venv/bin/python").path)
        let peers = URL(fileURLWithPath: environment["BLE_TEST_PEERS"]
            ?? repositoryRoot.appendingPathComponent("Tests/BLEInteropTests/peers").path)
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw ConfigurationError.missingFile(variable: "BLE_TEST_PYTHON", path: python.path)
        }
        guard FileManager.default.fileExists(atPath: peers.appendingPathComponent("peer_common.py").path)
        else { throw ConfigurationError.missingFile(variable: "BLE_TEST_PEERS", path: peers.path) }
        return InteropEnvironment(rootcanal: spec, host: parts[1], port: port, python: python, peers: peers)
    }

    /// A static random address no other call in any running test process returns.
    ///
    /// Every device on one rootcanal needs its own address: two devices with the same one break
    /// both (scans stop seeing them). Layout (Core spec Vol 6 Part B §1.3.2.1: the two most
    /// significant bits of a static address are 1): `11` + 22 bits of the process ID (Linux PIDs
    /// fit in 22 bits) + a 24-bit per-process counter starting at 1, so the random part is
    /// never all zeros or all ones.
    static func nextStaticRandomAddress() -> StaticRandomAddress {
        while true {
            let count = UInt64(addressCounter.withLock { n in n &+= 1; return n } & 0xFF_FFFF)
            let pid = UInt64(UInt32(bitPattern: ProcessInfo.processInfo.processIdentifier) & 0x3F_FFFF)
            let value: UInt64 = (0b11 << 46) | (pid << 24) | count
            let address = StaticRandomAddress(value: value)
            // Bumble's own tools (bumble-scan, bumble-gatt-dump) default to F0:F1:F2:F3:F4:F5.
            if count != 0, count != 0xFF_FFFF, address.description != "F0:F1:F2:F3:F4:F5" {
                return address
            }
        }
    }

    private static let addressCounter = Mutex<UInt32>(0)
}

/// A static random device address, most significant byte first as people write it.
struct StaticRandomAddress: Hashable, Sendable, CustomStringConvertible {
    /// Six bytes, most significant first (`C4` in `C4:12:34:56:78:9A`).
    let bytes: [UInt8]

    init(value: UInt64) {
        bytes = (0..<6).map { UInt8(truncatingIfNeeded: value >> (8 * (5 - $0))) }
    }

    init?(_ text: String) {
        let parts = text.split(separator: ":")
        guard parts.count == 6 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
            bytes.append(byte)
        }
        guard bytes[0] & 0xC0 == 0xC0 else { return nil }
        self.bytes = bytes
    }

    /// The order BD_ADDR travels in on the wire (HCI, advertising PDUs).
    var littleEndianBytes: [UInt8] { bytes.reversed() }

    var description: String { bytes.map { String(format: "%02X", $0) }.joined(separator: ":") }
}


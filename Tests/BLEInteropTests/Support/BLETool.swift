import Foundation
import XCTest

/// Runs the package's `ble` command-line tool, as built next to the test bundle.
///
/// `swift build --build-tests` (which scripts/test.sh runs first) builds `ble` into the same
/// products directory as the test bundle, e.g. `.build/x86_64-unknown-linux-gnu/debug/`.
enum BLETool {
    enum LocateError: Error, CustomStringConvertible {
        case notFound([String])
        var description: String {
            "the `ble` executable was not found (build it with `swift build`); looked in:\n  "
                + { if case .notFound(let paths) = self { return paths.joined(separator: "\n  ") } else { return "" } }()
        }
    }

    /// The `ble` executable: `$BLE_TEST_BLE_EXECUTABLE` if set, else the first `ble` found in the
    /// directory of the test bundle / test process, else `<repo>/.build/debug/ble`.
    static func executableURL(named name: String = "ble") throws -> URL {
        let environment = ProcessInfo.processInfo.environment
        if name == "ble", let explicit = environment["BLE_TEST_BLE_EXECUTABLE"], !explicit.isEmpty {
            return URL(fileURLWithPath: explicit)
        }
        var directories: [URL] = []
        // macOS: the .xctest bundle sits in the products directory.
        directories.append(Bundle(for: BundleToken.self).bundleURL.deletingLastPathComponent())
        // Linux: the test runner is the `<Package>PackageTests.xctest` executable in it.
        directories.append(Bundle.main.bundleURL)
        directories.append(Bundle.main.bundleURL.deletingLastPathComponent())
        if let executable = Bundle.main.executableURL {
            directories.append(executable.deletingLastPathComponent())
        }
        if let first = CommandLine.arguments.first {
            directories.append(URL(fileURLWithPath: first).deletingLastPathComponent())
        }
        directories.append(InteropEnvironment.repositoryRoot.appendingPathComponent(".build/debug"))

        var looked: [String] = []
        for directory in directories {
            let candidate = directory.appendingPathComponent(name).standardizedFileURL
            if looked.contains(candidate.path) { continue }
            looked.append(candidate.path)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory),
                !isDirectory.boolValue, FileManager.default.isExecutableFile(atPath: candidate.path)
            {
                return candidate
            }
        }
        throw LocateError.notFound(looked)
    }

    /// Runs `ble arguments…` and blocks until it exits or `timeout` passes.
    static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        input: Data? = nil,
        timeout: TimeInterval = 30
    ) throws -> ProcessResult {
        try ProcessRunner.run(try executableURL(), arguments: arguments, environment: environment,
                              input: input, timeout: timeout)
    }

    /// Runs `ble arguments…` without holding a cooperative-pool thread.
    static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        input: Data? = nil,
        timeout: TimeInterval = 30
    ) async throws -> ProcessResult {
        try await ProcessRunner.run(try executableURL(), arguments: arguments, environment: environment,
                                    input: input, timeout: timeout)
    }
}

private final class BundleToken {}

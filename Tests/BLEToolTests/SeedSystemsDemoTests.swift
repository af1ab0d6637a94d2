import BLEVirtual
import Foundation
import XCTest
import BLESystems
import BLETestSupport

/// `ble demo`'s flow in-process, in virtual time: every demo peripheral is found, each seed
/// system's central flow runs, and the fetched image comes back byte for byte.
final class SeedSystemsDemoTests: XCTestCase {
    func testTheDemoRunsEverySeedSystem() async throws {
        let directory = try temporaryDirectory(for: self).path
        let image = directory + "/demo-image.ppm"
        let saved = directory + "/received-image.ppm"
        let original = Data(SeedSystemsDemo.gradientImage(width: 64, height: 48))
        try original.write(to: URL(fileURLWithPath: image))
        let served = try ServedDirectory(directory)
        let out = Collected<String>()
        try await VirtualWorld.run { world in
            try await SeedSystemsDemo.run(in: world, image: image, saveTo: saved, served: served, output: out.append)
        }
        let text = out.all.joined(separator: "\n")
        for name in ["EchoServer", "M5Stack", "HRM", "BLE001", "Battery", "TestDevice"] {
            XCTAssertTrue(out.all.contains { $0.hasPrefix("found       \(name) ") }, "\(name) found:\n\(text)")
        }
        for expected in ["echo        You said: hello from the demo", "identical to the original", "location    Chest",
                         "measurement 60 bpm", "done: 6 peripherals found"] {
            XCTAssertTrue(text.contains(expected), "missing \"\(expected)\" in:\n\(text)")
        }
        XCTAssertEqual(out.all.filter { $0.hasPrefix("sample      x") }.count, 5, "five accelerometer samples")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: saved)), original)
        // The 64×48 P6 image: a 13-byte header ("P6\n64 48\n255\n") and three bytes a pixel.
        XCTAssertEqual(original.count, 13 + 64 * 48 * 3)
    }
}

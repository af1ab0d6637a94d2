import BLEVirtual
import XCTest

/// The README's virtual-radio example ("The virtual radio in your own tests"), verbatim, with
/// `import BLEVirtual` as the file's only import of this package (as the README tells a user to
/// write), so the example keeps compiling as the API changes, and runs: it is a whole scenario
/// in virtual time.
enum ReadmeVirtualExample {
    static func virtualRadio() async throws {
        try await VirtualWorld.run { world in
            let (manager, device) = try await world.addPeripheralManager(name: "Thermo")
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Thermo").build()) // after any manager.add(_:)
            let (central, _) = try await world.addCentral()
            let found = try await central.find(filter: ScanFilter(nameContains: "Thermo"), timeout: .seconds(10))
            let peripheral = try await central.connect(found.address)
            await world.radio.move(device.id, to: VirtualMedium.Position(x: 1_000, y: 0)) // out of range
            for await state in peripheral.stateUpdates { print(state) } // connected; 4.2 s later, disconnected (Connection Timeout (0x08))
        }
    }
}

final class ReadmeVirtualExampleTests: XCTestCase {
    /// The example ends on its own: found, connected, then the link times out once the
    /// peripheral is out of range and the state stream finishes.
    func testTheReadmeVirtualRadioExampleRunsToItsEnd() async throws {
        try await ReadmeVirtualExample.virtualRadio()
    }

    /// The copy above is the README's: every line of the README's example is in this file, in
    /// order (indentation aside), so an edit to one without the other fails here.
    func testTheExampleIsTheReadmes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try XCTUnwrap(readme.range(of: "### The virtual radio in your own tests"), "the README section")
        let rest = readme[section.upperBound...]
        let start = try XCTUnwrap(rest.range(of: "```swift\n"), "the section's example")
        let end = try XCTUnwrap(rest[start.upperBound...].range(of: "```"), "the example's end")
        let example = rest[start.upperBound..<end.lowerBound].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertGreaterThan(example.count, 5)
        let here = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        var next = here.startIndex
        for line in example {
            guard let found = here[next...].firstIndex(of: line) else {
                return XCTFail("README line not in this file's copy (or out of order): \(line)")
            }
            next = found + 1
        }
    }
}

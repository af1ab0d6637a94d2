import BLEVirtual
import XCTest

/// The virtual-radio example of docs/LIBRARY.md ("The virtual radio in your own tests"), with
/// `import BLEVirtual` as the file's only import of this package (as the page tells a user to
/// write), so the example keeps compiling as the API changes, and runs: it is a whole scenario
/// in virtual time. `DocExamplesTests` checks that every line of the page's example is here.
enum DocVirtualExample {
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

final class DocVirtualExampleTests: XCTestCase {
    /// The example ends on its own: found, connected, then the link times out once the
    /// peripheral is out of range and the state stream finishes.
    func testTheVirtualRadioExampleRunsToItsEnd() async throws {
        try await DocVirtualExample.virtualRadio()
    }
}

@testable import BLE
import BLEHCI
import XCTest

/// `LinkObservation.stateUpdates()` reads the current state and registers its watcher under
/// one lock, so a disconnect that lands while a stream is being opened is never lost.
final class LinkObservationTests: XCTestCase {
    private func link() -> LinkObservation {
        LinkObservation(parameters: LinkParameters(interval: 24, latency: 0, supervisionTimeout: 72))
    }

    func testAStreamOpenedAfterTheDisconnectGivesItAndEnds() async {
        let observation = link()
        observation.update { $0.state = .disconnected(reason: .remoteUserTerminatedConnection) }
        var seen: [ConnectionState] = []
        for await state in observation.stateUpdates() { seen.append(state) }
        XCTAssertEqual(seen, [.disconnected(reason: .remoteUserTerminatedConnection)])
    }

    func testEveryChangeArrivesOnceInOrder() async {
        let observation = link()
        let updates = observation.stateUpdates()
        observation.update { $0.state = .disconnecting }
        observation.update { $0.mtu = 247 } // no state change: nothing yielded
        observation.update { $0.state = .disconnected(reason: .connectionTimeout) }
        var seen: [ConnectionState] = []
        for await state in updates { seen.append(state) }
        XCTAssertEqual(seen, [.connected, .disconnecting, .disconnected(reason: .connectionTimeout)])
    }
}

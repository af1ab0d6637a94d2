import BLEVirtual
import XCTest

/// `VirtualRadio.setPropagation` is a fault like `move`: a model in which the two ends of a
/// link no longer hear each other loses the link at its supervision timeout, counted from the
/// change, even in a world where nothing else would wake the radio.
final class PropagationChangeWorldTests: XCTestCase {
    func testAPropagationOutOfRangeEndsTheLinkAtItsSupervisionTimeout() async throws {
        try await assertLinkLostAtTheSupervisionTimeout(quietBeforeTheChange: .zero)
    }

    /// The same after 10 s in which the radio heard nothing: the supervision timeout counts from
    /// the change, not from the last thing the radio handled.
    func testTheTimeoutCountsFromTheChangeAfterAQuietSpell() async throws {
        try await assertLinkLostAtTheSupervisionTimeout(quietBeforeTheChange: .seconds(10))
    }

    private func assertLinkLostAtTheSupervisionTimeout(quietBeforeTheChange quiet: Duration,
                                                       file: StaticString = #filePath, line: UInt = #line) async throws {
        let (reason, elapsed) = try await VirtualWorld.run { world -> (HCIStatus?, Duration?) in
            let (manager, _) = try await world.addPeripheralManager(name: "Faint")
            try await manager.startAdvertising(AdvertisingData.Builder().localName("Faint").build())
            let (central, _) = try await world.addCentral()
            let found = try await central.find(filter: ScanFilter(nameContains: "Faint"), timeout: .seconds(10))
            let peripheral = try await central.connect(found.address)
            // Nothing left to wake the radio but the loss itself.
            try await manager.stopAdvertising()
            try await world.clock.sleep(for: quiet)
            var deaf = VirtualMedium.Propagation()
            deaf.sensitivity = 100
            let changed = world.clock.now()
            await world.radio.setPropagation(deaf)
            // Bounded in virtual time: without the loss the world jumps to this sleep.
            return await withTaskGroup(of: (HCIStatus?, Duration?).self) { group in
                group.addTask {
                    for await state in peripheral.stateUpdates {
                        if case let .disconnected(reason) = state { return (reason, world.clock.now() - changed) }
                    }
                    return (nil, world.clock.now() - changed)
                }
                group.addTask {
                    try? await world.clock.sleep(for: .seconds(60))
                    return (nil, nil)
                }
                let first = await group.next() ?? (nil, nil)
                group.cancelAll()
                await central.close()
                await manager.close()
                return first
            }
        }
        XCTAssertEqual(reason, .connectionTimeout, "the link was lost, not left up", file: file, line: line)
        let timeout = try XCTUnwrap(elapsed, "the link was still up 60 s after the change", file: file, line: line)
        XCTAssertEqual(timeout, .milliseconds(4_200), "at the supervision timeout (default 420 × 10 ms) after the change", file: file, line: line)
    }
}

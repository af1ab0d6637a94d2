@testable import BLE
import BLEHCI
import BLETestSupport

/// Our peripheral behind the fake controller, as the peripheral-role host tests set it up.
extension HostUnderTest {
    /// Starts the controller and opens our peripheral at the static random address `own`, its
    /// bonds in `store`; `configure` changes anything else of the configuration.
    func openPeripheral(own: BDAddress, store: any BondStore,
                        configure: (inout HostConfiguration) -> Void = { _ in }) async throws -> PeripheralManager {
        await controller.start()
        var config = HostConfiguration()
        config.security.bondStore = store
        configure(&config)
        return try await PeripheralManager.open(transport: hostEnd, address: .staticRandom(own), configuration: config)
    }

    /// A central at `peer` connects to our peripheral: the controller's LE Connection Complete
    /// for link `handle`.
    func centralConnects(from peer: DeviceAddress, handle: UInt16) async {
        await controller.sendNow(.le(.connectionComplete(LEConnectionComplete(
            status: .success, handle: handle, role: .peripheral, peer: peer, interval: 24, latency: 0,
            supervisionTimeout: 400, centralClockAccuracy: 0, format: .legacy))))
    }
}

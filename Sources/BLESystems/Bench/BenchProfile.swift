import BLE
import BLEWire

/// What bumble-bench (Bumble 0.0.236, `apps/bench.py`) and `ble bench` agree on, so either end
/// of a run can be either tool: the GATT service, the L2CAP channel, the default names and
/// addresses and the pauses around a run.
public enum BenchProfile {
    /// The speed service.
    public static let service = BluetoothUUID(string: "50DB505C-8AC4-4738-8448-3B1D9CC09CC5")!
    /// TX: the client writes its packets here (bumble-bench writes without response).
    public static let tx = BluetoothUUID(string: "E789C754-41A1-45F4-A948-A0A1A90DBA53")!
    /// RX: the server notifies its packets here.
    public static let rx = BluetoothUUID(string: "016A2CC7-E14B-4819-935F-1F56EAE4098D")!

    /// The L2CAP modes' SPSM (128 = 0x80, the first dynamic one).
    public static let psm: UInt16 = 128
    /// The L2CAP modes' channel parameters: MTU 1024, MPS 1024, 128 credits.
    public static let channelParameters = CreditBasedChannelParameters(mtu: 1024, mps: 1024, initialCredits: 128)

    /// The central's name and static random address.
    public static let centralName = "Speed Central"
    public static let centralAddress = BDAddress(rawValue: 0xF0F0_F0F0_F0F0)
    /// The peripheral's name and static random address, which the central connects to by default.
    public static let peripheralName = "Speed Peripheral"
    public static let peripheralAddress = BDAddress(rawValue: 0xF1F1_F1F1_F1F1)

    /// How long the central waits after connecting before it starts (bumble-bench: some
    /// controllers stumble when data flows while the link's parameters are still being updated).
    public static let postConnectionWait: Duration = .seconds(1)
    /// How long each side stays after its run before it disconnects or exits, so the last
    /// packets and the ack get through.
    public static let lingerTime: Duration = .seconds(1)

    /// The service as bumble-bench's GATT server lays it out: TX writable (with or without
    /// response; bumble-bench's client writes without), RX notifying. The values are the
    /// server's to keep, so every write reaches the application in order as an event.
    public static var serviceDefinition: GATTServiceDefinition {
        GATTServiceDefinition(uuid: service, characteristics: [
            GATTCharacteristicDefinition(uuid: tx, properties: [.write, .writeWithoutResponse], permissions: [.write], value: []),
            GATTCharacteristicDefinition(uuid: rx, properties: [.notify], permissions: [], value: []),
        ])
    }
}

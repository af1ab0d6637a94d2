import BLE
import BLEHCI
import Synchronization

/// The controller end of `ble-bench scan`: an `HCITransport` that answers the host's commands
/// at once, as a conforming LE controller does (Core spec Vol 4 Part E §7), and lets the
/// benchmark put HCI event frames straight into the host's incoming queue. No radio, no
/// tasks, no copies: what the host does with the frames is all that is measured.
///
/// Frames reach the host through an `HCIFrameQueue`, as from the in-process transports
/// (`InMemoryTransport`, the virtual radio): the host's reader takes a whole injected burst per
/// wake-up, and commands are answered from the host's own turn (`sendImmediately`).
final class BenchController: HCITransport {
    let description = "ble-bench controller"
    private let queue = HCIFrameQueue()
    var incomingQueue: HCIFrameQueue? { queue }
    let incoming: AsyncThrowingStream<H4Frame, any Error>
    /// Called once, when the host turns scanning on (LE Set Scan Enable with Enable 1).
    private let onScanEnabled: Mutex<(@Sendable () -> Void)?>

    /// A controller that calls `onScanEnabled` when the host first enables scanning.
    init(onScanEnabled: @escaping @Sendable () -> Void) {
        incoming = queue.stream()
        self.onScanEnabled = Mutex(onScanEnabled)
    }

    /// Puts `frames` into the host's incoming queue, in order, as one burst.
    func inject(_ frames: ArraySlice<H4Frame>) {
        queue.push(contentsOf: frames)
    }

    /// Answering takes no lock the host could be waiting on and never suspends.
    var acceptsImmediateSends: Bool { true }

    func sendImmediately(_ frame: H4Frame) throws {
        guard frame.type == .command, let command = try? HCICommand.decode(frame.payload) else { return }
        queue.push(HCIEvent.commandComplete(numHCICommandPackets: 1, opcode: command.opcode,
                                            returnParameters: [0x00] + Self.returnParameters(command.opcode)).h4Frame)
        // Scanning on, by the legacy or (it lists every command) the extended command.
        if command.opcode == .leSetScanEnable || command.opcode == .leSetExtendedScanEnable, command.parameters.first == 1 {
            onScanEnabled.withLock { callback -> (@Sendable () -> Void)? in
                defer { callback = nil }
                return callback
            }?()
        }
    }

    func send(_ frame: H4Frame) async throws {
        try sendImmediately(frame)
    }

    func close() async {
        queue.close()
    }

    /// The return parameters after the status byte: an LE-only controller with v1 buffer sizes.
    private static func returnParameters(_ opcode: HCIOpcode) -> [UInt8] {
        switch opcode {
        case .readLocalVersionInformation: return [0x0C, 0x00, 0x00, 0x0C, 0xF1, 0x05, 0x00, 0x00]
        case .readLocalSupportedCommands:
            var octets = [UInt8](repeating: 0xFF, count: 64)
            octets[41] &= ~(1 << 5) // no LE Read Buffer Size v2: the host falls back to v1
            return octets
        case .readLocalSupportedFeatures: return [0, 0, 0, 0, 0x60, 0, 0, 0]
        case .readBDADDR: return [0x01, 0x00, 0x00, 0xB0, 0x5A, 0x00]
        case .leReadBufferSizeV1: return [251, 0, 8]
        case .leReadLocalSupportedFeatures: return [0x01, 0, 0, 0, 0, 0, 0, 0]
        case .leReadResolvingListSize: return [8]
        default: return []
        }
    }
}

import BLE
import BLEHCI
import Synchronization

/// The controller end of `ble-bench scan`: an `HCITransport` that answers the host's commands
/// at once, as a conforming LE controller does (Core spec Vol 4 Part E §7), and lets the
/// benchmark put HCI event frames straight into the host's incoming stream. No radio, no
/// tasks, no copies: what the host does with the frames is all that is measured.
final class BenchController: HCITransport {
    let description = "ble-bench controller"
    let incoming: AsyncThrowingStream<H4Frame, any Error>
    private let continuation: AsyncThrowingStream<H4Frame, any Error>.Continuation
    /// Called once, when the host turns scanning on (LE Set Scan Enable with Enable 1).
    private let onScanEnabled: Mutex<(@Sendable () -> Void)?>

    /// A controller that calls `onScanEnabled` when the host first enables scanning.
    init(onScanEnabled: @escaping @Sendable () -> Void) {
        (incoming, continuation) = AsyncThrowingStream.makeStream(of: H4Frame.self, throwing: (any Error).self)
        self.onScanEnabled = Mutex(onScanEnabled)
    }

    /// Puts `frames` into the host's incoming stream, in order.
    func inject(_ frames: ArraySlice<H4Frame>) {
        for frame in frames { continuation.yield(frame) }
    }

    func send(_ frame: H4Frame) async throws {
        guard frame.type == .command, let command = try? HCICommand.decode(frame.payload) else { return }
        continuation.yield(HCIEvent.commandComplete(numHCICommandPackets: 1, opcode: command.opcode,
                                                    returnParameters: [0x00] + Self.returnParameters(command.opcode)).h4Frame)
        if command.opcode == .leSetScanEnable, command.parameters.first == 1 {
            onScanEnabled.withLock { callback -> (@Sendable () -> Void)? in
                defer { callback = nil }
                return callback
            }?()
        }
    }

    func close() async {
        continuation.finish()
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

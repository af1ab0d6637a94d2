import BLE
import BLEProfiles
import Synchronization

/// Renders the central's events for `ble accel` and records the session for --plot.
public final class AccelerometerOutput: Sendable {
    /// Where the events go: the live chart, plain lines, or JSON lines (samples only on stdout).
    public let mode: OutputMode
    private let state = Mutex(AccelerometerRecording())

    /// An output in `mode` with an empty recording.
    public init(mode: OutputMode) { self.mode = mode }

    /// Every sample so far: what `--plot` draws.
    public var recording: AccelerometerRecording { state.withLock { $0 } }

    /// Records and shows one event; pass it as the central's `emit`.
    public func handle(_ event: AccelerometerCentralEvent) {
        let recording = state.withLock { r -> AccelerometerRecording in
            r.record(event)
            return r
        }
        switch (mode, event) {
        case let (.json, .sample(s, _)):
            print(AccelerometerLines.json(s))
            flushOutput()
        case (.json, _):
            AccelerometerLines.lines(for: event).forEach(TerminalScreen.note)
        case (.live, .sample):
            TerminalScreen.draw(recording.screen(width: TerminalScreen.width, height: 20, colors: true))
        case (.live, .subscribed):
            print("\u{1B}[2J", terminator: "")
            TerminalScreen.draw(recording.screen(width: TerminalScreen.width, height: 20, colors: true))
        case (.live, _), (.plain, _):
            AccelerometerLines.lines(for: event).forEach { print($0) }
            flushOutput()
        }
    }
}

extension AccelerometerOutput {
    /// One `ble accel` session: opens a central with `open`, runs the charting central on it
    /// into this output, and closes it. `plot` is handed the session's SVG however that ends
    /// (`--plot` "is written in every case"): after the last sample, after a failure, and with
    /// no samples at all when the controller cannot even be opened.
    public func chart(opening open: () async throws -> Central, options: AccelerometerCentralOptions,
                      pick: AccelerometerCentral.Picker?, plot: ((String) throws -> Void)?) async throws {
        do {
            let central = try await open()
            do {
                try await AccelerometerCentral(central: central, options: options, pick: pick, emit: handle).run()
            } catch {
                await central.close()
                throw error
            }
            await central.close()
        } catch {
            try? plot?(recording.svg())
            throw error
        }
        try plot?(recording.svg())
    }
}

import BLERuntime
import BLE
import Synchronization

/// Renders the monitor's events for `ble heart-rate`: the live screen, plain lines, or JSON.
public final class HeartRateMonitorOutput: Sendable {
    /// Where the events go: the live screen, plain lines or JSON lines.
    public let mode: OutputMode
    /// The host's clock: what the live screen ages the monitors by.
    public let clock: any BLEClock
    private let screen: Mutex<(view: HeartRateMonitorScreen, drawn: Duration?)>

    /// Redraws for ticks and repeated hearings at most this often.
    public static let redrawInterval: Duration = .milliseconds(250)

    /// An output in `mode`; `minimumRSSI` is the gate the live screen states.
    public init(mode: OutputMode, minimumRSSI: Int, clock: any BLEClock) {
        self.mode = mode
        self.clock = clock
        screen = Mutex((HeartRateMonitorScreen(minimumRSSI: minimumRSSI), nil))
    }

    /// Shows one event; pass it as the monitor's `emit`.
    public func handle(_ event: HeartRateMonitorEvent) {
        switch mode {
        case .json:
            switch event {
            case let .measurement(m, _):
                print(HeartRateMonitorLines.json(m))
                flushOutput()
            case let .refused(d, minimum):
                TerminalScreen.note(HeartRateMonitorLines.refusal(d, minimumRSSI: minimum))
            case .disconnected, .malformed:
                HeartRateMonitorLines.lines(for: event).forEach(TerminalScreen.note)
            default:
                break
            }
        case .plain:
            let lines = HeartRateMonitorLines.lines(for: event)
            guard !lines.isEmpty else { return }
            lines.forEach { print($0) }
            flushOutput()
        case .live:
            let now = clock.now()
            let lines = screen.withLock { s -> [String]? in
                s.view.apply(event, now: now)
                let routine: Bool
                switch event {
                case .tick, .device(.updated): routine = true
                default: routine = false
                }
                if routine, let drawn = s.drawn, now - drawn < Self.redrawInterval { return nil }
                s.drawn = now
                return s.view.lines(width: TerminalScreen.width)
            }
            if let lines { TerminalScreen.draw(lines) }
        }
    }

    /// Leaves the last screen in place.
    public func finish() {
        guard mode == .live else { return }
        let lines = screen.withLock { $0.view.lines(width: TerminalScreen.width) }
        TerminalScreen.draw(lines)
    }
}

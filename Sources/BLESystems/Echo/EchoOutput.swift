#if canImport(Glibc)
import Glibc
#endif
import BLE
import BLEProfiles
import BLEWire
import Synchronization

/// How `ble echo` and `ble fetch` show the S1 flow: one line per state change (docs/SYSTEMS.md S1's
/// states), and, while a large reply arrives, a progress bar with bytes/s on a terminal or a line
/// per tenth of the reply otherwise. With `--json` it shows nothing; the command prints its one
/// result object.
public final class EchoOutput: Sendable {
    private struct Progress {
        var shown = -1
        var barDrawn = false
    }

    private let quiet: Bool
    private let terminal: Bool
    private let progress = Mutex(Progress())

    /// A printer for `--json` (silent) or for people (lines, and a bar when stdout is a terminal).
    public init(json: Bool) {
        quiet = json
        terminal = !json && isatty(1) == 1
    }

    /// Prints what `event` says; pass it as the flow's `report` (`EchoCentral.exchange`).
    public func show(_ event: EchoCentralEvent) {
        guard !quiet else { return }
        switch event {
        case .poweredOn:
            line("poweredOn", "")
        case let .scanning(service, timeout):
            line("scanning", "for \(service), up to \(NumberText.spacedSeconds(timeout))")
        case let .discovered(name, address, rssi):
            line("discovered", "\(name ?? "(unnamed)")  \(address)  rssi \(rssi.map(String.init) ?? "?")")
        case let .connecting(address, timeout):
            line("connecting", "\(address), up to \(NumberText.spacedSeconds(timeout))")
        case let .connected(mtu, length):
            line("connected", "ATT MTU \(mtu), writes of up to \(length) bytes, notifications on")
        case let .sending(code, bytes, writes):
            line("sending", "\(code) frame, \(bytes) bytes in \(writes) write\(writes == 1 ? "" : "s")")
        case let .receiving(received, total, elapsed):
            showProgress(received: received, total: total, elapsed: elapsed)
        case let .reply(frame, notifications, elapsed):
            clearBar()
            var text = "\(frame.code) frame, \(frame.body.count) bytes in \(notifications) notification\(notifications == 1 ? "" : "s")"
            if frame.code == .image { text += ", \(NumberText.spacedSeconds(elapsed))" + (rate(frame.body.count, elapsed).map { ", \($0)" } ?? "") }
            line("reply", text)
        case .closed:
            line("closed", "")
        }
    }

    private func line(_ label: String, _ text: String) {
        print(text.isEmpty ? label : NumberText.left(label, 12) + text)
        flushOutput()
    }

    /// A bar redrawn in place per percent on a terminal; otherwise a line per 10 %.
    private func showProgress(received: Int, total: Int, elapsed: Duration) {
        guard total > 0 else { return }
        let percent = min(100, received * 100 / total)
        // On a terminal every percent; otherwise each tenth, from the first full tenth on.
        let step = terminal ? percent : percent / 10 * 10
        guard terminal || step > 0 else { return }
        let due = progress.withLock { p -> Bool in
            guard step > p.shown else { return false }
            p.shown = step
            p.barDrawn = p.barDrawn || terminal
            return true
        }
        guard due else { return }
        let speed = rate(received, elapsed).map { "  \($0)" } ?? ""
        if terminal {
            let filled = percent * 30 / 100
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled)
            print("\r[\(bar)] \(NumberText.right(String(percent), 3))%  \(received)/\(total) bytes\(speed)\u{1B}[K", terminator: "")
            flushOutput()
        } else {
            line("receiving", "\(received) of \(total) bytes (\(step) %)\(speed)")
        }
    }

    private func clearBar() {
        if progress.withLock({ $0.barDrawn }) {
            print("\r\u{1B}[K", terminator: "")
        }
    }

    /// "12.3 kB/s", from the host clock's elapsed time since the first notification (nil in
    /// the first tenth of a second, when one notification would make any rate meaningless).
    private func rate(_ bytes: Int, _ elapsed: Duration) -> String? {
        let (whole, atto) = elapsed.components
        let secondsElapsed = Double(whole) + Double(atto) / 1e18
        guard secondsElapsed >= 0.1 else { return nil }
        return NumberText.fixed(Double(bytes) / secondsElapsed / 1000, 1) + " kB/s"
    }
}

import BLETestSupport
import Foundation
import XCTest

/// `ble ui --broker` in a real browser, against a real broker: a real mosquitto
/// (`BLE_TEST_MOSQUITTO`), a `ble gateway --hci virtual` publishing the demo peripherals to it,
/// and `ble ui --broker` watching it with no radio of its own. Headless Chromium
/// (peers/browser.py) sees the gateway and the heart-rate monitor on `/gateways`, follows the
/// monitor's link, presses Subscribe (a command to the strongest gateway) and sees the gateway's
/// reply and a heart rate arrive through the broker.
final class UIBrowserBrokerTests: XCTestCase {
    /// `ble ui --broker` as a child process; `address` is the first line it printed.
    final class BrokerUIProcess: @unchecked Sendable {
        /// The child.
        let process = Process()
        /// `http://127.0.0.1:PORT/?token=TOKEN`.
        let address: String

        /// Starts `ble ui --broker broker` on a free loopback port and reads its first line.
        init(broker: String) throws {
            process.executableURL = try BLETool.executableURL()
            process.arguments = ["ui", "--broker", broker, "--listen", "127.0.0.1:0"]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            // The first line, or the end of the output, within a bound.
            let first = SharedValue<String?>(nil)
            let got = DispatchSemaphore(value: 0)
            ProcessEvents.readLines(from: out.fileHandleForReading) { line in
                if first.get() == nil { first.set(line); got.signal() }
            } ended: {
                got.signal()
            }
            _ = got.wait(timeout: .now() + 30)
            guard let line = first.get(), line.hasPrefix("ui: http://127.0.0.1:") else {
                process.terminate()
                process.waitUntilExit()
                throw XCTSkip("ble ui --broker printed no address line")
            }
            address = String(line.dropFirst("ui: ".count))
        }

        /// Ctrl-C, as a person would; SIGKILL after 10 s.
        func stop() {
            if process.isRunning { process.interrupt() }
            if !ProcessEvents.waitForExit(process, timeout: 10) { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    func testTheGatewaysPageShowsTheGatewayAndTheMonitorAndSubscribeBringsItsHeartRate() throws {
        // Skip before any assertion without the interop environment (the browser) or a broker.
        let env = try InteropEnvironment.current()
        let broker = try startMosquitto()
        let gateway = try BLEToolProcess(["gateway", "--hci", "virtual", "--broker", broker.url, "--id", "lab", "--stats-interval", "1"])
        defer { gateway.stop() }
        let ui = try BrokerUIProcess(broker: broker.url)
        defer { ui.stop() }
        // On /gateways: the gateway online and the HRM heard by it, marked strongest; what was
        // seen is kept in sessionStorage across the click to the monitor's screen, where
        // Subscribe is pressed once and the reply and a bpm are waited for.
        let script = ##"""
        (() => { const w = window.__t || (window.__t = {});
          if (location.pathname === "/gateways") {
            const g = document.querySelector('#gateways tbody tr[data-gateway="lab"]');
            const d = document.querySelector('#bk-devices tbody tr[data-address="00:5A:B1:00:00:03"]');
            if (!g || g.dataset.status !== "online" || Number(g.children[2].textContent) < 6 || !d || d.dataset.strongest !== "lab") return false;
            const link = Array.from(d.querySelectorAll("a")).find(a => a.textContent === "Heart rate");
            if (!link) return false;
            sessionStorage.setItem("seen", JSON.stringify({ status: g.dataset.status, gatewayDevices: Number(g.children[2].textContent),
              name: d.querySelector("td.name").textContent, strongest: d.querySelector("td.bk-strongest").textContent,
              marked: Array.from(d.querySelectorAll(".bk-best")).map(e => e.dataset.gateway) }));
            if (!w.clicked) { w.clicked = true; link.click(); }
            return false;
          }
          // Pressed once the page's script has taken the button (it marks the panel).
          const panel = document.getElementById("bk-command"), button = document.getElementById("bk-subscribe");
          if (!panel || panel.dataset.ready !== "yes" || !button) return false;
          if (!w.sent) { w.sent = true; button.click(); }
          return document.getElementById("bk-reply").dataset.ok === "yes" && Number(document.getElementById("hr-bpm").textContent) > 0; })()
        """##
        let shot = FileManager.default.temporaryDirectory.appendingPathComponent("ui-broker-heart-rate.png").path
        let result = try ProcessRunner.run(env.python, arguments: [
            env.peers.appendingPathComponent("browser.py").path, "--url", ui.address, "--until", script, "--timeout", "45",
            "--expr", ##"({ seen: JSON.parse(sessionStorage.getItem("seen") || "null"), path: decodeURIComponent(location.pathname), bpm: Number(document.getElementById("hr-bpm").textContent), reply: document.getElementById("bk-reply").textContent, via: document.getElementById("bk-via").textContent, name: document.getElementById("hr-name").textContent })"##,
            "--screenshot", shot,
        ], environment: [:], input: nil, timeout: 90)
        XCTAssertTrue(result.succeeded, "\(result)")
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], result.stdout)
        let seen = try XCTUnwrap(shown["seen"] as? [String: Any], "\(shown)")
        XCTAssertEqual(seen["status"] as? String, "online")
        XCTAssertEqual(seen["name"] as? String, "HRM")
        XCTAssertEqual(seen["marked"] as? [String], ["lab"], "the one gateway is the strongest")
        XCTAssertTrue((seen["strongest"] as? String)?.hasPrefix("★ lab -") == true, "\(seen)")
        XCTAssertEqual(seen["gatewayDevices"] as? Int, 6, "the demo's six peripherals, heard by the gateway")
        XCTAssertEqual(shown["path"] as? String, "/heart-rate/00:5A:B1:00:00:03/public")
        XCTAssertEqual(shown["name"] as? String, "HRM 00:5A:B1:00:00:03")
        XCTAssertTrue((30...220).contains(shown["bpm"] as? Int ?? 0), "\(shown)")
        XCTAssertTrue((shown["reply"] as? String)?.hasPrefix("lab: subscribe, values on ble/lab/dev/00:5A:B1:00:00:03/2A37") == true, "\(shown)")
        XCTAssertTrue((shown["via"] as? String)?.contains("lab") == true, "\(shown)")
    }
}

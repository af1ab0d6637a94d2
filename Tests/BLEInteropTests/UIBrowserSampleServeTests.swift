import BLE
import BLETestSupport
import Foundation
import XCTest

/// The `/sample` and `/serve` screens in a real browser, and `ble ui` bound to every interface.
extension UIBrowserTests {
    /// The root ("http://127.0.0.1:PORT") and the token of a running `ble ui`.
    func parts(_ ui: UIProcess) -> (root: String, token: String) {
        (String(ui.address.prefix { $0 != "?" }).trimmingCharacters(in: CharacterSet(charactersIn: "/")), String(ui.address.split(separator: "=").last ?? ""))
    }

    /// docs/SYSTEMS.md S2 in the page: Run, and the numbered steps appear as they happen, in the order of
    /// `ble sample`, up to the last.
    func testTheSampleScreenShowsTheStepsInOrderUpToTheLast() throws {
        let ui = try UIProcess()
        defer { ui.stop() }
        let (root, token) = parts(ui)
        let script = ##"""
        (() => { const w = window.__t || (window.__t = {});
          const b = document.getElementById("sample-run"); if (!b) return false;
          if (!w.clicked) { if (b.disabled) return false; w.clicked = true; b.click(); return false; }
          return document.getElementById("sample-steps").dataset.done !== undefined; })()
        """##
        let result = try python("browser.py", [
            "--url", "\(root)/sample?token=\(token)", "--until", script, "--timeout", "120", "--height", "900",
            "--expr", ##"({ done: document.getElementById("sample-steps").dataset.done, steps: Array.from(document.querySelectorAll("#sample-steps li")).map(li => li.dataset.step), labels: Array.from(document.querySelectorAll("#sample-steps .step-label")).map(e => e.textContent), status: document.getElementById("sample-status").textContent })"##,
            "--screenshot", FileManager.default.temporaryDirectory.appendingPathComponent("ui-sample.png").path,
        ], timeout: 150)
        XCTAssertTrue(result.succeeded, "\(result)")
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(shown["done"] as? String, "done", "\(shown)")
        XCTAssertEqual(shown["steps"] as? [String], ["1", "2", "3", "4", "5", "5", "6", "7", "8", "9", "9", "9", "8", ""], "\(shown)")
        XCTAssertEqual((shown["labels"] as? [String])?.last, "disconnected")
        XCTAssertTrue((shown["status"] as? String)?.contains("Write Data") == true, "\(shown)")
    }

    /// A screen's Run, Send, Fetch and Start work only once its script has the form: until
    /// then (a slow link, a script that did not load) they are disabled, so a click or Enter
    /// cannot submit the form natively, which would leave for the page's address without its
    /// query, the token (a 403 page). Each screen's script is kept from loading here, and its
    /// buttons clicked: the page stays where it is.
    func testTheFormsButtonsWaitForTheirScript() throws {
        let ui = try UIProcess()
        defer { ui.stop() }
        let (root, token) = parts(ui)
        for (screen, buttons) in [("sample", ["sample-run"]), ("echo", ["echo-send", "echo-fetch"]), ("serve", ["serve-start"])] {
            let ids = buttons.map { "\"\($0)\"" }.joined(separator: ", ")
            // Three clicks of each, 0.2 s apart, then the page as it is.
            let clicks = """
            (() => { const w = window.__t || (window.__t = { n: 0 });
              const bs = [\(ids)].map(id => document.getElementById(id)); if (bs.some(b => !b)) return false;
              if (w.n < 3) { bs.forEach(b => b.click()); w.n += 1; return false; }
              return true; })()
            """
            let page = "\(root)/\(screen)?token=\(token)"
            let result = try python("browser.py", ["--url", page, "--block", "*/static/\(screen).js*", "--until", clicks, "--timeout", "30",
                                                   "--expr", "({ href: location.href, disabled: [\(ids)].map(id => document.getElementById(id).disabled) })"])
            XCTAssertTrue(result.succeeded, "\(screen): \(result)")
            let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(screen): \(result)")
            XCTAssertEqual(shown["href"] as? String, page, "\(screen): not submitted natively")
            XCTAssertEqual(shown["disabled"] as? [Bool], buttons.map { _ in true }, screen)
        }
    }

    /// `/serve` on rootcanal: the page starts the battery profile on `ble ui`'s controller, a
    /// central of this test connects and reads the level, a page opened then shows that
    /// central and its requests, and Stop ends the profile and the central's link.
    func testTheServeScreenStartsAProfileShowsACentralsRequestsAndStopsIt() async throws {
        let env = try InteropEnvironment.current()
        let ui = try UIProcess(hci: env.rootcanal)
        defer { ui.stop() }
        let (root, token) = parts(ui)
        let page = "\(root)/serve?token=\(token)"
        let start = ##"""
        (() => { const w = window.__t || (window.__t = {});
          const s = document.getElementById("serve-status"), select = document.getElementById("serve-profile");
          if (!w.clicked && s.dataset.state === "stopped" && select.options.length > 0) {
            w.clicked = true; select.value = "battery"; document.getElementById("serve-name").value = "UIBattery"; document.getElementById("serve-start").click();
          }
          return s.dataset.state === "running" && s.dataset.address !== ""; })()
        """##
        let started = try python("browser.py", ["--url", page, "--until", start, "--timeout", "30",
                                                "--expr", ##"document.getElementById("serve-status").dataset.address"##])
        XCTAssertTrue(started.succeeded, "\(started)")
        let text = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(started.stdout.utf8), options: .fragmentsAllowed) as? String)
        let address = try XCTUnwrap(DeviceAddress(string: text), text)

        let central = try await Central.open(spec: env.rootcanal)
        let peripheral = try await central.connect(address, timeout: .seconds(20))
        _ = try? await peripheral.exchangeMTU(247)
        let services = try await peripheral.discoverServices([BluetoothUUID(0x180F)])
        let service = try XCTUnwrap(services.first)
        let characteristics = try await peripheral.discoverCharacteristics(for: service)
        let level = try XCTUnwrap(characteristics.first { $0.uuid == BluetoothUUID(0x2A19) })
        let value = try await peripheral.readValue(for: level)
        XCTAssertEqual(value.count, 1)

        // A page opened now shows the central and what it asked.
        let seen = try python("browser.py", [
            "--url", page, "--timeout", "30", "--height", "900",
            "--until", ##"document.querySelectorAll("#serve-centrals tbody tr td:first-child").length > 0 && document.querySelector("#serve-centrals tbody td").textContent !== "none" && Array.from(document.querySelectorAll("#serve-log li")).some(li => li.dataset.event === "request")"##,
            "--screenshot", FileManager.default.temporaryDirectory.appendingPathComponent("ui-serve.png").path,
        ], timeout: 90)
        XCTAssertTrue(seen.succeeded, "\(seen)")

        let watch = ##"""
        (() => { const w = window.__t || (window.__t = {});
          const rows = Array.from(document.querySelectorAll("#serve-centrals tbody tr td:first-child")).map(td => td.textContent).filter(t => t !== "none");
          const events = Array.from(document.querySelectorAll("#serve-log li")).map(li => li.dataset.event);
          if (!w.stopped) {
            if (rows.length === 0 || !events.includes("request")) return false;
            w.centrals = rows; w.stopped = true; document.getElementById("serve-stop").click(); return false;
          }
          return document.getElementById("serve-status").dataset.state === "stopped"; })()
        """##
        let stopped = try python("browser.py", [
            "--url", page, "--until", watch, "--timeout", "30",
            "--expr", ##"({ centrals: window.__t.centrals, events: Array.from(document.querySelectorAll("#serve-log li")).map(li => li.dataset.event), lines: Array.from(document.querySelectorAll("#serve-log li")).map(li => li.textContent), status: document.getElementById("serve-status").textContent })"##,
        ], timeout: 90)
        XCTAssertTrue(stopped.succeeded, "\(stopped)")
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(stopped.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((shown["centrals"] as? [String])?.count, 1, "\(shown)")
        let events = shown["events"] as? [String] ?? []
        XCTAssertEqual(events.first, "ready", "\(shown)")
        XCTAssertTrue(events.contains("connected") && events.contains("request"), "\(shown)")
        XCTAssertTrue((shown["lines"] as? [String] ?? []).contains { $0.contains("Read Request") || $0.contains("read") }, "\(shown)")
        XCTAssertEqual(events.last, "stopped", "\(shown)")
        XCTAssertEqual(shown["status"] as? String, "not serving")
        // Stopping ended the central's link: its disconnection event, within a bound.
        let reason = await Self.disconnection(of: peripheral, within: .seconds(20))
        XCTAssertNotNil(reason, "the link is still up 20 s after Stop")
        await central.close()
    }

    /// The reason `peripheral`'s link went down, once its state updates say so (they end with
    /// the disconnection); nil if it is still up after `limit`.
    static func disconnection(of peripheral: Peripheral, within limit: Duration) async -> HCIStatus? {
        await result(within: limit) { () -> HCIStatus? in
            for await state in peripheral.stateUpdates {
                if case let .disconnected(reason) = state { return reason }
            }
            return peripheral.disconnectReason
        } ?? nil
    }

    /// An `--allow-host` that is not a host name (a port in it, a space) is a usage error
    /// before anything starts.
    func testAnAllowHostThatIsNotAHostNameIsAUsageError() throws {
        for bad in ["pi.local:8765", "cafe:80", "a b", "", "::::", "1:2:3", "[::1]:8765"] {
            let r = try ProcessRunner.run(try BLETool.executableURL(), arguments: ["ui", "--hci", "virtual", "--allow-host", bad], timeout: 30)
            XCTAssertNotEqual(r.status, 0, "\(r)")
            XCTAssertTrue(r.stderr.contains("--allow-host expects a host name or address without a port"), "\(r)")
        }
    }

    /// `--listen 0.0.0.0:0`: a warning on stderr that the page is reachable in cleartext, and
    /// the Host may be a loopback name or an `--allow-host` name, still nothing else.
    func testAWildcardListenWarnsAndAnswersTheAllowedNames() throws {
        // Skip before any assertion: the probes need the interop environment, and an XCTSkip
        // thrown inside an XCTAssert autoclosure is counted as a failure.
        _ = try InteropEnvironment.current()
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("ble-ui-stderr-\(UUID().uuidString)")
        XCTAssertTrue(FileManager.default.createFile(atPath: log.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: log) }
        let errors = try FileHandle(forWritingTo: log)
        let ui = try UIProcess(arguments: ["--allow-host", "pi.example"], listen: "0.0.0.0:0", errors: errors)
        defer { ui.stop() }
        func status(_ host: String) throws -> String {
            let r = try python("http_probe.py", ["--port", String(ui.port), "--request", "GET /api/devices?token=\(parts(ui).token) HTTP/1.1\\r\\nHost: \(host)\\r\\n\\r\\n"], timeout: 30)
            XCTAssertTrue(r.succeeded, "\(r)")
            return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        XCTAssertEqual(try status("pi.example:{port}"), "HTTP/1.1 200 OK")
        XCTAssertEqual(try status("127.0.0.1:{port}"), "HTTP/1.1 200 OK")
        XCTAssertEqual(try status("rebound.example:{port}"), "HTTP/1.1 421 Misdirected Request")
        XCTAssertEqual(try status("0.0.0.0:{port}"), "HTTP/1.1 421 Misdirected Request")
        ui.stop()
        try errors.close()
        let warning = try String(contentsOf: log, encoding: .utf8)
        XCTAssertTrue(warning.contains("warning: listening on 0.0.0.0:\(ui.port), reachable from the network in cleartext"), warning)
        XCTAssertTrue(warning.contains("pi.example:\(ui.port)"), warning)
    }
}

extension UIBrowserTests {
    /// Bad input to the new screens' API gets 400 or 409 saying so, HEAD of an event stream a
    /// head, and the server goes on serving.
    func testBadInputToSampleAndServeIsRefusedAndTheServerGoesOn() throws {
        // Skip before any assertion: the probes need the interop environment, and an XCTSkip
        // thrown inside an XCTAssert autoclosure is counted as a failure.
        _ = try InteropEnvironment.current()
        let ui = try UIProcess()
        defer { ui.stop() }
        let token = parts(ui).token
        func status(_ request: String) throws -> String {
            let r = try python("http_probe.py", ["--port", String(ui.port), "--request", request], timeout: 30)
            XCTAssertTrue(r.succeeded, "\(r)")
            return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func post(_ path: String, _ body: String) -> String {
            "POST \(path) HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\nX-BLE-Token: \(token)\\r\\nContent-Length: \(body.utf8.count)\\r\\n\\r\\n\(body)"
        }
        XCTAssertEqual(try status(post("/api/serve/start", "{")), "HTTP/1.1 400 Bad Request")
        XCTAssertEqual(try status(post("/api/serve/start", "{\"profile\":\"nope\"}")), "HTTP/1.1 400 Bad Request")
        XCTAssertEqual(try status(post("/api/serve/stop", "")), "HTTP/1.1 409 Conflict")
        XCTAssertEqual(try status(post("/api/sample/run", "{\"count\":0}")), "HTTP/1.1 400 Bad Request")
        XCTAssertEqual(try status("HEAD /api/events?token=\(token) HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n"), "HTTP/1.1 200 OK")
        XCTAssertEqual(try status("GET /api/serve?token=\(token) HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n"), "HTTP/1.1 200 OK")
        XCTAssertEqual(try status("GET /sample?token=\(token) HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n"), "HTTP/1.1 200 OK")
    }
}

import Foundation
import BLETestSupport
import XCTest

/// `ble ui --hci virtual` in a real browser (headless Chromium driven over the DevTools protocol
/// by peers/browser.py), and the requests a browser would not send (peers/http_probe.py).
final class UIBrowserTests: XCTestCase {
    /// `ble ui` running as a child process; `address` is the first line it printed.
    final class UIProcess: @unchecked Sendable {
        let process = Process()
        let address: String
        let port: Int

        /// `ble ui` on `hci`, listening on `listen`; its stderr goes to `errors` if given.
        init(arguments: [String] = [], environment: [String: String]? = nil, hci: String = "virtual", listen: String = "127.0.0.1:0",
             errors: FileHandle? = nil) throws {
            process.executableURL = try BLETool.executableURL()
            process.arguments = ["ui", "--hci", hci, "--listen", listen] + arguments
            if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
            let out = Pipe()
            process.standardOutput = out
            process.standardError = errors ?? FileHandle.nullDevice
            try process.run()
            // The first line, within a bound.
            let line = SharedValue<String?>(nil)
            let got = DispatchSemaphore(value: 0)
            let buffer = SharedValue(Data())
            out.fileHandleForReading.readabilityHandler = { h in
                let chunk = h.availableData
                if chunk.isEmpty { h.readabilityHandler = nil; got.signal(); return }
                buffer.set(buffer.get() + chunk)
                let all = buffer.get()
                if let nl = all.firstIndex(of: 0x0A) {
                    line.set(String(decoding: all[..<nl], as: UTF8.self))
                    h.readabilityHandler = nil
                    got.signal()
                }
            }
            _ = got.wait(timeout: .now() + 30)
            guard let first = line.get(), first.hasPrefix("ui: http://127.0.0.1:") else {
                process.terminate()
                throw XCTSkip("ble ui printed no address line")
            }
            address = String(first.dropFirst("ui: ".count))
            port = Int(address.split(separator: ":")[2].split(separator: "/")[0]) ?? 0
        }

        func stop() {
            if process.isRunning { process.interrupt() }
            process.waitUntilExit()
        }
    }

    func python(_ script: String, _ arguments: [String], timeout: TimeInterval = 60) throws -> ProcessResult {
        let env = try InteropEnvironment.current()
        return try ProcessRunner.run(env.python, arguments: [env.peers.appendingPathComponent(script).path] + arguments,
                                     environment: [:], input: nil, timeout: timeout)
    }

    func testTheDevicesPageShowsTheSixDemoPeripheralsLive() throws {
        let ui = try UIProcess()
        defer { ui.stop() }
        let result = try python("browser.py", [
            "--url", ui.address,
            "--until", ##"document.querySelectorAll("#devices tbody tr").length >= 6"##,
            "--expr", ##"Array.from(document.querySelectorAll("#devices tbody tr td.name")).map(e => e.textContent).sort()"##,
        ])
        XCTAssertTrue(result.succeeded, "\(result)")
        let names = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String]
        XCTAssertEqual(names, ["BLE001", "Battery", "EchoServer", "HRM", "M5Stack", "TestDevice"])
        // The filter box narrows the list in place.
        let filtered = try python("browser.py", [
            "--url", ui.address,
            "--until", ##"(() => { const f = document.getElementById("filter"); if (document.querySelectorAll("#devices tbody tr").length < 6) return false; f.value = "180d"; f.dispatchEvent(new Event("input")); return document.querySelectorAll("#devices tbody tr").length === 1; })()"##,
            "--expr", ##"document.querySelector("#devices tbody tr td.name").textContent"##,
        ])
        XCTAssertTrue(filtered.succeeded, "\(filtered)")
        XCTAssertEqual(filtered.stdout.trimmingCharacters(in: .whitespacesAndNewlines), #""HRM""#)
    }

    /// No cookie carries the token: a click from the list to a device keeps it in the address,
    /// and the device page's assets, API calls and event stream are admitted with it.
    func testClickingADeviceOpensItsPageWithTheTokenAndNoCookie() throws {
        let ui = try UIProcess()
        defer { ui.stop() }
        let script = ##"""
        (() => { const w = window.__t || (window.__t = {});
          if (location.pathname === "/devices") {
            const row = Array.from(document.querySelectorAll("#devices tbody tr")).find(r => r.textContent.includes("Battery"));
            if (row && !w.clicked) { w.clicked = true; row.click(); }
            return false;
          }
          return document.querySelectorAll("#gatt .characteristic").length > 0 && !!document.querySelector("header strong"); })()
        """##
        let result = try python("browser.py", [
            "--url", ui.address, "--until", script,
            "--expr", ##"({ path: decodeURIComponent(location.pathname), hasToken: location.search.startsWith("?token="), styled: getComputedStyle(document.body).fontFamily !== "", cookies: document.cookie })"##,
        ])
        XCTAssertTrue(result.succeeded, "\(result)")
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(shown["path"] as? String, "/devices/00:5A:B1:00:00:05/public")
        XCTAssertEqual(shown["hasToken"] as? Bool, true)
        XCTAssertEqual(shown["cookies"] as? String, "")
    }

    /// docs/SYSTEMS.md S3 in the page: `/heart-rate` lists the demo HRM (the only 180D advertiser) with its
    /// RSSI against the gate; a click opens `/heart-rate/ADDRESS`, which connects, shows the
    /// latest bpm, contact and body sensor location, and draws the chart as values arrive.
    func testTheHeartRateScreensListTheMonitorAndFollowItLive() throws {
        let ui = try UIProcess()
        defer { ui.stop() }
        let root = String(ui.address.prefix { $0 != "?" }).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let token = String(ui.address.split(separator: "=").last ?? "")
        let script = ##"""
        (() => { const w = window.__t || (window.__t = {});
          if (location.pathname === "/heart-rate") {
            const rows = document.querySelectorAll("#monitors tbody tr");
            if (rows.length === 1 && !w.clicked) { w.clicked = true; rows[0].click(); }
            return false;
          }
          const points = document.getElementById("hr-line").getAttribute("points").trim().split(" ").filter(p => p);
          return points.length >= 3 && document.getElementById("hr-location").textContent !== "–"; })()
        """##
        let result = try python("browser.py", [
            "--url", "\(root)/heart-rate?token=\(token)", "--until", script, "--timeout", "40",
            "--expr", ##"({ path: decodeURIComponent(location.pathname), bpm: Number(document.getElementById("hr-bpm").textContent), contact: document.getElementById("hr-contact").textContent, location: document.getElementById("hr-location").textContent, name: document.getElementById("hr-name").textContent })"##,
            "--screenshot", FileManager.default.temporaryDirectory.appendingPathComponent("ui-heart-rate.png").path,
        ], timeout: 90)
        XCTAssertTrue(result.succeeded, "\(result)")
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(shown["path"] as? String, "/heart-rate/00:5A:B1:00:00:03/public")
        XCTAssertEqual(shown["name"] as? String, "HRM")
        XCTAssertTrue((60...180).contains(shown["bpm"] as? Int ?? 0), "\(shown)")
        XCTAssertTrue(["detected", "not detected", "not supported"].contains(shown["contact"] as? String ?? ""), "\(shown)")
        XCTAssertNotEqual(shown["location"] as? String, "–")
    }

    /// `--open` hands the browser a page only this user can read, never the address with the
    /// token (a command line is visible to every user in `ps`); the page sends the browser on.
    func testOpenPassesAPrivatePageNotTheTokenToTheBrowser() throws {
        let bin = FileManager.default.temporaryDirectory.appendingPathComponent("fake-xdg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: bin) }
        // The fake xdg-open writes its argument into a FIFO: reading it waits for that event.
        let record = bin.appendingPathComponent("argv").path
        XCTAssertEqual(mkfifo(record, 0o600), 0)
        let fake = bin.appendingPathComponent("xdg-open")
        try "#!/bin/sh\nprintf '%s' \"$1\" > '\(record)'\n".write(to: fake, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fake.path)
        let argument = SharedValue<String?>(nil)
        let written = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            // Opening a FIFO for reading waits for its writer; the data ends when it closes.
            if let h = FileHandle(forReadingAtPath: record) {
                let data = h.readDataToEndOfFile()
                try? h.close()
                if !data.isEmpty { argument.set(String(decoding: data, as: UTF8.self)) }
            }
            written.signal()
        }
        let ui = try UIProcess(arguments: ["--open"], environment: ["PATH": bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")])
        if written.wait(timeout: .now() + 30) == .timedOut {
            // Unblock the reader, so the thread ends with the test.
            if let h = FileHandle(forWritingAtPath: record) { try? h.close() }
        }
        let path = try XCTUnwrap(argument.get(), "xdg-open was not started within 30 s")
        let token = String(ui.address.split(separator: "=").last ?? "")
        XCTAssertFalse(path.contains(token), "the token is not on a command line")
        let mode = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o077, 0, "only this user reads the page: \(String(mode, radix: 8))")
        let page = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(page.contains("url=\(ui.address)"), page)
        // A browser opening that page lands on the devices screen.
        let landed = try python("browser.py", ["--url", "file://" + path, "--until", ##"location.pathname === "/devices" && !!document.getElementById("devices")"##,
                                               "--expr", "location.protocol"])
        XCTAssertTrue(landed.succeeded, "\(landed)")
        XCTAssertEqual(landed.stdout.trimmingCharacters(in: .whitespacesAndNewlines), #""http:""#)
        ui.stop()
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "removed when ble ui stops")
    }

    func testRequestsWithoutTheTokenFromAnotherHostOrMalformedAreRefused() throws {
        // Skip before any assertion: the probes need the interop environment, and an XCTSkip
        // thrown inside an XCTAssert autoclosure is counted as a failure.
        _ = try InteropEnvironment.current()
        let ui = try UIProcess()
        defer { ui.stop() }
        func status(_ request: String) throws -> String {
            let r = try python("http_probe.py", ["--port", String(ui.port), "--request", request], timeout: 30)
            XCTAssertTrue(r.succeeded, "\(r)")
            return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let token = String(ui.address.split(separator: "=").last ?? "")
        XCTAssertEqual(try status("GET /api/devices HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n"), "HTTP/1.1 403 Forbidden", "no token")
        XCTAssertEqual(try status("GET /api/devices?token=nope HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n"), "HTTP/1.1 403 Forbidden")
        XCTAssertEqual(try status("GET /api/devices?token=\(token) HTTP/1.1\\r\\nHost: rebound.example:{port}\\r\\n\\r\\n"),
                       "HTTP/1.1 421 Misdirected Request", "DNS rebinding")
        XCTAssertEqual(try status("GET /api/devices?token=\(token) HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n"), "HTTP/1.1 200 OK")
        XCTAssertEqual(try status("POST /api/devices HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\nCookie: ble_ui_token=\(token)\\r\\nContent-Length: 0\\r\\n\\r\\n"),
                       "HTTP/1.1 403 Forbidden", "a cookie is not a token")
        XCTAssertEqual(try status("GET /api/devices?token=\(token) HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\nSec-Fetch-Site: same-site\\r\\n\\r\\n"),
                       "HTTP/1.1 403 Forbidden", "a page on another port of this host")
        XCTAssertEqual(try status("GET / HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n"), "HTTP/1.1 501 Not Implemented")
        XCTAssertEqual(try status("GET / HTTP/2.0\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n"), "HTTP/1.1 505 HTTP Version Not Supported")
    }

    /// `/devices/ADDRESS` on the demo TestDevice: the GATT tree with SIG names, a write of text
    /// to 8f3c0003 (handle 0x0012) and a read that brings it back, and an ATT error by name.
    func testAGATTWriteAndReadRoundTripFromTheDevicePage() throws {
        let ui = try UIProcess()
        defer { ui.stop() }
        let base = String(ui.address.prefix { $0 != "?" })
        let root = base.hasSuffix("/") ? String(base.dropLast()) : base
        let token = String(ui.address.split(separator: "=").last ?? "")
        let page = "\(root)/devices/00:5A:B1:00:00:06%2Fpublic?token=\(token)"
        let script = ##"""
        (() => { const w = window.__t || (window.__t = { step: 0 });
          const box = document.querySelector('[data-handle="18"]'); if (!box) return false;
          if (w.step === 0) { box.querySelector('[data-role=input]').value = "from the browser"; box.querySelector('[data-action=write]').click(); w.step = 1; return false; }
          if (w.step === 1) { if (!document.getElementById("log").textContent.includes("wrote 16")) return false; box.querySelector('[data-action=read]').click(); w.step = 2; return false; }
          return box.querySelector('[data-role=value]').textContent.startsWith('"from the browser"'); })()
        """##
        let result = try python("browser.py", [
            "--url", page, "--until", script,
            "--expr", ##"({ names: Array.from(document.querySelectorAll(".characteristic > div:first-child")).map(e => e.textContent.split(" [")[0]).slice(0, 3), refused: document.querySelector('[data-handle="36"] [data-role=value]').textContent })"##,
        ])
        XCTAssertTrue(result.succeeded, "\(result)")
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(shown["names"] as? [String], ["Device Name", "Appearance", "Service Changed"], "SIG names")
        XCTAssertTrue((shown["refused"] as? String)?.contains("Insufficient Authentication") == true, "\(shown)")
    }

    /// Subscribing on `/devices/ADDRESS` of the demo heart-rate sensor: its measurements arrive in
    /// the page's log over the event stream, and the value box follows the latest.
    func testSubscribingShowsLiveHeartRateMeasurements() throws {
        let ui = try UIProcess()
        defer { ui.stop() }
        let root = String(ui.address.prefix { $0 != "?" }).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let token = String(ui.address.split(separator: "=").last ?? "")
        let page = "\(root)/devices/00:5A:B1:00:00:03%2Fpublic?token=\(token)"
        let result = try python("browser.py", [
            "--url", page, "--timeout", "30",
            "--until", ##"(() => { const b = document.querySelector('[data-handle="16"] [data-action=subscribe]'); if (!b) return false; if (!window.__s) { b.click(); window.__s = 1; } return document.querySelectorAll("#log li").length >= 3; })()"##,
            "--expr", ##"Array.from(document.querySelectorAll("#log li")).map(e => e.textContent)"##,
        ])
        XCTAssertTrue(result.succeeded, "\(result)")
        let lines = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String])
        XCTAssertGreaterThanOrEqual(lines.count, 3)
        XCTAssertTrue(lines.allSatisfy { $0.hasPrefix("0x10: ") }, "\(lines)")
        XCTAssertGreaterThan(Set(lines).count, 1, "changing values: \(lines)")
    }
}

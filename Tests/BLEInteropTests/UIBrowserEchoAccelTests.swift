import Foundation
import BLETestSupport
import XCTest

/// The `/echo` and `/accel` screens of `ble ui --hci virtual` in headless Chromium (docs/SYSTEMS.md S1 and
/// S4), with the demo peripherals as the far ends. Kept apart from the other screens' tests so
/// each screen's tests change alone.
extension UIBrowserTests {
    /// peers/image_server.py: a PNG over HTTP on a free loopback port, for the echo server to fetch.
    final class ImageServer: @unchecked Sendable {
        let process = Process()
        let port: Int

        init(python: URL, script: URL) throws {
            process.executableURL = python
            process.arguments = [script.path]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            let line = SharedValue<String?>(nil)
            let got = DispatchSemaphore(value: 0)
            let buffer = SharedValue(Data())
            out.fileHandleForReading.readabilityHandler = { h in
                let chunk = h.availableData
                if chunk.isEmpty { h.readabilityHandler = nil; got.signal(); return }
                buffer.set(buffer.get() + chunk)
                if let nl = buffer.get().firstIndex(of: 0x0A) {
                    line.set(String(decoding: buffer.get()[..<nl], as: UTF8.self))
                    h.readabilityHandler = nil
                    got.signal()
                }
            }
            _ = got.wait(timeout: .now() + 30)
            guard let first = line.get(), first.hasPrefix("PORT "), let port = Int(first.dropFirst(5)) else {
                process.terminate()
                throw XCTSkip("image_server.py printed no port")
            }
            self.port = port
        }

        func stop() {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
    }

    /// The page's address for `path`, with the token.
    func page(_ ui: UIProcess, _ path: String) -> String {
        let root = String(ui.address.prefix { $0 != "?" }).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let token = String(ui.address.split(separator: "=").last ?? "")
        return "\(root)\(path)?token=\(token)"
    }

    /// docs/SYSTEMS.md S1 in the page: a text gets the demo echo server's reply; a URL served here over
    /// HTTP is fetched by the echo server, arrives with the progress bar moving, and shows as
    /// an image; a URL that fails gives the server's reason in the page, and the page goes on.
    func testTheEchoScreenShowsTheReplyAndTheFetchedImage() throws {
        let env = try InteropEnvironment.current()
        let images = try ImageServer(python: env.python, script: env.peerScript("image_server.py"))
        defer { images.stop() }
        let ui = try UIProcess()
        defer { ui.stop() }
        let picture = "http://127.0.0.1:\(images.port)/picture.png"
        let script = ##"""
        (() => { const w = window.__t || (window.__t = { step: 0, progress: [] });
          const $ = id => document.getElementById(id);
          if (!$("echo-form") || document.readyState !== "complete") return false; // echo.js (deferred) has run: until it has the forms their buttons are disabled
          if (w.step === 0) { $("echo-text").value = "hello from chromium"; $("echo-send").click(); w.step = 1; return false; }
          if (w.step === 1) {
            if ($("echo-reply").textContent !== "You said: hello from chromium" || $("echo-fetch").disabled) return false;
            const p = $("echo-progress");
            new MutationObserver(records => records.forEach(() => w.progress.push([p.value, p.max]))).observe(p, { attributes: true });
            $("echo-url").value = "PICTURE"; $("echo-fetch").click(); w.step = 2; return false;
          }
          const img = $("echo-image");
          if (w.step === 2) {
            if ($("echo-figure").hidden || !img.complete || img.naturalWidth === 0 || $("echo-fetch").disabled) return false;
            w.image = { width: img.naturalWidth, height: img.naturalHeight, caption: $("echo-caption").textContent };
            $("echo-url").value = "PICTURE".replace("picture.png", "missing.png"); $("echo-fetch").click(); w.step = 3; return false;
          }
          return $("echo-fetch-error").textContent.includes("404"); })()
        """##.replacingOccurrences(of: "PICTURE", with: picture)
        let result = try python("browser.py", [
            "--url", page(ui, "/echo"), "--until", script, "--timeout", "60",
            "--expr", ##"({ reply: document.getElementById("echo-reply").textContent, image: window.__t.image, progress: window.__t.progress, error: document.getElementById("echo-fetch-error").textContent })"##,
        ], timeout: 120)
        XCTAssertTrue(result.succeeded, "\(result)")
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(shown["reply"] as? String, "You said: hello from chromium")
        let image = try XCTUnwrap(shown["image"] as? [String: Any], "\(shown)")
        XCTAssertEqual(image["width"] as? Int, 120)
        XCTAssertEqual(image["height"] as? Int, 90)
        XCTAssertTrue((image["caption"] as? String)?.contains("image/png") == true, "\(image)")
        let progress = (shown["progress"] as? [[Double]]) ?? []
        XCTAssertTrue(progress.contains { $0[0] > 0 && $0[0] < $0[1] }, "the bar moved on the way: \(progress)")
        XCTAssertTrue((shown["error"] as? String)?.contains("HTTP status 404") == true, "\(shown)")
    }

    /// docs/SYSTEMS.md S4 in the page: `/accel` lists the demo BLE001; a click opens its chart, which
    /// gets points; Pause stops them (the server sends none after its pause event); the CSV
    /// download has the header and rows, the SVG download parses. A device that is no
    /// accelerometer gets the reason on its page, and the server keeps serving.
    func testTheAccelerometerScreensChartPauseAndDownload() throws {
        let ui = try UIProcess()
        defer { ui.stop() }
        let script = ##"""
        (() => { const w = window.__t || (window.__t = { step: 0 });
          const $ = id => document.getElementById(id);
          if (location.pathname === "/accel") {
            const row = Array.from(document.querySelectorAll("#accelerometers tbody tr")).find(r => r.textContent.includes("BLE001"));
            if (row && !w.clicked) { w.clicked = true; row.click(); }
            return false;
          }
          const points = () => $("ac-x").getAttribute("points").trim().split(" ").filter(p => p).length;
          if (w.step === 0) { if (points() < 5) return false; w.before = points(); $("ac-pause").click(); w.step = 1; return false; }
          if (w.step === 1) { if ($("ac-session").dataset.paused !== "yes") return false; w.atPause = points(); w.since = Date.now(); w.step = 2; return false; }
          if (w.step === 2) {
            if (Date.now() - w.since < 2000) return false;
            w.afterPause = points(); w.step = 3;
            fetch($("ac-csv").href).then(r => r.text()).then(t => { w.csv = t; });
            fetch($("ac-svg").href).then(r => r.text()).then(t => {
              const doc = new DOMParser().parseFromString(t, "image/svg+xml");
              w.svg = { root: doc.documentElement.nodeName, errors: doc.getElementsByTagName("parsererror").length, lines: doc.getElementsByTagName("polyline").length };
            });
            return false;
          }
          return w.csv !== undefined && w.svg !== undefined; })()
        """##
        let result = try python("browser.py", [
            "--url", page(ui, "/accel"), "--until", script, "--timeout", "60",
            "--expr", ##"({ path: decodeURIComponent(location.pathname), before: window.__t.before, atPause: window.__t.atPause, afterPause: window.__t.afterPause, csv: window.__t.csv, svg: window.__t.svg, button: document.getElementById("ac-pause").textContent })"##,
            "--screenshot", FileManager.default.temporaryDirectory.appendingPathComponent("ui-accel.png").path,
        ], timeout: 120)
        XCTAssertTrue(result.succeeded, "\(result)")
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(shown["path"] as? String, "/accel/00:5A:B1:00:00:04/public")
        XCTAssertGreaterThanOrEqual(shown["before"] as? Int ?? 0, 5, "the chart got points")
        XCTAssertEqual(shown["afterPause"] as? Int, shown["atPause"] as? Int, "two paused seconds draw nothing: \(shown)")
        XCTAssertEqual(shown["button"] as? String, "Resume")
        let lines = (shown["csv"] as? String ?? "").components(separatedBy: "\r\n").filter { !$0.isEmpty }
        XCTAssertEqual(lines.first, "t,x,y,z")
        XCTAssertGreaterThanOrEqual(lines.count, 6, "\(lines)")
        XCTAssertTrue(lines.dropFirst().allSatisfy { $0.split(separator: ",").count == 4 && $0.split(separator: ",").allSatisfy { Double($0) != nil } }, "\(lines)")
        let svg = try XCTUnwrap(shown["svg"] as? [String: Any])
        XCTAssertEqual(svg["root"] as? String, "svg")
        XCTAssertEqual(svg["errors"] as? Int, 0)
        XCTAssertEqual(svg["lines"] as? Int, 3)

        // The demo HRM has no 0011: its page says so.
        let refused = try python("browser.py", [
            "--url", page(ui, "/accel/00:5A:B1:00:00:03%2Fpublic"), "--timeout", "40",
            "--until", ##"document.getElementById("ac-status").className === "error""##,
            "--expr", ##"document.getElementById("ac-status").textContent"##,
        ], timeout: 90)
        XCTAssertTrue(refused.succeeded, "\(refused)")
        XCTAssertTrue(refused.stdout.contains("not an accelerometer"), refused.stdout)
        // And the server still serves the list.
        let list = try python("browser.py", [
            "--url", page(ui, "/accel"), "--until", ##"document.querySelectorAll("#accelerometers tbody tr").length >= 1"##,
            "--expr", ##"document.querySelector("#accelerometers tbody tr td.name").textContent"##,
        ])
        XCTAssertTrue(list.succeeded, "\(list)")
        XCTAssertEqual(list.stdout.trimmingCharacters(in: .whitespacesAndNewlines), #""BLE001""#)
    }
}

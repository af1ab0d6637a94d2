import Foundation
import XCTest

/// What a peer may send that the `/echo` and `/accel` pages must still show sensibly, in
/// headless Chromium against `ble ui --hci virtual`: a reply that is no image, and an
/// accelerometer sample with a NaN in it.
extension UIBrowserTests {
    /// The echo server fetched an HTML page, not an image: the page shows no image, offers the
    /// bytes as a download (as docs/CLI.md says), and that download is an attachment of no
    /// type a browser would render.
    func testTheEchoScreenOffersAReplyThatIsNoImageAsADownload() throws {
        let env = try InteropEnvironment.current()
        let images = try ImageServer(python: env.python, script: env.peerScript("image_server.py"))
        defer { images.stop() }
        let ui = try UIProcess()
        defer { ui.stop() }
        let script = ##"""
        (() => { const w = window.__t || (window.__t = { step: 0 });
          const $ = id => document.getElementById(id);
          if (!$("echo-form") || document.readyState !== "complete") return false; // echo.js (deferred) has run: until it has the forms their buttons are disabled
          if (w.step === 0) { $("echo-url").value = "TARGET"; $("echo-fetch").click(); w.step = 1; return false; }
          if (w.step === 1) {
            const a = $("echo-download");
            if (!a || a.hidden || $("echo-fetch").disabled) return false;
            w.step = 2;
            fetch(a.href).then(r => r.text().then(t => {
              w.got = { status: r.status, type: r.headers.get("Content-Type"), disposition: r.headers.get("Content-Disposition"), body: t };
            }));
            return false;
          }
          return w.got !== undefined; })()
        """##.replacingOccurrences(of: "TARGET", with: "http://127.0.0.1:\(images.port)/page.html")
        let result = try python("browser.py", [
            "--url", page(ui, "/echo"), "--until", script, "--timeout", "60",
            "--expr", ##"({ got: window.__t.got, src: document.getElementById("echo-image").getAttribute("src"), title: document.title })"##,
        ], timeout: 120)
        XCTAssertTrue(result.succeeded, "\(result)")
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        XCTAssertTrue(shown["src"] is NSNull, "no image shown: \(shown)")
        XCTAssertNotEqual(shown["title"] as? String, "ran")
        let got = try XCTUnwrap(shown["got"] as? [String: Any], "\(shown)")
        XCTAssertEqual(got["status"] as? Int, 200)
        XCTAssertEqual(got["type"] as? String, "application/octet-stream")
        XCTAssertTrue((got["disposition"] as? String)?.hasPrefix("attachment") == true, "\(got)")
        XCTAssertTrue((got["body"] as? String)?.contains("not an image") == true, "\(got)")
    }

    /// A sample whose x is NaN reaches the page as null (JSON has no NaN): the page goes on
    /// (no exception), shows a dash for it, and leaves it out of the x line instead of drawing
    /// it at zero. The events are handed to the page's own script through a stand-in
    /// EventSource, on the page of an address nobody answers at (so no real sample mixes in).
    func testTheAccelerometerChartSkipsANonFiniteSample() throws {
        let ui = try UIProcess()
        defer { ui.stop() }
        let script = ##"""
        (() => { const w = window.__t || (window.__t = { step: 0, errors: [] });
          const $ = id => document.getElementById(id);
          if (!$("ac-session") || typeof withToken !== "function") return false;
          if (w.step === 0) {
            window.EventSource = class { constructor() { this.listeners = {}; window.__fake = this; } addEventListener(type, f) { this.listeners[type] = f; } close() {} };
            const s = document.createElement("script");
            s.src = "/static/accel.js" + location.search;
            document.head.appendChild(s);
            w.step = 1; return false;
          }
          if (!window.__fake || !window.__fake.listeners.accel) return false;
          const send = m => { try { window.__fake.listeners.accel({ data: JSON.stringify(m) }); } catch (e) { w.errors.push(String(e)); } };
          send({ type: "subscribed" });
          send({ type: "sample", t: 0, x: 0.5, y: 0.25, z: -0.5, recorded: 1 });
          send({ type: "sample", t: 0.2, x: null, y: 0.25, z: -0.5, recorded: 2 });
          w.latest = $("ac-latest").textContent;
          send({ type: "sample", t: 0.4, x: 0.5, y: 0.25, z: -0.5, recorded: 3 });
          const points = id => $(id).getAttribute("points").trim().split(" ").filter(p => p);
          w.points = ["ac-x", "ac-y", "ac-z"].map(id => points(id).length);
          w.xs = points("ac-x").map(p => p.split(",")[1]);
          return true; })()
        """##
        let result = try python("browser.py", [
            "--url", page(ui, "/accel/00:5A:B1:00:00:77%2Fpublic"), "--until", script, "--timeout", "40",
            "--expr", "window.__t",
        ], timeout: 90)
        XCTAssertTrue(result.succeeded, "\(result)")
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(shown["errors"] as? [String], [], "\(shown)")
        XCTAssertTrue((shown["latest"] as? String)?.hasPrefix("x  –") == true, "\(shown)")
        XCTAssertEqual(shown["points"] as? [Int], [2, 3, 3], "\(shown)")
        XCTAssertEqual(Set(shown["xs"] as? [String] ?? []).count, 1, "both x points at 0.5: \(shown)")
    }
}

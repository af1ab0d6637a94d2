import BLEHTTP
import BLEWire

/// The pages, script and style of `ble ui`, embedded in the binary: nothing is loaded from
/// elsewhere (the Content-Security-Policy says so too). Plain HTML, one small script, light and
/// dark by the system's preference, readable on a phone.
enum UIAssets {
    /// A whole page around `body`, served only to a request that had `token`. The token goes in a
    /// meta field for the script's requests, and in the address of every asset and link: there
    /// is no cookie to carry it (see `HTTPAccessPolicy`). `scripts` are more of `/static/` for
    /// this page, after `ui.js` (whose `token`, `withToken` and `get` they use). `navigation`
    /// is the header's links (path and label): the radio's screens, or `brokerNavigation`.
    static func page(title: String, body: String, token: String, scripts: [String] = [],
                     navigation: [(path: String, label: String)] = radioNavigation) -> HTTPResponse {
        let token = token.filter { $0.isHexDigit }
        let more = scripts.map { "<script src=\"/static/\($0)?token=\(token)\" defer></script>\n" }.joined()
        // The paths and labels are this file's constants: nothing to escape.
        let links = navigation.map { "<a href=\"\($0.path)?token=\(token)\">\($0.label)</a>" }.joined(separator: " ")
        let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(title) · ble ui</title>
        <meta name="ble-token" content="\(token)">
        <link rel="stylesheet" href="/static/ui.css?token=\(token)">
        <script src="/static/ui.js?token=\(token)" defer></script>
        \(more)</head>
        <body>
        <header><strong>ble ui</strong> <nav>\(links)</nav></header>
        <main>
        \(body)
        </main>
        </body>
        </html>

        """
        return HTTPResponse(.ok, headers: [("Content-Type", "text/html; charset=utf-8")], body: Array(html.utf8))
    }

    /// The header's links when `ble ui` holds a radio.
    static let radioNavigation: [(path: String, label: String)] = [
        ("/devices", "Devices"), ("/heart-rate", "Heart rate"), ("/echo", "Echo"), ("/sample", "Sample"), ("/accel", "Accelerometer"), ("/serve", "Serve"),
    ]

    /// The header's links when `ble ui --broker` watches gateways instead.
    static let brokerNavigation: [(path: String, label: String)] = [("/gateways", "Gateways")]

    static let devicesBody = """
    <h1>Devices</h1>
    <p><label>Filter <input id="filter" type="search" placeholder="name, address or service" autocomplete="off"></label>
    <span id="count" role="status">waiting for the first advertisements…</span></p>
    <table id="devices">
    <thead><tr><th>Name</th><th>Address</th><th>RSSI</th><th>Age</th><th class="ad">Advertisement</th></tr></thead>
    <tbody></tbody>
    </table>
    """

    /// The `/devices/ADDRESS` screen: the GATT tree the script fills in after connecting.
    static func peripheralBody(_ address: DeviceAddress) -> String {
        // The address is ours (parsed, then printed), so it holds only hex digits, ':' and '/'.
        """
        <h1>\(address.address) <small>\(address.type == .public ? "public" : "random")</small></h1>
        <p><span id="status" role="status">connecting…</span> <button id="disconnect" type="button">Disconnect</button></p>
        <div id="gatt" data-address="\(address)"></div>
        <h2>Values</h2>
        <ol id="log" aria-live="polite"></ol>
        """
    }

    /// `/static/…` files.
    static func asset(_ path: String) -> HTTPResponse? {
        switch path {
        case "/static/ui.css": return HTTPResponse(.ok, headers: [("Content-Type", "text/css; charset=utf-8")], body: Array((css + UIHeartRateAssets.css + UIEchoAssets.css + UIAccelAssets.css + UISampleAssets.css + UIServeAssets.css + UIBrokerAssets.css).utf8))
        case "/static/ui.js": return HTTPResponse(.ok, headers: [("Content-Type", "text/javascript; charset=utf-8")], body: Array(script.utf8))
        case "/static/heart-rate.js": return HTTPResponse(.ok, headers: [("Content-Type", "text/javascript; charset=utf-8")], body: Array(UIHeartRateAssets.script.utf8))
        case "/static/echo.js": return HTTPResponse(.ok, headers: [("Content-Type", "text/javascript; charset=utf-8")], body: Array(UIEchoAssets.script.utf8))
        case "/static/accel.js": return HTTPResponse(.ok, headers: [("Content-Type", "text/javascript; charset=utf-8")], body: Array(UIAccelAssets.script.utf8))
        case "/static/broker.js": return HTTPResponse(.ok, headers: [("Content-Type", "text/javascript; charset=utf-8")], body: Array(UIBrokerAssets.script.utf8))
        default: return nil
        }
    }

    static let css = """
    :root { color-scheme: light dark; --fg: #1b1b1b; --bg: #fdfdfd; --muted: #666; --bar: #2a7ae2; --line: #ddd; }
    @media (prefers-color-scheme: dark) { :root { --fg: #e8e8e8; --bg: #121212; --muted: #999; --bar: #5b9cff; --line: #333; } }
    body { font: 15px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 0; }
    header { padding: .6em 1em; border-bottom: 1px solid var(--line); display: flex; flex-wrap: wrap; gap: .3em 1em; align-items: baseline; }
    nav { display: flex; flex-wrap: wrap; gap: .3em .8em; }
    main { padding: 0 1em 2em; }
    a { color: var(--bar); }
    table { border-collapse: collapse; width: 100%; }
    th, td { text-align: left; padding: .35em .5em; border-bottom: 1px solid var(--line); vertical-align: top; }
    td.address { font-family: ui-monospace, monospace; white-space: nowrap; }
    td.rssi { white-space: nowrap; }
    td.ad { color: var(--muted); word-break: break-word; }
    .bar { display: inline-block; height: .6em; background: var(--bar); margin-left: .4em; vertical-align: middle; }
    input[type=search] { font: inherit; padding: .2em .4em; min-width: 14em; }
    /* A narrow screen drops the advertisement column: its header and its cells, both marked "ad"
       (a positional rule such as th:last-child would hide the last header of every table). */
    @media (max-width: 40em) { th.ad, td.ad { display: none; } }
    .service { margin: 1em 0; padding: .5em .8em; border: 1px solid var(--line); border-radius: 6px; }
    .characteristic { margin: .6em 0 .6em 1em; }
    .value { font-family: ui-monospace, monospace; }
    .error { color: #c33; }
    .controls { display: flex; flex-wrap: wrap; gap: .4em; margin-top: .3em; }
    .controls input[type=text] { font: inherit; min-width: 10em; }
    button { font: inherit; }
    #log { font-family: ui-monospace, monospace; max-height: 20em; overflow: auto; }
    """

    /// Renders the list from the event stream (and from `/api/devices` at load, so the first
    /// paint does not wait for the stream); text goes in with textContent only.
    static let script = """
    "use strict";
    const token = (document.querySelector('meta[name="ble-token"]') || {}).content || "";
    // No cookie carries the token (other ports of 127.0.0.1 would be sent it): links and event
    // streams have it in the address, the API calls in the header.
    function withToken(path) { return path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token); }
    function get(path) { return fetch(path, { headers: { "X-BLE-Token": token } }).then(r => r.json()); }
    function post(path, body) {
      // The token header proves the request comes from this page (POSTs with the token).
      return fetch(path, { method: "POST", headers: { "Content-Type": "application/json", "X-BLE-Token": token },
                           body: JSON.stringify(body) }).then(r => r.json());
    }
    (function () {
      const table = document.querySelector("#devices tbody");
      if (!table) return;
      const filter = document.getElementById("filter");
      const count = document.getElementById("count");
      let devices = [];
      function matches(d, text) {
        if (!text) return true;
        const hay = [d.name || "", d.address, (d.serviceUUIDs || []).join(" "), d.summary || ""].join(" ").toLowerCase();
        return hay.includes(text.toLowerCase());
      }
      function cell(row, text, cls) {
        const td = document.createElement("td");
        if (cls) td.className = cls;
        td.textContent = text;
        row.appendChild(td);
        return td;
      }
      function render() {
        const shown = devices.filter(d => matches(d, filter.value));
        table.replaceChildren();
        for (const d of shown) {
          const row = document.createElement("tr");
          row.dataset.address = d.address;
          row.dataset.type = d.addressType;
          row.tabIndex = 0;
          cell(row, d.name || "(unnamed)", "name");
          cell(row, d.address + " " + (d.addressType === "public" ? "pub" : "rnd") + (d.identity ? " = " + d.identity : ""), "address");
          const rssi = cell(row, d.rssi === null ? "?" : String(d.rssi), "rssi");
          if (d.rssi !== null) {
            const bar = document.createElement("span");
            bar.className = "bar";
            bar.style.width = Math.max(2, Math.min(100, d.rssi + 100)) * 0.6 + "px";
            rssi.appendChild(bar);
          }
          cell(row, d.ageSeconds + " s", "age");
          cell(row, d.summary || "", "ad");
          table.appendChild(row);
        }
        count.textContent = shown.length + " of " + devices.length + " device(s)";
      }
      filter.addEventListener("input", render);
      table.addEventListener("click", e => {
        const row = e.target.closest("tr");
        if (row) location.href = withToken("/devices/" + encodeURIComponent(row.dataset.address + "/" + row.dataset.type));
      });
      get("/api/devices").then(list => { devices = list; render(); }).catch(() => {});
      const events = new EventSource(withToken("/api/events"));
      events.addEventListener("devices", e => { devices = JSON.parse(e.data); render(); });
    })();
    function printable(text) { return typeof text === "string" && text.length > 0 && !/[\\u0000-\\u001f\\u007f]/.test(text); }
    (function () {
      const gatt = document.getElementById("gatt");
      if (!gatt) return;
      const address = gatt.dataset.address;
      const status = document.getElementById("status");
      const log = document.getElementById("log");
      function el(tag, text, cls) { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; }
      function show(target, reply) {
        if (reply.error) { target.textContent = reply.error; target.className = "value error"; return; }
        target.className = "value";
        target.textContent = printable(reply.utf8) ? JSON.stringify(reply.utf8) + "  " + reply.hex : reply.hex;
      }
      function entry(text) { const li = el("li", text); log.appendChild(li); log.scrollTop = log.scrollHeight; }
      function characteristic(c) {
        const box = el("div", undefined, "characteristic");
        box.dataset.handle = c.handle;
        box.appendChild(el("div", (c.name || c.uuid) + " [0x" + c.handle.toString(16).padStart(4, "0") + "] " + c.properties.join(", ")));
        const value = el("div", "", "value");
        value.dataset.role = "value";
        if (c.value) show(value, c.value); else if (c.error) show(value, { error: c.error });
        box.appendChild(value);
        const controls = el("div", undefined, "controls");
        if (c.properties.includes("read")) {
          const b = el("button", "Read"); b.type = "button"; b.dataset.action = "read";
          b.onclick = () => post("/api/read", { address, handle: c.handle }).then(r => show(value, r));
          controls.appendChild(b);
        }
        if (c.properties.includes("write") || c.properties.includes("writeWithoutResponse")) {
          const input = el("input"); input.type = "text"; input.placeholder = "text, or hex with the box ticked"; input.dataset.role = "input";
          const hex = el("input"); hex.type = "checkbox"; hex.title = "hex";
          const b = el("button", "Write"); b.type = "button"; b.dataset.action = "write";
          b.onclick = () => post("/api/write", { address, handle: c.handle, value: input.value, hex: hex.checked,
                                                 withoutResponse: !c.properties.includes("write") })
            .then(r => { if (r.error) show(value, r); else entry("wrote " + r.written + " byte(s) to 0x" + c.handle.toString(16)); });
          controls.append(input, el("label", "hex"), hex, b);
        }
        if (c.properties.includes("notify") || c.properties.includes("indicate")) {
          const b = el("button", "Subscribe"); b.type = "button"; b.dataset.action = "subscribe";
          b.onclick = () => post("/api/subscribe", { address, handle: c.handle, enabled: b.textContent === "Subscribe" })
            .then(r => { if (r.error) show(value, r); else b.textContent = r.subscribed ? "Unsubscribe" : "Subscribe"; });
          controls.appendChild(b);
        }
        box.appendChild(controls);
        return box;
      }
      post("/api/connect", { address }).then(db => {
        if (db.error) { status.textContent = db.error; status.className = "error"; return; }
        status.textContent = "connected, ATT_MTU " + db.mtu;
        for (const s of db.services) {
          const box = el("section", undefined, "service");
          box.appendChild(el("h3", (s.name || "Service") + " " + s.uuid));
          for (const c of s.characteristics) box.appendChild(characteristic(c));
          gatt.appendChild(box);
        }
      });
      document.getElementById("disconnect").onclick = () => post("/api/disconnect", { address }).then(() => { status.textContent = "disconnected"; });
      const events = new EventSource(withToken("/api/peripheral-events/" + encodeURIComponent(address)));
      events.addEventListener("value", e => {
        const v = JSON.parse(e.data);
        entry("0x" + v.handle.toString(16) + ": " + (printable(v.utf8) ? JSON.stringify(v.utf8) : v.hex));
        const box = gatt.querySelector('[data-handle="' + v.handle + '"] [data-role="value"]');
        if (box) show(box, v);
      });
    })();
    """
}

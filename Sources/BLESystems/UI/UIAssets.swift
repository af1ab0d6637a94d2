import BLEHTTP

/// The pages, script and style of `ble ui`, embedded in the binary: nothing is loaded from
/// elsewhere (the Content-Security-Policy says so too). Plain HTML, one small script, light and
/// dark by the system's preference, readable on a phone.
enum UIAssets {
    /// A whole page around `body`.
    static func page(title: String, body: String) -> HTTPResponse {
        let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(title) · ble ui</title>
        <link rel="stylesheet" href="/static/ui.css">
        <script src="/static/ui.js" defer></script>
        </head>
        <body>
        <header><strong>ble ui</strong> <nav><a href="/devices">Devices</a></nav></header>
        <main>
        \(body)
        </main>
        </body>
        </html>

        """
        return HTTPResponse(.ok, headers: [("Content-Type", "text/html; charset=utf-8")], body: Array(html.utf8))
    }

    static let devicesBody = """
    <h1>Devices</h1>
    <p><label>Filter <input id="filter" type="search" placeholder="name, address or service" autocomplete="off"></label>
    <span id="count" role="status">waiting for the first advertisements…</span></p>
    <table id="devices">
    <thead><tr><th>Name</th><th>Address</th><th>RSSI</th><th>Age</th><th>Advertisement</th></tr></thead>
    <tbody></tbody>
    </table>
    """

    /// `/static/…` files.
    static func asset(_ path: String) -> HTTPResponse? {
        switch path {
        case "/static/ui.css": return HTTPResponse(.ok, headers: [("Content-Type", "text/css; charset=utf-8")], body: Array(css.utf8))
        case "/static/ui.js": return HTTPResponse(.ok, headers: [("Content-Type", "text/javascript; charset=utf-8")], body: Array(script.utf8))
        default: return nil
        }
    }

    static let css = """
    :root { color-scheme: light dark; --fg: #1b1b1b; --bg: #fdfdfd; --muted: #666; --bar: #2a7ae2; --line: #ddd; }
    @media (prefers-color-scheme: dark) { :root { --fg: #e8e8e8; --bg: #121212; --muted: #999; --bar: #5b9cff; --line: #333; } }
    body { font: 15px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 0; }
    header { padding: .6em 1em; border-bottom: 1px solid var(--line); display: flex; gap: 1em; align-items: baseline; }
    main { padding: 0 1em 2em; }
    a { color: var(--bar); }
    table { border-collapse: collapse; width: 100%; }
    th, td { text-align: left; padding: .35em .5em; border-bottom: 1px solid var(--line); vertical-align: top; }
    td.address { font-family: ui-monospace, monospace; white-space: nowrap; }
    td.rssi { white-space: nowrap; }
    td.ad { color: var(--muted); word-break: break-word; }
    .bar { display: inline-block; height: .6em; background: var(--bar); margin-left: .4em; vertical-align: middle; }
    input[type=search] { font: inherit; padding: .2em .4em; min-width: 14em; }
    @media (max-width: 40em) { td.ad, th:last-child { display: none; } }
    """

    /// Renders the list from the event stream (and from `/api/devices` at load, so the first
    /// paint does not wait for the stream); text goes in with textContent only.
    static let script = """
    "use strict";
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
      fetch("/api/devices").then(r => r.json()).then(list => { devices = list; render(); }).catch(() => {});
      const events = new EventSource("/api/events");
      events.addEventListener("devices", e => { devices = JSON.parse(e.data); render(); });
    })();
    """
}

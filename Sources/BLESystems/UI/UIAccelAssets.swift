import BLE

/// The `/accel` screens' markup, script and style (docs/SYSTEMS.md S4), embedded like the rest of
/// `UIAssets`. The live chart is three SVG polylines the script draws (no library); the
/// download is `AccelerometerRecording.svg()`, drawn by `SVGChart`.
enum UIAccelAssets {
    /// The device list: the script fills it from `/api/accel/devices` whenever the scan list
    /// changes.
    static let listBody = """
    <h1>Accelerometers</h1>
    <p id="ac-count" role="status">scanning for devices whose name contains "ble"…</p>
    <table id="accelerometers">
    <thead><tr><th>Name</th><th>Address</th><th>RSSI</th><th>Service 0011</th></tr></thead>
    <tbody></tbody>
    </table>
    """

    static let badAddressMessage = "not a device address: expected XX:XX:XX:XX:XX:XX/public or /random, as the list links to"

    /// `/accel/…` with something that is not an address.
    static let badAddressBody = """
    <h1>Accelerometer</h1>
    <p class="error" role="alert">\(badAddressMessage)</p>
    <p><a class="ac-back" href="/accel">back to the list</a></p>
    """

    /// One device's session: status, controls, the latest values, the chart.
    static func sessionBody(_ address: DeviceAddress) -> String {
        // The address is ours (parsed, then printed): hex digits, ':' and '/' only.
        """
        <h1 id="ac-name">\(address.address)</h1>
        <p><span id="ac-status" role="status">starting…</span> <a class="ac-back" href="/accel">back to the list</a></p>
        <div id="ac-session" data-address="\(address)">
        <p class="controls"><button id="ac-pause" type="button" aria-pressed="false">Pause</button>
        <a id="ac-csv" href="#" download>Download CSV</a> <a id="ac-svg" href="#" download>Download SVG</a></p>
        <p id="ac-latest" class="value">x – y – z –</p>
        <svg id="ac-chart" viewBox="0 0 600 240" role="img" aria-label="x, y and z over the last 30 seconds">
        <line class="ac-axis" x1="0" x2="600" y1="120" y2="120"></line>
        <polyline id="ac-x" class="ac-x" fill="none" stroke-width="2" points=""></polyline>
        <polyline id="ac-y" class="ac-y" fill="none" stroke-width="2" points=""></polyline>
        <polyline id="ac-z" class="ac-z" fill="none" stroke-width="2" points=""></polyline>
        <text id="ac-max" x="4" y="14"></text><text id="ac-min" x="4" y="236"></text>
        </svg>
        <p class="ac-legend"><span class="ac-x">■ x</span> <span class="ac-y">■ y</span> <span class="ac-z">■ z</span> (g; the last 30 s, newest on the right)</p>
        <p id="ac-count-samples">0 samples recorded</p>
        </div>
        """
    }

    static let script = """
    "use strict";
    (function () {
      document.querySelectorAll("a.ac-back").forEach(a => { a.href = withToken("/accel"); });
      const table = document.querySelector("#accelerometers tbody");
      if (!table) return;
      const count = document.getElementById("ac-count");
      function cell(row, text, cls) { const td = document.createElement("td"); if (cls) td.className = cls; td.textContent = text; row.appendChild(td); return td; }
      function open(d) { location.href = withToken("/accel/" + encodeURIComponent(d.address + "/" + d.addressType)); }
      function render(list) {
        table.replaceChildren();
        for (const d of list) {
          const row = document.createElement("tr");
          row.tabIndex = 0;
          row.dataset.address = d.address;
          cell(row, d.name || "unnamed device", "name");
          cell(row, d.address + " " + (d.addressType === "public" ? "pub" : "rnd"), "address");
          cell(row, d.rssi === null ? "?" : d.rssi + " dBm", "rssi");
          cell(row, d.accelerometer ? "advertised" : "not advertised (may not be an accelerometer)", d.accelerometer ? "" : "muted");
          row.addEventListener("click", () => open(d));
          row.addEventListener("keydown", e => { if (e.key === "Enter") open(d); });
          table.appendChild(row);
        }
        count.textContent = list.length + " device(s) whose name contains \\"ble\\"";
      }
      let asking = false, again = false;
      function refresh() {
        // One question at a time; a change meanwhile asks once more after it.
        if (asking) { again = true; return; }
        asking = true;
        get("/api/accel/devices").then(render).catch(() => {}).finally(() => { asking = false; if (again) { again = false; refresh(); } });
      }
      refresh();
      const events = new EventSource(withToken("/api/events"));
      events.addEventListener("devices", refresh);
    })();
    (function () {
      const box = document.getElementById("ac-session");
      if (!box) return;
      const address = box.dataset.address;
      const status = document.getElementById("ac-status");
      const pause = document.getElementById("ac-pause");
      const path = encodeURIComponent(address);
      document.getElementById("ac-csv").href = withToken("/api/accel-session/" + path + ".csv");
      document.getElementById("ac-svg").href = withToken("/api/accel-session/" + path + ".svg");
      const span = 30, samples = []; // [t, x, y, z], the last `span` seconds
      let paused = false, receiving = false;
      function text(id, value) { document.getElementById(id).textContent = value; }
      function say(message, error) { status.textContent = message; status.className = error ? "error" : ""; }
      // A component a peer sent as NaN or infinity arrives as null (JSON has neither): shown
      // as a dash and left out of the lines (the global isFinite(null) is true: Number's is not).
      function fixed(v) { return Number.isFinite(v) ? (v < 0 ? "" : " ") + v.toFixed(3) : " –"; }
      function draw() {
        if (samples.length === 0) return;
        const end = samples[samples.length - 1][0], start = end - span;
        let lo = Infinity, hi = -Infinity;
        for (const s of samples) for (let i = 1; i < 4; i++) if (Number.isFinite(s[i])) { lo = Math.min(lo, s[i]); hi = Math.max(hi, s[i]); }
        if (!isFinite(lo)) { lo = -1; hi = 1; }
        if (hi - lo < 0.5) { const mid = (hi + lo) / 2; lo = mid - 0.25; hi = mid + 0.25; }
        const pad = (hi - lo) * 0.08; lo -= pad; hi += pad;
        const y = v => (232 - (v - lo) / (hi - lo) * 224).toFixed(1);
        ["ac-x", "ac-y", "ac-z"].forEach((id, i) => {
          document.getElementById(id).setAttribute("points", samples.filter(s => Number.isFinite(s[i + 1]))
            .map(s => ((s[0] - start) / span * 600).toFixed(1) + "," + y(s[i + 1])).join(" "));
        });
        const axis = document.querySelector("#ac-chart .ac-axis");
        const zero = Math.min(232, Math.max(8, Number(y(0))));
        axis.setAttribute("y1", zero); axis.setAttribute("y2", zero);
        text("ac-max", hi.toFixed(2) + " g");
        text("ac-min", lo.toFixed(2) + " g");
      }
      function showPaused(p) {
        paused = p;
        pause.textContent = p ? "Resume" : "Pause";
        pause.setAttribute("aria-pressed", p ? "true" : "false");
        if (receiving) say(p ? "paused: samples are neither recorded nor drawn" : "connected, receiving");
      }
      pause.addEventListener("click", () => {
        post("/api/accel/pause", { address, paused: !paused }).then(r => {
          if (r.error) say(r.error, true); else showPaused(r.paused);
        });
      });
      const events = new EventSource(withToken("/api/accel-events/" + path));
      events.addEventListener("accel", e => {
        const m = JSON.parse(e.data);
        switch (m.type) {
        case "connecting": say("connecting…"); break;
        case "connected": say("connected (ATT MTU " + m.mtu + "), subscribing…"); if (m.name) text("ac-name", m.name + " " + address.split("/")[0]); break;
        case "subscribed": receiving = true; showPaused(paused); break;
        case "paused":
          // The server's word (the POST's answer may come later): no sample follows a pause event.
          showPaused(m.paused); box.dataset.paused = m.paused ? "yes" : "no"; break;
        case "sample":
          samples.push([m.t, m.x, m.y, m.z]);
          while (samples.length && samples[0][0] < m.t - span) samples.shift();
          text("ac-latest", "x " + fixed(m.x) + "   y " + fixed(m.y) + "   z " + fixed(m.z) + " g");
          if (m.recorded) text("ac-count-samples", m.recorded + " samples recorded");
          draw();
          break;
        case "full": text("ac-count-samples", "the recording is full (" + m.limit + " samples): the downloads have the first " + m.limit); break;
        case "malformed": say("a value that does not decode: " + m.hex + " (" + m.error + ")", true); break;
        case "error":
          receiving = false;
          say(m.message, true); pause.disabled = true; events.close(); break;
        }
      });
    })();
    """

    /// The styles of these screens, appended to `UIAssets.css`.
    static let css = """
    :root { --ac-x: #d62728; --ac-y: #2ca02c; --ac-z: #1f77b4; }
    @media (prefers-color-scheme: dark) { :root { --ac-x: #ff6b6b; --ac-y: #5fd35f; --ac-z: #6cb4ff; } }
    #ac-chart { width: 100%; max-width: 40em; height: auto; border: 1px solid var(--line); border-radius: 6px; }
    #ac-chart text { fill: var(--muted); font-size: 12px; }
    .ac-axis { stroke: var(--line); }
    polyline.ac-x { stroke: var(--ac-x); } polyline.ac-y { stroke: var(--ac-y); } polyline.ac-z { stroke: var(--ac-z); }
    span.ac-x { color: var(--ac-x); } span.ac-y { color: var(--ac-y); } span.ac-z { color: var(--ac-z); }
    .ac-legend { color: var(--muted); }
    .muted { color: var(--muted); }
    #ac-latest { font-size: 1.3em; white-space: pre; }
    """
}

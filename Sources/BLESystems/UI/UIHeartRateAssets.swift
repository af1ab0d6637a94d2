import BLE

/// The `/heart-rate` screens' markup and script (docs/SYSTEMS.md S3), embedded like the rest of
/// `UIAssets`. The chart is an SVG polyline the script draws: no library.
enum UIHeartRateAssets {
    /// The monitor list: the script fills it from the device list's stream.
    static func listBody(minimumRSSI: Int) -> String {
        """
        <h1>Heart-rate monitors</h1>
        <p id="hr-count" role="status">scanning for 180D…</p>
        <table id="monitors" data-min-rssi="\(minimumRSSI)">
        <thead><tr><th>Name</th><th>Address</th><th>RSSI</th><th>Heard</th><th class="ad">Advertisement</th></tr></thead>
        <tbody></tbody>
        </table>
        <p id="hr-refused" class="error" role="alert"></p>
        """
    }

    /// One monitor: the big number and its details, and the chart.
    static func monitorBody(_ address: DeviceAddress, minimumRSSI: Int) -> String {
        // The address is ours (parsed, then printed): hex digits, ':' and '/' only.
        """
        <h1 id="hr-name">\(address.address)</h1>
        <p><span id="hr-status" role="status">starting…</span> <a id="hr-back" href="#">back to the list</a></p>
        <div id="hr-monitor" data-address="\(address)" data-min-rssi="\(minimumRSSI)">
        <div class="bpm"><span id="hr-bpm">--</span> <small>bpm</small></div>
        <dl class="hr-details">
        <dt>Sensor contact</dt><dd id="hr-contact">–</dd>
        <dt>Energy expended</dt><dd id="hr-energy">–</dd>
        <dt>RR intervals</dt><dd id="hr-rr">–</dd>
        <dt>Body sensor location</dt><dd id="hr-location">–</dd>
        </dl>
        <svg id="hr-chart" viewBox="0 0 600 200" role="img" aria-label="heart rate over the last five minutes">
        <polyline id="hr-line" fill="none" stroke-width="2" points=""></polyline>
        <text id="hr-max" x="4" y="14"></text><text id="hr-min" x="4" y="196"></text>
        </svg>
        </div>
        """
    }

    static let script = """
    "use strict";
    (function () {
      const table = document.querySelector("#monitors tbody");
      if (!table) return;
      const minimum = Number(document.getElementById("monitors").dataset.minRssi);
      const count = document.getElementById("hr-count");
      const refused = document.getElementById("hr-refused");
      let devices = [];
      function isMonitor(d) { return (d.serviceUUIDs || []).some(u => u.toLowerCase() === "180d" || u.toLowerCase().startsWith("0000180d-")); }
      function cell(row, text, cls) { const td = document.createElement("td"); if (cls) td.className = cls; td.textContent = text; row.appendChild(td); return td; }
      function open(d) {
        if (d.rssi === null || d.rssi < minimum) {
          // docs/SYSTEMS.md S3: connecting is refused, with the RSSI, when the signal is too weak.
          refused.textContent = "Refusing to connect to " + (d.name || "unnamed device") + ": RSSI " + (d.rssi === null ? "unknown" : d.rssi + " dBm")
            + " is weaker than " + minimum + " dBm.";
          return;
        }
        location.href = withToken("/heart-rate/" + encodeURIComponent(d.address + "/" + d.addressType));
      }
      function render() {
        const monitors = devices.filter(isMonitor);
        table.replaceChildren();
        for (const d of monitors) {
          const row = document.createElement("tr");
          row.tabIndex = 0;
          row.dataset.address = d.address;
          cell(row, d.name || "unnamed device", "name");
          cell(row, d.address + " " + (d.addressType === "public" ? "pub" : "rnd"), "address");
          const weak = d.rssi === null || d.rssi < minimum;
          cell(row, (d.rssi === null ? "?" : d.rssi + " dBm") + (weak ? " (too weak)" : ""), weak ? "rssi error" : "rssi");
          cell(row, new Date(Date.now() - d.ageSeconds * 1000).toLocaleTimeString() + " (" + d.ageSeconds + " s ago)");
          cell(row, d.summary || "", "ad");
          row.addEventListener("click", () => open(d));
          row.addEventListener("keydown", e => { if (e.key === "Enter") open(d); });
          table.appendChild(row);
        }
        count.textContent = monitors.length + " monitor(s); connecting needs " + minimum + " dBm or stronger";
      }
      get("/api/devices").then(list => { devices = list; render(); }).catch(() => {});
      const events = new EventSource(withToken("/api/events"));
      events.addEventListener("devices", e => { devices = JSON.parse(e.data); render(); });
    })();
    (function () {
      const box = document.getElementById("hr-monitor");
      if (!box) return;
      const address = box.dataset.address;
      const status = document.getElementById("hr-status");
      const line = document.getElementById("hr-line");
      document.getElementById("hr-back").href = withToken("/heart-rate");
      const samples = []; // [t, bpm], the last five minutes
      function text(id, value) { document.getElementById(id).textContent = value; }
      function contact(c) { return c === "detected" ? "detected" : c === "notDetected" ? "not detected" : "not supported"; }
      function draw() {
        if (samples.length === 0) { line.setAttribute("points", ""); return; }
        // The time axis spans what was seen, one minute at least and five at most.
        const end = samples[samples.length - 1][0], span = Math.min(300, Math.max(60, end - samples[0][0])), start = end - span;
        let lo = Math.min(...samples.map(s => s[1])), hi = Math.max(...samples.map(s => s[1]));
        if (hi - lo < 10) { lo -= 5; hi += 5; }
        line.setAttribute("points", samples.map(([t, v]) =>
          ((t - start) / span * 600).toFixed(1) + "," + (195 - (v - lo) / (hi - lo) * 180).toFixed(1)).join(" "));
        text("hr-max", Math.round(hi) + " bpm");
        text("hr-min", Math.round(lo) + " bpm");
      }
      const events = new EventSource(withToken("/api/heart-rate-events/" + encodeURIComponent(address)));
      events.addEventListener("heart-rate", e => {
        const m = JSON.parse(e.data);
        switch (m.type) {
        case "scanning": status.textContent = "scanning for this monitor…"; break;
        case "connecting": status.textContent = "connecting (RSSI " + m.rssi + " dBm)…"; break;
        case "connected": status.textContent = "connected"; if (m.name) text("hr-name", m.name); break;
        case "subscribed": status.textContent = "connected, receiving"; break;
        case "location": text("hr-location", m.name); break;
        case "measurement":
          text("hr-bpm", String(m.bpm));
          text("hr-contact", contact(m.contact));
          text("hr-energy", m.energyKJ === null ? "–" : m.energyKJ + " kJ");
          text("hr-rr", m.rrIntervals.length ? m.rrIntervals.map(s => s.toFixed(3) + " s").join(", ") : "–");
          samples.push([m.t, m.bpm]);
          while (samples.length && samples[0][0] < m.t - 300) samples.shift();
          draw();
          break;
        case "malformed": status.textContent = "a value that does not decode: " + m.hex + " (" + m.error + ")"; break;
        case "disconnected": status.textContent = "disconnected (" + m.reason + "): scanning again"; break;
        case "refused": case "error":
          status.textContent = m.message; status.className = "error"; events.close(); break;
        }
      });
    })();
    """

    /// The styles of these screens, appended to `UIAssets.css`.
    static let css = """
    .bpm { font-size: 4.5em; font-weight: 600; line-height: 1; margin: .2em 0; }
    .bpm small { font-size: .3em; font-weight: normal; color: var(--muted); }
    .hr-details { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
    .hr-details dt { color: var(--muted); }
    .hr-details dd { margin: 0; }
    #hr-chart { width: 100%; max-width: 40em; height: auto; border: 1px solid var(--line); border-radius: 6px; }
    #hr-line { stroke: var(--bar); }
    #hr-chart text { fill: var(--muted); font-size: 12px; }
    """
}

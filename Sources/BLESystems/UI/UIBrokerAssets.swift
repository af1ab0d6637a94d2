import BLE

/// The markup, script and style of `ble ui --broker`'s screens, embedded like the rest of
/// `UIAssets`: the building's list (`/gateways`), and the command panel the heart-rate and
/// accelerometer screens get in broker mode. Everything from the broker goes into the page
/// with `textContent` only.
enum UIBrokerAssets {
    /// `/gateways`: the gateways, then the devices they hear; the script fills both.
    static let gatewaysBody = """
    <h1>Gateways</h1>
    <p id="bk-broker" role="status">connecting to the broker…</p>
    <table id="gateways">
    <thead><tr><th>Gateway</th><th>Status</th><th>Devices</th><th class="ad">Statistics</th></tr></thead>
    <tbody></tbody>
    </table>
    <h2>Devices</h2>
    <p><label>Filter <input id="bk-filter" type="search" placeholder="name, address, service or gateway" autocomplete="off"></label>
    <span id="bk-count" role="status">waiting for the gateways' advertisements…</span></p>
    <table id="bk-devices">
    <thead><tr><th>Name</th><th>Address</th><th>Strongest</th><th class="ad">Heard by</th><th>Values</th></tr></thead>
    <tbody></tbody>
    </table>
    <p id="bk-ignored" class="muted"></p>
    """

    /// A broker screen's address that is not one.
    static let badAddressBody = """
    <h1>Not a device</h1>
    <p class="error" role="alert">not a device address: expected XX:XX:XX:XX:XX:XX/public or /random, as the list links to</p>
    <p><a class="bk-back" href="/gateways">back to the gateways</a></p>
    """

    /// Below a device's screen: which gateways hear it, and the button that asks the strongest
    /// one to subscribe to `characteristic` (and its reply).
    static func commandPanel(_ address: DeviceAddress, characteristic: String) -> String {
        // The address is ours (parsed, then printed) and the UUID a constant: nothing to escape.
        """
        <section id="bk-command" class="bk-panel" data-address="\(address)" data-characteristic="\(characteristic)">
        <h2>Through the gateways</h2>
        <p id="bk-via">waiting for the gateways' reports…</p>
        <p class="controls"><button id="bk-subscribe" type="button">Subscribe to \(characteristic) through the strongest gateway</button>
        <button id="bk-unsubscribe" type="button">Unsubscribe</button></p>
        <p id="bk-reply" role="status"></p>
        <p><a class="bk-back" href="/gateways">back to the gateways</a></p>
        </section>
        """
    }

    static let script = """
    "use strict";
    (function () {
      document.querySelectorAll("a.bk-back").forEach(a => { a.href = withToken("/gateways"); });
      function el(tag, text, cls) { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; }
      function dbm(r) { return r === null || r === undefined ? "?" : r + " dBm"; }
      function hears(d, uuid) { return (d.serviceUUIDs || []).some(u => u.toLowerCase() === uuid || u.toLowerCase().startsWith("0000" + uuid + "-")); }
      function link(path, d, label) {
        const a = el("a", label); a.href = withToken(path + encodeURIComponent(d.address + "/" + d.addressType)); return a;
      }
      function sighting(g) {
        const s = el("span", g.gateway + " " + dbm(g.rssi) + (g.status === "offline" ? " (offline)" : ""), "bk-sighting");
        s.dataset.gateway = g.gateway;
        if (g.strongest) { s.classList.add("bk-best"); s.title = "the strongest gateway: commands go to it"; s.prepend(el("span", "★ ", "bk-star")); }
        return s;
      }
      function statistics(s) {
        if (!s) return "–";
        const parts = [];
        if (s.uptime !== undefined) parts.push("up " + s.uptime + " s");
        for (const k of ["devices", "links", "subscriptions", "notifications", "published", "dropped", "reconnections", "commands"]) {
          if (s[k] !== undefined) parts.push(k + " " + s[k]);
        }
        return parts.join(", ");
      }
      // The building's list.
      const gateways = document.querySelector("#gateways tbody");
      if (gateways) {
        const devices = document.querySelector("#bk-devices tbody");
        const filter = document.getElementById("bk-filter");
        let state = null;
        function matches(d, text) {
          if (!text) return true;
          const hay = [d.name || "", d.address, (d.serviceUUIDs || []).join(" "), (d.gateways || []).map(g => g.gateway).join(" ")].join(" ").toLowerCase();
          return hay.includes(text.toLowerCase());
        }
        function render() {
          if (!state) return;
          const broker = document.getElementById("bk-broker");
          broker.textContent = state.broker + ": " + state.brokerStatus;
          broker.className = state.connected ? "" : "error";
          gateways.replaceChildren();
          for (const g of state.gateways) {
            const row = el("tr"); row.dataset.gateway = g.name; row.dataset.status = g.status;
            row.append(el("td", g.name, "name"), el("td", g.status, "bk-" + g.status), el("td", String(g.devices)), el("td", statistics(g.stats), "ad"));
            gateways.appendChild(row);
          }
          if (state.gateways.length === 0) {
            const row = el("tr"); const td = el("td", "no gateway has published under " + state.prefix + "/ yet"); td.colSpan = 4; td.className = "muted";
            row.appendChild(td); gateways.appendChild(row);
          }
          const shown = state.devices.filter(d => matches(d, filter.value));
          devices.replaceChildren();
          for (const d of shown) {
            const row = el("tr"); row.dataset.address = d.address; row.dataset.strongest = d.strongest || "";
            row.appendChild(el("td", d.name || "(unnamed)", "name"));
            row.appendChild(el("td", d.address + " " + (d.addressType === "public" ? "pub" : "rnd"), "address"));
            const best = (d.gateways || []).find(g => g.strongest);
            row.appendChild(el("td", best ? "★ " + best.gateway + " " + dbm(best.rssi) : "none online", best ? "bk-strongest" : "muted"));
            const heard = el("td", undefined, "ad");
            (d.gateways || []).forEach((g, i) => { if (i) heard.append(" "); heard.appendChild(sighting(g)); });
            row.appendChild(heard);
            const values = el("td", undefined, "bk-values");
            if (d.heartRate) values.append(el("span", d.heartRate.bpm + " bpm ", "bk-bpm"));
            if (d.accelerometer) values.append(el("span", "x " + d.accelerometer.x.toFixed(2) + " y " + d.accelerometer.y.toFixed(2) + " z " + d.accelerometer.z.toFixed(2) + " g ", "bk-accel"));
            if (d.heartRate || hears(d, "180d")) values.appendChild(link("/heart-rate/", d, "Heart rate"));
            if (d.accelerometer || hears(d, "0011")) { if (values.lastChild) values.append(" "); values.appendChild(link("/accel/", d, "Accelerometer")); }
            row.appendChild(values);
            devices.appendChild(row);
          }
          document.getElementById("bk-count").textContent = shown.length + " of " + state.devices.length + " device(s)";
          document.getElementById("bk-ignored").textContent = state.ignored ? state.ignored + " message(s) from the broker ignored; the last: " + state.lastIgnored : "";
        }
        filter.addEventListener("input", render);
        get("/api/broker").then(s => { state = s; render(); }).catch(() => {});
        new EventSource(withToken("/api/broker-events")).addEventListener("broker", e => { state = JSON.parse(e.data); render(); });
        return;
      }
      // A device's screen in broker mode: who hears it, and its command button.
      const panel = document.getElementById("bk-command");
      if (!panel) return;
      const address = panel.dataset.address, characteristic = panel.dataset.characteristic;
      const bare = address.split("/")[0];
      const via = document.getElementById("bk-via"), reply = document.getElementById("bk-reply");
      const status = document.getElementById("hr-status") || document.getElementById("ac-status");
      const title = document.getElementById("hr-name") || document.getElementById("ac-name");
      if (status) status.textContent = "values come from the gateways: Subscribe asks the strongest one for them";
      function show(s) {
        const d = (s.devices || []).find(x => x.address === bare);
        via.replaceChildren();
        if (!d) { via.textContent = "no gateway reports " + bare + " now"; return; }
        if (d.name && title) title.textContent = d.name + " " + bare;
        via.append("Heard by ");
        (d.gateways || []).forEach((g, i) => { if (i) via.append(", "); via.appendChild(sighting(g)); });
        via.append(d.strongest ? "." : "; no online gateway reports an RSSI.");
      }
      function send(op) {
        reply.textContent = op + " sent…"; reply.className = ""; delete reply.dataset.ok;
        post("/api/broker/command", { address, characteristic, op }).then(r => {
          if (r.error) { reply.textContent = (r.gateway ? r.gateway + ": " : "") + r.error; reply.className = "error"; reply.dataset.ok = "no"; return; }
          const answer = r.reply || {};
          if (answer.ok) {
            reply.textContent = r.gateway + ": " + op + (answer.already ? " (already)" : "") + (answer.topic ? ", values on " + answer.topic : "");
            reply.dataset.ok = "yes";
            if (status && op === "subscribe") status.textContent = "subscribed through " + r.gateway;
          } else {
            reply.textContent = r.gateway + " refused: " + (answer.error || JSON.stringify(answer)) + (answer.code ? " (" + answer.code + ")" : "");
            reply.className = "error"; reply.dataset.ok = "no";
          }
        }).catch(e => { reply.textContent = String(e); reply.className = "error"; reply.dataset.ok = "no"; });
      }
      document.getElementById("bk-subscribe").addEventListener("click", () => send("subscribe"));
      document.getElementById("bk-unsubscribe").addEventListener("click", () => send("unsubscribe"));
      // The buttons work from here on (a script driving the page waits for this).
      panel.dataset.ready = "yes";
      get("/api/broker").then(show).catch(() => {});
      new EventSource(withToken("/api/broker-events")).addEventListener("broker", e => show(JSON.parse(e.data)));
    })();
    """

    /// The styles of these screens, appended to `UIAssets.css`.
    static let css = """
    .bk-online { color: #2a8a2a; } .bk-offline { color: #c33; } .bk-unknown { color: var(--muted); }
    .bk-sighting { white-space: nowrap; margin-right: .6em; }
    #bk-via .bk-sighting { margin-right: 0; }
    .bk-best, .bk-strongest { font-weight: 600; }
    .bk-star { color: #d4a017; }
    .bk-values a { white-space: nowrap; }
    .bk-panel { margin-top: 1.5em; padding: .5em .8em; border: 1px solid var(--line); border-radius: 6px; }
    """
}

/// The `/serve` screen's markup, script and style, embedded like the rest of `UIAssets`: the
/// profile to start, the centrals connected to it, and its log as it happens.
enum UIServeAssets {
    static let body = """
    <h1>Serve</h1>
    <p class="muted">Runs one of the <code>ble serve</code> profiles on this controller, beside the central the
    other screens use: it advertises, serves its GATT database, and logs what the centrals that connect ask.</p>
    <form id="serve-form" class="controls" autocomplete="off">
    <label>Profile <select id="serve-profile"></select></label>
    <label>Name <input id="serve-name" type="text" placeholder="SwiftBLE" maxlength="64" autocomplete="off"></label>
    <button id="serve-start" type="submit" disabled>Start</button>
    <button id="serve-stop" type="button" disabled>Stop</button>
    </form>
    <p id="serve-summary" class="muted"></p>
    <p id="serve-status" role="status">connecting…</p>
    <h2>Connected centrals</h2>
    <table id="serve-centrals">
    <thead><tr><th>Central</th><th>Link</th><th>ATT_MTU</th></tr></thead>
    <tbody></tbody>
    </table>
    <h2>Log</h2>
    <ol id="serve-log" class="serve-log" aria-live="polite"></ol>
    """

    static let script = """
    "use strict";
    (function () {
      const log = document.getElementById("serve-log");
      if (!log) return;
      const select = document.getElementById("serve-profile");
      const name = document.getElementById("serve-name");
      const start = document.getElementById("serve-start");
      const stop = document.getElementById("serve-stop");
      const status = document.getElementById("serve-status");
      const summary = document.getElementById("serve-summary");
      const centrals = document.querySelector("#serve-centrals tbody");
      let profiles = [];
      function say(text, error) { status.textContent = text; status.className = error ? "error" : ""; }
      function describe() {
        const p = profiles.find(p => p.name === select.value);
        summary.textContent = p ? p.summary : "";
      }
      function state(m) {
        if (profiles.length === 0) {
          profiles = m.profiles;
          for (const p of profiles) { const o = document.createElement("option"); o.value = p.name; o.textContent = p.name; select.appendChild(o); }
          describe();
        }
        const r = m.running;
        status.dataset.state = m.busy ? "busy" : r ? "running" : "stopped";
        status.dataset.address = r && r.address ? r.address + "/" + r.addressType : "";
        if (m.stopping) say("stopping…");
        else if (m.busy) say("working…");
        else if (r) say("serving " + r.profile + " as \\"" + r.name + "\\" at " + (r.address || "?") + " " + (r.addressType === "public" ? "pub" : "rnd"));
        else say("not serving");
        start.disabled = !!r || m.busy;
        stop.disabled = !(r || m.starting) || m.stopping;
        select.disabled = name.disabled = !!r || m.busy;
        if (r) { select.value = r.profile; name.value = r.name; }
        describe();
        centrals.replaceChildren();
        for (const c of m.centrals) {
          const row = document.createElement("tr");
          for (const text of [c.address, "#" + c.connection, c.mtu === null ? "23" : String(c.mtu)]) {
            const td = document.createElement("td"); td.textContent = text; row.appendChild(td);
          }
          centrals.appendChild(row);
        }
        if (m.centrals.length === 0) {
          const row = document.createElement("tr"), td = document.createElement("td");
          td.colSpan = 3; td.className = "muted"; td.textContent = "none"; row.appendChild(td); centrals.appendChild(row);
        }
      }
      function entry(m) {
        const li = document.createElement("li");
        li.dataset.event = m.entry.event;
        const time = document.createElement("span"); time.className = "muted"; time.textContent = "+" + m.t.toFixed(1) + " s ";
        li.append(time, document.createTextNode(m.line));
        log.appendChild(li);
        while (log.children.length > 200) log.removeChild(log.firstChild);
        log.scrollTop = log.scrollHeight;
      }
      select.addEventListener("change", describe);
      const events = new EventSource(withToken("/api/serve-events"));
      events.addEventListener("serve", e => {
        const m = JSON.parse(e.data);
        if (m.type === "state") state(m); else if (m.type === "log") entry(m);
      });
      document.getElementById("serve-form").addEventListener("submit", e => {
        e.preventDefault();
        log.replaceChildren();
        const body = { profile: select.value };
        if (name.value.trim()) body.name = name.value.trim();
        post("/api/serve/start", body).then(r => { if (r.error) say(r.error, true); }).catch(() => say("the request failed", true));
      });
      stop.addEventListener("click", () => {
        post("/api/serve/stop", {}).then(r => { if (r.error) say(r.error, true); }).catch(() => say("the request failed", true));
      });
    })();
    """

    /// The styles of this screen, appended to `UIAssets.css`.
    static let css = """
    .serve-log { font-family: ui-monospace, monospace; max-height: 24em; overflow: auto; padding-left: 2.5em; word-break: break-all; }
    select { font: inherit; }
    """
}

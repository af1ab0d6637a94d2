/// The `/sample` screen's markup, script and style (docs/SYSTEMS.md S2), embedded like the rest of
/// `UIAssets`: a Run button, and the steps as a list that grows as they happen.
enum UISampleAssets {
    static let body = """
    <h1>Sample central <small>S2</small></h1>
    <p class="muted">Scans for service 068c47b7-fc04-4d47-975a-7952be1a576f, says the manager's state, connects,
    discovers, reads, writes "Write Data NNN" with response, subscribes and takes notifications, as
    <code>ble sample</code> does.</p>
    <form id="sample-form" class="controls" autocomplete="off">
    <label>Notifications <input id="sample-count" type="number" min="1" max="20" value="3" inputmode="numeric"></label>
    <label>Address <input id="sample-address" type="text" placeholder="any" autocomplete="off" size="17"></label>
    <button id="sample-run" type="submit" disabled>Run</button>
    </form>
    <p id="sample-status" role="status">not run yet</p>
    <ol id="sample-steps" class="steps" aria-live="polite"></ol>
    """

    static let script = """
    "use strict";
    (function () {
      const list = document.getElementById("sample-steps");
      if (!list) return;
      const form = document.getElementById("sample-form");
      const button = document.getElementById("sample-run");
      const status = document.getElementById("sample-status");
      let run = 0;
      function say(text, error) { status.textContent = text; status.className = error ? "error" : ""; }
      function add(m) {
        const li = document.createElement("li");
        li.dataset.step = m.step === null ? "" : String(m.step);
        const n = document.createElement("span"); n.className = "step-n"; n.textContent = m.step === null ? "·" : String(m.step);
        const label = document.createElement("span"); label.className = "step-label"; label.textContent = m.label;
        const text = document.createElement("span"); text.className = "step-text"; text.textContent = m.text;
        li.append(n, label, text);
        list.appendChild(li);
      }
      const events = new EventSource(withToken("/api/sample-events"));
      events.addEventListener("sample", e => {
        const m = JSON.parse(e.data);
        if (m.run !== run) { run = m.run; list.replaceChildren(); }
        switch (m.type) {
        case "started": say("run " + m.run + ": running…"); button.disabled = true; break;
        case "step": add(m); break;
        case "done":
          say("run " + m.run + ": done, wrote \\"" + m.written + "\\", " + m.notifications + " notification(s)");
          list.dataset.done = "done"; button.disabled = false; break;
        case "error": say("run " + m.run + ": " + m.message, true); list.dataset.done = "error"; button.disabled = false; break;
        }
      });
      form.addEventListener("submit", e => {
        e.preventDefault();
        delete list.dataset.done;
        const body = { count: Number(document.getElementById("sample-count").value) };
        const address = document.getElementById("sample-address").value.trim();
        if (address) body.address = address;
        post("/api/sample/run", body).then(r => { if (r.error) say(r.error, true); }).catch(() => say("the request failed", true));
      });
      // The page comes with Run disabled: before this script has the form, a click (or Enter)
      // would submit it natively, to this address without its query, so without the token.
      button.disabled = false;
    })();
    """

    /// The styles of this screen, appended to `UIAssets.css`.
    static let css = """
    .muted { color: var(--muted); }
    .steps { list-style: none; padding: 0; font-family: ui-monospace, monospace; }
    .steps li { display: grid; grid-template-columns: 2em 9em 1fr; gap: .5em; padding: .25em 0; border-bottom: 1px solid var(--line); }
    .steps .step-n { font-weight: 600; text-align: right; }
    .steps .step-label { color: var(--muted); }
    .steps .step-text { word-break: break-all; }
    @media (max-width: 40em) { .steps li { grid-template-columns: 1.6em 1fr; } .steps .step-text { grid-column: 2; } }
    """
}

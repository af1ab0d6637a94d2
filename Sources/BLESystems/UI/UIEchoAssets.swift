/// The `/echo` screen's markup, script and style (docs/SYSTEMS.md S1), embedded like the rest of
/// `UIAssets`: two forms (so Enter sends, and the keyboard reaches everything), the flow's
/// states as they happen, a progress bar while the reply arrives, and the received image.
enum UIEchoAssets {
    /// The page's body; the URL box starts with `suggestedURL`.
    static func body(suggestedURL: String?) -> String {
        """
        <h1>Echo</h1>
        <p class="muted">Text and images over the framed stream of service 54f06857-695e-47e4-aea8-c78184ad6c75: each message finds an echo server, connects, sends and waits for the reply.</p>
        <p><span id="echo-status" role="status">idle</span></p>
        <section class="echo-part">
        <h2>Text</h2>
        <form id="echo-form" class="controls" autocomplete="off"><label for="echo-text">Message</label>
        <input id="echo-text" type="text" autocomplete="off" required placeholder="hello (a text starting with http is fetched)">
        <button id="echo-send" type="submit" disabled>Send</button></form>
        <p>Reply: <output id="echo-reply" aria-live="polite">–</output></p>
        </section>
        <section class="echo-part">
        <h2>Fetch an image</h2>
        <form id="echo-fetch-form" class="controls" autocomplete="off"><label for="echo-url">URL</label>
        <input id="echo-url" type="text" autocomplete="off" required placeholder="http://… or file://…" value="\(Markup.escaped(suggestedURL ?? "", apostrophes: true))">
        <button id="echo-fetch" type="submit" disabled>Fetch</button></form>
        <p><progress id="echo-progress" max="100" value="0" aria-label="reply received"></progress> <span id="echo-progress-text"></span></p>
        <p id="echo-fetch-error" class="error" role="alert"></p>
        <p><a id="echo-download" href="#" download hidden>Download the received bytes</a></p>
        <figure id="echo-figure" hidden><img id="echo-image" alt="the image the echo server sent"><figcaption id="echo-caption"></figcaption></figure>
        </section>
        <h2>Steps</h2>
        <ol id="echo-log" aria-live="polite"></ol>
        """
    }

    static let script = """
    "use strict";
    (function () {
      const form = document.getElementById("echo-form");
      if (!form) return;
      const status = document.getElementById("echo-status");
      const log = document.getElementById("echo-log");
      const progress = document.getElementById("echo-progress");
      const progressText = document.getElementById("echo-progress-text");
      const fetchError = document.getElementById("echo-fetch-error");
      const figure = document.getElementById("echo-figure");
      const image = document.getElementById("echo-image");
      const buttons = [document.getElementById("echo-send"), document.getElementById("echo-fetch")];
      function say(message, error) { status.textContent = message; status.className = error ? "error" : ""; }
      function step(text) { const li = document.createElement("li"); li.textContent = text; log.appendChild(li); }
      function busy(on) { buttons.forEach(b => { b.disabled = on; }); }
      function send(path, body) {
        busy(true);
        // The reply and the states come over the event stream, to every open page; from this
        // answer only an error is shown (another message under way, a bad request).
        post(path, body).then(r => { if (r.error) say(r.error, true); }).catch(e => say(String(e), true)).finally(() => busy(false));
      }
      form.addEventListener("submit", e => { e.preventDefault(); send("/api/echo", { text: document.getElementById("echo-text").value }); });
      document.getElementById("echo-fetch-form").addEventListener("submit", e => {
        e.preventDefault(); send("/api/echo/fetch", { url: document.getElementById("echo-url").value });
      });
      // The page comes with Send and Fetch disabled: before this script has the forms, a click
      // (or Enter) would submit one natively, to this address without its query (the token).
      busy(false);
      function bytes(n) { return n < 10000 ? n + " bytes" : (n / 1000).toFixed(1) + " kB"; }
      const events = new EventSource(withToken("/api/echo-events"));
      events.addEventListener("echo", e => {
        const m = JSON.parse(e.data);
        switch (m.type) {
        case "start":
          log.replaceChildren(); busy(true);
          step("sending a " + m.code + " frame" + (m.text === null ? "" : ": " + m.text));
          if (m.code === "U") { progress.value = 0; progressText.textContent = ""; fetchError.textContent = ""; }
          say("starting…"); break;
        case "poweredOn": step("powered on"); break;
        case "scanning": step("scanning for the echo service, up to " + m.timeoutSeconds + " s"); say("scanning…"); break;
        case "discovered": step("discovered " + (m.name || "(unnamed)") + " " + m.address + (m.rssi === null ? "" : ", RSSI " + m.rssi + " dBm")); break;
        case "connecting": step("connecting to " + m.address); say("connecting…"); break;
        case "connected": step("connected: ATT MTU " + m.mtu + ", writes of up to " + m.maximumWriteLength + " bytes"); say("connected"); break;
        case "sending": step("sending " + m.bytes + " bytes in " + m.writes + " write(s)"); say("waiting for the reply…"); break;
        case "receiving":
          progress.max = m.total; progress.value = m.received;
          progressText.textContent = bytes(m.received) + " of " + bytes(m.total);
          say("receiving the reply…"); break;
        case "reply":
          step("reply: a " + m.code + " frame of " + bytes(m.size) + " in " + m.notifications + " notification(s)");
          if (m.code === "I") {
            progress.max = Math.max(1, m.size); progress.value = progress.max;
            progressText.textContent = bytes(m.size) + " in " + m.seconds.toFixed(1) + " s";
            figure.hidden = false;
            document.getElementById("echo-caption").textContent = bytes(m.size) + (m.contentType ? ", " + m.contentType : ", not a type the browser shows");
            if (m.contentType) image.src = withToken(m.image); else image.removeAttribute("src");
            // Whatever the type, the bytes download; for no browser format that is all there is.
            const download = document.getElementById("echo-download");
            download.href = withToken(m.image); download.hidden = false;
            download.textContent = m.contentType ? "Download the image" : "Download the received bytes (" + bytes(m.size) + ", not an image the browser shows)";
          } else if (m.request === "U") {
            fetchError.textContent = m.text; progressText.textContent = "";
          } else {
            document.getElementById("echo-reply").textContent = m.text;
          }
          say("replied"); break;
        case "closed": step("closed"); say("done"); busy(false); break;
        case "error": step("error: " + m.message); say(m.message, true); busy(false); break;
        }
      });
    })();
    """

    /// The styles of this screen, appended to `UIAssets.css`.
    static let css = """
    .echo-part { margin: 1em 0; padding: .5em .8em; border: 1px solid var(--line); border-radius: 6px; }
    .echo-part h2 { margin-top: .2em; font-size: 1.1em; }
    #echo-url, #echo-text { flex: 1 1 14em; padding: .2em .4em; }
    #echo-reply { font-family: ui-monospace, monospace; }
    #echo-progress { width: min(20em, 70%); vertical-align: middle; }
    #echo-image { max-width: 100%; image-rendering: pixelated; min-width: min(256px, 100%); border: 1px solid var(--line); }
    #echo-log { color: var(--muted); }
    """
}

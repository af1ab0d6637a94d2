#!/usr/bin/env python3
"""Drives headless Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe, fds
3 and 4, messages separated by NUL) for the `ble ui` browser tests: opens --url, waits until the
JavaScript --until expression is truthy (polling, bounded by --timeout seconds), prints the JSON
value of --expr (default: the --until value) on stdout, and writes --screenshot PNG if given.
--block PATTERN (repeatable) keeps the page from loading the URLs that match (Network.setBlockedURLs:
`*` matches any characters), to see what a page does before (or without) one of its scripts.
When --until does not hold, what the page was (address, title, text) goes to stderr.
Exit status 0 when the condition held, 1 on timeout, 2 when Chromium cannot start.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


class Pipe:
    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.w = os.fdopen(write_fd, "wb", buffering=0)
        self.r = os.fdopen(read_fd, "rb", buffering=0)
        self.buffer = b""
        self.next_id = 0

    def call(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.w.write(json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for reply in self.read():
                if reply.get("id") == self.next_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
        raise TimeoutError(method)

    def read(self) -> list[dict]:
        chunk = self.r.read(65536)
        if not chunk:
            raise EOFError("chromium closed the pipe")
        self.buffer += chunk
        *messages, self.buffer = self.buffer.split(b"\0")
        return [json.loads(m) for m in messages if m]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--until", required=True, help="a JavaScript expression to wait for")
    parser.add_argument("--expr", help="the expression whose value to print (default: --until)")
    parser.add_argument("--timeout", type=float, default=20)
    parser.add_argument("--screenshot")
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--height", type=int, default=700)
    parser.add_argument("--block", action="append", default=[], help="a URL pattern the page may not load")
    args = parser.parse_args()
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        print("no chromium on PATH", file=sys.stderr)
        return 2
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()
    profile = tempfile.mkdtemp(prefix="ble-ui-chromium-")
    # Chromium reads commands on fd 3 and writes replies on fd 4.
    def child_fds() -> None:
        # Through fds above both, so neither is overwritten before it is moved.
        r, w = os.dup(to_chrome_r) + 100, os.dup(from_chrome_w) + 100
        os.dup2(to_chrome_r, r)
        os.dup2(from_chrome_w, w)
        os.dup2(r, 3)
        os.dup2(w, 4)
    proc = subprocess.Popen(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
         f"--user-data-dir={profile}", f"--window-size={args.width},{args.height}", "about:blank"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(os.environ.get('BLE_UI_CHROMIUM_LOG', os.devnull), 'w'),
        # Not close_fds: it would run after preexec_fn and close 3 and 4 again.
        preexec_fn=child_fds, close_fds=False)
    os.close(to_chrome_r)
    os.close(from_chrome_w)
    pipe = Pipe(to_chrome_w, from_chrome_r)
    try:
        target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        pipe.call("Page.enable", session=session)
        if args.block:
            pipe.call("Network.enable", session=session)
            pipe.call("Network.setBlockedURLs", {"urls": args.block}, session=session)
        pipe.call("Page.navigate", {"url": args.url}, session=session)
        deadline = time.monotonic() + args.timeout
        value = None
        held = False
        while time.monotonic() < deadline:
            result = pipe.call("Runtime.evaluate", {"expression": args.until, "returnByValue": True}, session=session)
            value = result.get("result", {}).get("value")
            if value:
                held = True
                break
            time.sleep(0.2)
        if args.expr:
            result = pipe.call("Runtime.evaluate", {"expression": args.expr, "returnByValue": True}, session=session)
            value = result.get("result", {}).get("value")
            if "exceptionDetails" in result:
                print(f"--expr threw: {result['exceptionDetails'].get('exception', {}).get('description')}", file=sys.stderr)
        if not held:
            # What the page was when the condition did not hold, for the test's failure message.
            seen = pipe.call("Runtime.evaluate", {"expression": "({ href: location.href, ready: document.readyState, title: document.title, "
                                                  "text: (document.body ? document.body.innerText : '').slice(0, 400) })", "returnByValue": True}, session=session)
            print(f"--until did not hold within {args.timeout} s; the page: {json.dumps(seen.get('result', {}).get('value'))}", file=sys.stderr)
        print(json.dumps(value))
        if args.screenshot:
            shot = pipe.call("Page.captureScreenshot", {"format": "png"}, session=session)
            with open(args.screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        return 0 if held else 1
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

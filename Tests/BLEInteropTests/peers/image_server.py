#!/usr/bin/env python3
"""Serves one PNG over HTTP on 127.0.0.1 for the `ble ui` echo browser test: the picture the
echo server (a demo peripheral of `ble ui --hci virtual`) is asked to fetch. Picks a free port,
prints `PORT n` on stdout, then serves GET /picture.png (--width x --height pixels, made here
with zlib, large enough that its reply takes many notifications), and GET /page.html (an HTML
page with a script: a reply that is no image) until SIGTERM or SIGINT. Every other path is 404.
Logs nothing."""
from __future__ import annotations

import argparse
import http.server
import signal
import struct
import sys
import zlib


def png(width: int, height: int) -> bytes:
    """An RGB PNG (PNG spec §11): IHDR, one IDAT of filter-0 rows, IEND, each chunk with its CRC."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = bytearray()
    seed = 12345
    for y in range(height):
        rows.append(0)
        for x in range(width):
            # A gradient with noise in it, so that it does not compress to nothing.
            seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
            rows += bytes((x * 255 // max(1, width - 1), y * 255 // max(1, height - 1), (seed >> 16) & 0xFF))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows), 6)) + chunk(b"IEND", b"")


PAGE = b"<!doctype html><html><body><script>document.title = 'ran'</script>not an image</body></html>\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--width", type=int, default=120)
    parser.add_argument("--height", type=int, default=90)
    args = parser.parse_args()
    body = png(args.width, args.height)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            path = self.path.split("?")[0]
            if path not in ("/picture.png", "/page.html"):
                self.send_error(404)
                return
            data, kind = (body, "image/png") if path == "/picture.png" else (PAGE, "text/html")
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Sends one raw HTTP request to --port on 127.0.0.1 (the bytes of --request, with \\r\\n for
line ends; {port} replaced by the port) and prints the status line of the answer. For the
`ble ui` tests of what a browser would not send: a foreign Host, no token, a bad request."""
import argparse
import socket
import sys

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--request", required=True)
args = parser.parse_args()
raw = args.request.replace("{port}", str(args.port)).replace("\\r\\n", "\r\n").encode()
with socket.create_connection(("127.0.0.1", args.port), timeout=10) as s:
    s.sendall(raw)
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
print(data.split(b"\r\n", 1)[0].decode(errors="replace"))
sys.exit(0)

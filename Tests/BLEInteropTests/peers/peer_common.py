"""Shared plumbing for the Bumble peers used by the interop tests.

The contract with the Swift test harness (Tests/BLEInteropTests/Support/PeerProcess.swift):
  * every peer takes --transport tcp-client:127.0.0.1:PORT and --address <static random address>;
  * stdout carries exactly one line "READY" once the peer is advertising / ready, then one JSON
    object per line for events ({"event": "...", ...}); nothing else is ever written to stdout;
  * logs go to stderr (--verbose for Bumble's debug log);
  * SIGTERM or SIGINT ends the peer cleanly with exit status 0.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from typing import Any, Awaitable, Callable

from bumble.device import Device, DeviceConfiguration
from bumble.hci import Address
from bumble.transport import open_transport


_ready = False
_early: list[str] = []  # events emitted before READY, printed right after it


def emit(event: str, **fields: Any) -> None:
    """Write one JSON event line to stdout and flush it at once (the test reads it live).

    Events that happen before the peer printed READY (e.g. advertising reports that arrive while
    the scan-enable command is still completing) are held back and printed right after READY,
    so READY is always the first line."""
    record = {"event": event}
    record.update(fields)
    line = json.dumps(record, separators=(",", ":")) + "\n"
    if not _ready:
        _early.append(line)
        return
    sys.stdout.write(line)
    sys.stdout.flush()


def ready() -> None:
    global _ready
    if _ready:
        return
    _ready = True
    sys.stdout.write("READY\n" + "".join(_early))
    _early.clear()
    sys.stdout.flush()


def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--transport", required=True,
                        help="Bumble transport spec, e.g. tcp-client:127.0.0.1:6402")
    parser.add_argument("--address", required=True,
                        help="this device's static random address, e.g. C4:12:34:56:78:9A")
    parser.add_argument("--verbose", action="store_true", help="Bumble debug logging on stderr")
    return parser


def parse_static_address(text: str) -> Address:
    address = Address(text, Address.RANDOM_DEVICE_ADDRESS)
    # Core spec Vol 6 Part B §1.3.2.1: a static random address has its two top bits set.
    top = int(text.split(":")[0], 16)
    if top & 0xC0 != 0xC0:
        raise SystemExit(f"--address {text} is not a static random address (top bits must be 11)")
    return address


def make_device(transport: Any, name: str, address: str) -> Device:
    config = DeviceConfiguration(name=name, address=parse_static_address(address))
    # An IRK of its own, derived from the address: a bare DeviceConfiguration keeps Bumble's
    # all-zero default, the same for every peer, so two peers bonded in one store would claim
    # one identity and our stack refuses the second.
    config.irk = (bytes(config.address) * 3)[:16]
    # Keep the default GAP/GATT services: the tests discover them like on any real device.
    return Device.from_config_with_hci(config, transport.source, transport.sink)


def watch_connections(device: Device,
                      on_connect: Callable[[Any], None] | None = None,
                      on_disconnect: Callable[[Any, int], None] | None = None) -> None:
    """Report every connection and disconnection as JSON events."""

    def on_connection(connection: Any) -> None:
        emit("connected", peer=str(connection.peer_address).split("/")[0],
             handle=connection.handle, role="central" if connection.role == 0 else "peripheral")

        def on_disconnection(reason: int) -> None:
            emit("disconnected", reason=int(reason), handle=connection.handle)
            if on_disconnect:
                on_disconnect(connection, int(reason))

        def on_mtu() -> None:
            emit("mtu", mtu=connection.att_mtu, handle=connection.handle)

        connection.on("disconnection", on_disconnection)
        connection.on("connection_att_mtu_update", on_mtu)
        if on_connect:
            on_connect(connection)

    device.on("connection", on_connection)


def run(main: Callable[[argparse.Namespace, asyncio.Event], Awaitable[int | None]],
        args: argparse.Namespace) -> None:
    """Run `main(args, stop)` until it returns or SIGTERM/SIGINT sets `stop`; exit 0 on a signal."""
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )

    async def runner() -> int:
        global _STOP
        stop = _STOP = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        loop.create_task(_watch_parent(stop))
        task = asyncio.create_task(main(args, stop))
        stopper = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            stopper.cancel()
            return int(task.result() or 0)
        task.cancel()
        try:
            await asyncio.wait_for(task, timeout=2)
        except (asyncio.CancelledError, asyncio.TimeoutError, Exception):  # noqa: BLE001
            pass
        return 0

    try:
        status = asyncio.run(runner())
    except KeyboardInterrupt:
        status = 0
    sys.stdout.flush()
    sys.exit(status)


async def _watch_parent(stop: asyncio.Event) -> None:
    """Stop when the process that started us is gone (e.g. a test runner killed with -9), so no
    peer outlives its test and keeps a stale device on the shared rootcanal medium."""
    parent = os.getppid()
    while not stop.is_set():
        await asyncio.sleep(1.0)
        if os.getppid() != parent:
            logging.getLogger(__name__).warning("parent process %d is gone: stopping", parent)
            stop.set()


async def open_hci(spec: str):
    """Open the Bumble transport, and end the peer when the controller goes away.

    When rootcanal stops (scripts/test.sh stops it on exit), the TCP connection closes and the
    transport's source reports termination; a peer then has nothing left to do.
    """
    transport = await open_transport(spec)
    closing = False
    original_close = transport.close

    async def close() -> None:
        nonlocal closing
        closing = True  # our own close, not the controller going away
        await original_close()

    transport.close = close
    terminated = getattr(transport.source, "terminated", None)
    if terminated is not None:
        def on_terminated(_: Any) -> None:
            if not closing and _STOP is not None and not _STOP.is_set():
                logging.getLogger(__name__).warning("HCI transport closed: stopping")
                emit("transport_closed")
                _STOP.set()
        terminated.add_done_callback(on_terminated)
    return transport


_STOP: asyncio.Event | None = None  # the running peer's stop event (set by run())


def uuid_text(uuid: Any) -> str:
    """UUIDs as the Swift side prints them: "180D" for 16-bit, full lower-case for 128-bit."""
    raw = bytes(uuid.uuid_bytes)[::-1]  # Bumble stores UUIDs little-endian
    if len(raw) in (2, 4):
        return raw.hex().upper()
    h = raw.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

#!/usr/bin/env python3
"""Round trips to the first notification, this stack's client and Bumble's against one server.

The round-trip figure: ATT requests other than Exchange MTU from the connection to the first
notification, for "subscribe to Heart Rate Measurement (0x2A37) on a heart-rate sensor". The
sensor is `ble serve heart-rate` on a `ble radio --no-air-time` (the project's virtual radio over
TCP, which Bumble hosts join as `tcp-client:HOST:PORT`), so both clients talk to the same server.

This stack: `ble subscribe ADDRESS 2A37 --count 1 --capture FILE`, counted in the btsnoop from
its LE Connection Complete to the first Handle Value Notification received (the rules of
Tests/BLETestSupport/ATTRoundTrips.swift: requests are ATT opcodes that expect a response, Vol 3
Part F §3.4, Exchange MTU left out), in three runs:
  cold       a fresh attribute cache (`--gatt-cache DIR`) and no bond;
  reconnect  the same command again: the cache entry is valid if the Database Hash is unchanged;
  bonded     after `ble pair` and one subscription, again: the server kept the CCCD (§2.5.2).

Bumble 0.0.236 (a `Device` over the same radio, with an in-memory key store): its GATT client has
no attribute cache, so each connection discovers again; counted at its `send_request`, from the
connection to the subscriber's first value, in two ways:
  full       `Peer.discover_all()` (every service, characteristic, descriptor), then `subscribe`;
  targeted   the Heart Rate service by UUID, its 2A37 characteristic by UUID, then `subscribe`
             (which finds that characteristic's descriptors);
each cold, on a reconnection, and bonded (paired on an earlier connection, encrypted first).

Output, one line per figure:
  round trips: this stack cold N [opcodes]
  round trips: bumble full cold N [opcodes]
  ...

  .venv/bin/python scripts/lib/round_trips.py --ble .build/release/ble [--bumble-only]
"""
import argparse
import asyncio
import json
import logging
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netutil  # noqa: E402  (free_ports)

from bumble import hci  # noqa: E402
from bumble.core import UUID  # noqa: E402
from bumble.device import Device, Peer  # noqa: E402
from bumble.keys import MemoryKeyStore  # noqa: E402
from bumble.transport import open_transport  # noqa: E402

HEART_RATE = 0x180D
MEASUREMENT = 0x2A37
EXCHANGE_MTU = 0x02
# ATT requests (Vol 3 Part F §3.4, Table 3.37), Exchange MTU left out.
REQUESTS = {0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20}
SENSOR_ADDRESS = "C3:52:54:00:12:37"
TIMEOUT = 60


def btsnoop_records(data: bytes):
    """(sent, H4 packet bytes) for each record of a btsnoop file (RFC 1761 layout, datalink 1002)."""
    if data[:8] != b"btsnoop\0":
        raise ValueError("not a btsnoop file")
    offset = 16
    while offset + 24 <= len(data):
        _original, included, flags, _drops, _time = struct.unpack_from(">IIIIq", data, offset)
        offset += 24
        packet = data[offset:offset + included]
        offset += included
        yield (flags & 1) == 0, packet


def count_in_btsnoop(path: str) -> list[int]:
    """ATT request opcodes the host sent from the first LE Connection Complete to the first notification."""
    with open(path, "rb") as f:
        data = f.read()
    connected, requests = False, []
    for sent, p in btsnoop_records(data):
        if not p:
            continue
        if p[0] == 0x04 and not sent:  # HCI event
            # LE Meta (0x3E): Connection Complete 0x01, Enhanced 0x0A, Enhanced v2 0x29; status 0.
            if len(p) > 4 and p[1] == 0x3E and p[3] in (0x01, 0x0A, 0x29) and not connected:
                connected = p[4] == 0x00
        elif p[0] == 0x02 and connected and len(p) >= 10:  # ACL
            boundary = (p[2] >> 4) & 0x03
            channel = p[7] | p[8] << 8
            if boundary in (0b00, 0b10) and channel == 0x0004:
                opcode = p[9]
                if sent and opcode in REQUESTS:
                    requests.append(opcode)
                if not sent and opcode == 0x1B:
                    return requests
    raise ValueError(f"{path}: no notification after a Connection Complete")


def line(side: str, scenario: str, opcodes: list[int]) -> None:
    listed = " ".join(f"0x{o:02x}" for o in opcodes)
    print(f"round trips: {side} {scenario} {len(opcodes)} [{listed}]", flush=True)


class Rig:
    """`ble radio --no-air-time` and `ble serve heart-rate` on it, stopped on exit."""

    def __init__(self, ble: str, directory: str) -> None:
        self.ble = ble
        self.directory = directory
        self.processes: list[subprocess.Popen] = []
        port = netutil.free_ports(1)[0]
        self.hci = f"tcp:127.0.0.1:{port}"
        radio = self.start(["radio", "--listen", self.hci, "--no-air-time"], "radio")
        if netutil.wait_listen(radio.pid, port, 30) != 0:
            raise RuntimeError("ble radio did not listen in time")
        self.start(["serve", "heart-rate", "--json", "--name", "HRM", "--address", SENSOR_ADDRESS, "--hci", self.hci],
                   "serve", environment={"BLE_BONDS": os.path.join(directory, "server-bonds")})
        self.wait_for_ready(os.path.join(directory, "serve.out"))

    @staticmethod
    def wait_for_ready(path: str) -> None:
        """Waits (bounded) for the `ready` event `ble serve --json` prints once it advertises."""
        for _ in range(TIMEOUT * 10):
            with open(path) as f:
                for raw in f:
                    if raw.startswith("{") and json.loads(raw).get("event") == "ready":
                        return
            time.sleep(0.1)
        raise RuntimeError("ble serve heart-rate was not ready in time")

    def start(self, arguments: list[str], name: str, environment: dict | None = None) -> subprocess.Popen:
        out = open(os.path.join(self.directory, f"{name}.out"), "w")
        log = open(os.path.join(self.directory, f"{name}.log"), "w")
        process = subprocess.Popen([self.ble] + arguments, stdout=out, stderr=log, text=True,
                                   env={**os.environ, **(environment or {})})
        self.processes.append(process)
        return process

    def ble_run(self, arguments: list[str], environment: dict) -> None:
        result = subprocess.run([self.ble] + arguments + ["--hci", self.hci], capture_output=True, text=True,
                                timeout=TIMEOUT, env={**os.environ, **environment})
        if result.returncode != 0:
            raise RuntimeError(f"ble {' '.join(arguments)}: status {result.returncode}\n{result.stdout}{result.stderr}")

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def ours(rig: Rig) -> None:
    target = f"{SENSOR_ADDRESS}/random"

    def subscribe(name: str, cache: str, bonds: str) -> list[int]:
        capture = os.path.join(rig.directory, f"{name}.btsnoop")
        rig.ble_run(["subscribe", target, "2A37", "--count", "1", "--timeout", "30", "--capture", capture,
                     "--gatt-cache", cache], {"BLE_BONDS": bonds})
        return count_in_btsnoop(capture)

    cache, bonds = os.path.join(rig.directory, "cache"), os.path.join(rig.directory, "bonds")
    line("this stack", "cold", subscribe("cold", cache, bonds))
    line("this stack", "reconnect", subscribe("reconnect", cache, bonds))
    cache, bonds = os.path.join(rig.directory, "bonded-cache"), os.path.join(rig.directory, "bonded-bonds")
    rig.ble_run(["pair", target], {"BLE_BONDS": bonds})
    subscribe("bonded-first", cache, bonds)
    line("this stack", "bonded", subscribe("bonded", cache, bonds))


class CountingClient:
    """Counts the ATT requests a Bumble connection's GATT client sends."""

    def __init__(self, connection) -> None:
        self.opcodes: list[int] = []
        client = connection.gatt_client
        send = client.send_request

        async def counted(request):
            if request.op_code != EXCHANGE_MTU:
                self.opcodes.append(int(request.op_code))
            return await send(request)

        client.send_request = counted


async def bumble_subscribe(device: Device, targeted: bool, pair: bool, encrypt: bool) -> list[int]:
    address = hci.Address(SENSOR_ADDRESS, hci.Address.RANDOM_DEVICE_ADDRESS)
    connection = await asyncio.wait_for(device.connect(address), TIMEOUT)
    counter = CountingClient(connection)
    if pair:
        await asyncio.wait_for(connection.pair(), TIMEOUT)
    if encrypt:
        await asyncio.wait_for(connection.encrypt(), TIMEOUT)
    peer = Peer(connection)
    await peer.request_mtu(247)
    if targeted:
        services = await peer.discover_service(UUID.from_16_bits(HEART_RATE))
        characteristics = await peer.discover_characteristics([UUID.from_16_bits(MEASUREMENT)], services[0])
    else:
        await peer.discover_all()
        characteristics = peer.get_characteristics_by_uuid(UUID.from_16_bits(MEASUREMENT))
    first = asyncio.get_running_loop().create_future()
    await peer.subscribe(characteristics[0], lambda value: first.done() or first.set_result(value))
    await asyncio.wait_for(first, TIMEOUT)
    counted = list(counter.opcodes)
    await connection.disconnect()
    return counted


async def bumble(rig: Rig) -> None:
    spec = rig.hci.replace("tcp:", "tcp-client:", 1)
    # Each way is a new Bumble device with its own address, so each pairs afresh.
    for way, address in (("full", "F2:F2:F2:F2:F2:F2"), ("targeted", "F3:F3:F3:F3:F3:F3")):
        targeted = way == "targeted"
        async with await open_transport(spec) as (source, sink):
            device = Device.with_hci("Bumble", hci.Address(address), source, sink)
            device.keystore = MemoryKeyStore()
            await device.power_on()
            line(f"bumble {way}", "cold", await bumble_subscribe(device, targeted, pair=False, encrypt=False))
            line(f"bumble {way}", "reconnect", await bumble_subscribe(device, targeted, pair=False, encrypt=False))
            await bumble_subscribe(device, targeted, pair=True, encrypt=False)
            line(f"bumble {way}", "bonded", await bumble_subscribe(device, targeted, pair=False, encrypt=True))
            await device.power_off()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ble", required=True, help="the ble executable")
    parser.add_argument("--bumble-only", action="store_true", help="only Bumble's client")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    with tempfile.TemporaryDirectory(prefix="ble-round-trips-") as directory:
        rig = Rig(os.path.abspath(args.ble), directory)
        try:
            if not args.bumble_only:
                ours(rig)
            asyncio.run(bumble(rig))
        except (Exception, asyncio.CancelledError) as error:  # a failed step says which, and the logs
            print(f"round_trips.py: {error}", file=sys.stderr)
            for name in ("radio", "serve"):
                with open(os.path.join(directory, f"{name}.log")) as f:
                    sys.stderr.write(f"--- {name}.log\n{f.read()[-2000:]}")
            return 1
        finally:
            rig.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Bumble GATT client of a bonded server across two connections (Core spec Vol 3 Part G §2.5.2.1).

First connection to --target: pairs with bonding (Just Works), discovers everything, enables
robust caching (writes 01 to Client Supported Features 2B29, §7.2), subscribes to Service Changed
2A05 indications (§7.1), notes the value handle of --probe (a 16-bit characteristic UUID), and
disconnects: prints "bonded" {probe_handle, service_changed_handle}. Then it waits until the
file --go exists (the test changes the server meanwhile).

Second connection: before encrypting, reads the probe's value handle from the first connection:
"read" {value} (hex) or "read_error" {code}. Then encrypts with the bond's key and waits up to
10 s for a Service Changed indication: "service_changed" {value} (hex) or "no_service_changed".
Disconnects and prints "done". Any failure prints "error" {message} and exits 1.
"""
from __future__ import annotations

import asyncio
import os
from typing import Any

from bumble import att
from bumble.core import UUID
from bumble.device import Device, Peer
from bumble.hci import Address
from bumble.keys import MemoryKeyStore
from bumble.pairing import PairingConfig, PairingDelegate

import peer_common as common

CLIENT_SUPPORTED_FEATURES = UUID.from_16_bits(0x2B29)
SERVICE_CHANGED = UUID.from_16_bits(0x2A05)


def only(peer: Peer, uuid: UUID) -> Any:
    found = peer.get_characteristics_by_uuid(uuid)
    if not found:
        raise RuntimeError(f"the server has no {uuid}")
    return found[0]


async def first_connection(device: Device, target: Address, probe: UUID) -> tuple[int, int]:
    connection = await device.connect(target, timeout=15)
    await connection.pair()
    peer = Peer(connection)
    await peer.discover_all()
    await peer.write_value(only(peer, CLIENT_SUPPORTED_FEATURES), bytes([0x01]), with_response=True)
    service_changed = only(peer, SERVICE_CHANGED)
    await peer.subscribe(service_changed, lambda value: None, prefer_notify=False)
    handles = (only(peer, probe).handle, service_changed.handle)
    await connection.disconnect()
    return handles


async def second_connection(device: Device, target: Address, probe_handle: int, service_changed_handle: int) -> None:
    connection = await device.connect(target, timeout=15)
    indicated: asyncio.Queue[bytes] = asyncio.Queue()
    # The server kept our CCCD (§3.3.3.3): listen on the handle without writing it again.
    connection.gatt_client.indication_subscribers.setdefault(service_changed_handle, set()).add(indicated.put_nowait)
    try:
        value = await connection.gatt_client.read_value(probe_handle)
        common.emit("read", value=bytes(value).hex())
    except att.ATT_Error as error:
        common.emit("read_error", code=int(error.error_code))
    await connection.encrypt()
    try:
        change = await asyncio.wait_for(indicated.get(), timeout=10)
        common.emit("service_changed", value=bytes(change).hex())
    except asyncio.TimeoutError:
        common.emit("no_service_changed")
    await connection.disconnect()


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, "BumbleCachingClient", args.address)
        device.keystore = MemoryKeyStore()
        device.pairing_config_factory = lambda connection: PairingConfig(
            sc=True, mitm=False, bonding=True, delegate=PairingDelegate(io_capability=PairingDelegate.NO_OUTPUT_NO_INPUT))
        common.watch_connections(device)
        await device.power_on()
        common.ready()
        target = Address(args.target, Address.RANDOM_DEVICE_ADDRESS)
        try:
            probe_handle, sc_handle = await first_connection(device, target, UUID(args.probe))
            common.emit("bonded", probe_handle=probe_handle, service_changed_handle=sc_handle)
            while not os.path.exists(args.go):
                await asyncio.sleep(0.2)
            await second_connection(device, target, probe_handle, sc_handle)
        except Exception as error:  # noqa: BLE001
            common.emit("error", message=f"{type(error).__name__}: {error}")
            return 1
    common.emit("done")
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--target", required=True, help="the server's static random address")
    parser.add_argument("--probe", default="2A00", help="a characteristic to read before encrypting")
    parser.add_argument("--go", required=True, help="a file whose appearance starts the second connection")
    common.run(main, parser.parse_args())

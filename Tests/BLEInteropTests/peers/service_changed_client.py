#!/usr/bin/env python3
"""Bumble GATT client that makes `ble serve test` change its database (Core spec Vol 3 Part G §7.1).

Connects to --target, discovers everything, subscribes to Service Changed 2A05 indications and
prints "subscribed" {services}. Then --rounds times: writes the 9 ASCII octets `db-change` with a
Write Request to the characteristic --write (a 128-bit UUID), waits up to 10 s for a Service
Changed indication and prints "service_changed" {start, end}, discovers the primary services again
and prints "services" {services}. Disconnects and prints "done". `services` is a list of
{uuid, start, end}. No indication within 10 s prints "no_service_changed" and exits 1; any other
failure prints "error" {message} and exits 1.
"""
from __future__ import annotations

import asyncio
import struct
from typing import Any

from bumble.core import UUID
from bumble.device import Device, Peer
from bumble.hci import Address

import peer_common as common

SERVICE_CHANGED = UUID.from_16_bits(0x2A05)
DATABASE_CHANGE = b"db-change"


def only(peer: Peer, uuid: UUID) -> Any:
    found = peer.get_characteristics_by_uuid(uuid)
    if not found:
        raise RuntimeError(f"the server has no {uuid}")
    return found[0]


def listing(services: Any) -> list[dict[str, Any]]:
    return [{"uuid": common.uuid_text(s.uuid), "start": s.handle, "end": s.end_group_handle} for s in services]


async def watch_changes(device: Device, target: Address, write: UUID, rounds: int) -> None:
    connection = await device.connect(target, timeout=15)
    peer = Peer(connection)
    await peer.discover_all()
    indicated: asyncio.Queue[bytes] = asyncio.Queue()
    await peer.subscribe(only(peer, SERVICE_CHANGED), indicated.put_nowait, prefer_notify=False)
    write_only = only(peer, write)
    common.emit("subscribed", services=listing(peer.services))
    for _ in range(rounds):
        await peer.write_value(write_only, DATABASE_CHANGE, with_response=True)
        value = bytes(await asyncio.wait_for(indicated.get(), timeout=10))
        start, end = struct.unpack("<HH", value[:4])
        common.emit("service_changed", start=start, end=end)
        common.emit("services", services=listing(await connection.gatt_client.discover_services()))
    await connection.disconnect()


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, "BumbleChangeWatcher", args.address)
        common.watch_connections(device)
        await device.power_on()
        common.ready()
        target = Address(args.target, Address.RANDOM_DEVICE_ADDRESS)
        try:
            await watch_changes(device, target, UUID(args.write), args.rounds)
        except asyncio.TimeoutError:
            common.emit("no_service_changed")
            return 1
        except Exception as error:  # noqa: BLE001
            common.emit("error", message=f"{type(error).__name__}: {error}")
            return 1
    common.emit("done")
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--target", required=True, help="the server's static random address")
    parser.add_argument("--write", required=True, help="the 128-bit UUID of the characteristic to write db-change to")
    parser.add_argument("--rounds", type=int, default=2, help="how many changes to make")
    common.run(main, parser.parse_args())

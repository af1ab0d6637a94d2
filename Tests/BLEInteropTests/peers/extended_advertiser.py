#!/usr/bin/env python3
"""Bumble extended advertiser: one advertising set with data beyond the legacy 31 octets.

Non-connectable (connectable with --connectable), non-scannable, extended (not legacy) PDUs, on
--phy (1m or coded) with the
secondary PHY --secondary-phy (1m, 2m or coded) and SID --sid. Its data: Complete Local Name
--name, then Manufacturer Specific Data (company 0x0059) filled with bytes 0, 1, 2, ... to
--length octets in all. With --periodic-length N it also advertises periodically every
--periodic-interval ms: Manufacturer Specific Data structures (company 0x0059) of counting bytes,
N octets in all, changed every --periodic-change s when given (the first filler byte counts
up). Prints READY once the set advertises, then
{"event":"advertising","data":"hex","sid":n,"phy":"1m"|"coded","periodic":"hex"|null}, each
periodic data change as {"event":"periodic","data":"hex"}, and a connection's events
(peer_common.watch_connections); a connected central finds Bumble's own GATT database (the
Device Name is --name).
"""
from __future__ import annotations

import asyncio
import struct
from typing import Any

from bumble import hci
from bumble.core import AdvertisingData
from bumble.device import AdvertisingEventProperties, AdvertisingParameters, PeriodicAdvertisingParameters

import peer_common as common

PHYS = {"1m": hci.Phy.LE_1M, "2m": hci.Phy.LE_2M, "coded": hci.Phy.LE_CODED}


def ad_structure(ad_type: int, data: bytes) -> bytes:
    return bytes([len(data) + 1, ad_type]) + data


def advertising_data(name: str, length: int) -> bytes:
    head = ad_structure(AdvertisingData.COMPLETE_LOCAL_NAME, name.encode())
    filler = length - len(head) - 4  # the manufacturer structure's length, type and company
    if filler < 0 or filler > 251 - 4:
        raise SystemExit(f"--length {length} does not fit the name and one manufacturer structure")
    return head + ad_structure(AdvertisingData.MANUFACTURER_SPECIFIC_DATA,
                               struct.pack("<H", 0x0059) + bytes(i % 256 for i in range(filler)))


def periodic_data(length: int, seed: int) -> bytes:
    out = b""
    while len(out) < length:
        body = min(200, length - len(out) - 2)
        if body < 2:
            out += bytes([1, 0x2A])[: length - len(out)]
            break
        out += ad_structure(AdvertisingData.MANUFACTURER_SPECIFIC_DATA,
                            struct.pack("<H", 0x0059) + bytes((seed + i) % 256 for i in range(body - 2)))
    return out


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, args.name, args.address)
        common.watch_connections(device)
        await device.power_on()
        data = advertising_data(args.name, args.length)
        parameters = AdvertisingParameters(
            advertising_event_properties=AdvertisingEventProperties(
                is_connectable=args.connectable, is_scannable=False, is_legacy=False),
            primary_advertising_phy=PHYS[args.phy],
            secondary_advertising_phy=PHYS[args.secondary_phy],
            advertising_sid=args.sid,
        )
        periodic = periodic_data(args.periodic_length, 0) if args.periodic_length else b""
        periodic_parameters = PeriodicAdvertisingParameters(
            periodic_advertising_interval_min=args.periodic_interval,
            periodic_advertising_interval_max=args.periodic_interval) if periodic else None
        advertising_set = await device.create_advertising_set(
            advertising_parameters=parameters, random_address=device.random_address,
            advertising_data=data, periodic_advertising_parameters=periodic_parameters,
            periodic_advertising_data=periodic)
        if periodic:
            await advertising_set.start_periodic()
        common.ready()
        common.emit("advertising", data=data.hex(), sid=args.sid, phy=args.phy,
                    periodic=periodic.hex() if periodic else None)
        seed = 0
        while periodic and args.periodic_change and not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=args.periodic_change)
            except asyncio.TimeoutError:
                seed += 1
                periodic = periodic_data(args.periodic_length, seed)
                await advertising_set.set_periodic_advertising_data(periodic)
                common.emit("periodic", data=periodic.hex())
        await stop.wait()
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--name", default="BumbleExt")
    parser.add_argument("--length", type=int, default=212, help="advertising data octets (default 212)")
    parser.add_argument("--phy", choices=["1m", "coded"], default="1m", help="primary PHY")
    parser.add_argument("--secondary-phy", choices=["1m", "2m", "coded"], default="2m")
    parser.add_argument("--sid", type=int, default=5)
    parser.add_argument("--connectable", action="store_true", help="a connectable set (extended connectable PDUs)")
    parser.add_argument("--periodic-length", type=int, default=0, help="periodic data octets (default: no periodic advertising)")
    parser.add_argument("--periodic-interval", type=float, default=50.0, help="periodic interval in ms (default 50)")
    parser.add_argument("--periodic-change", type=float, default=0.0, help="change the periodic data every S seconds")
    common.run(main, parser.parse_args())

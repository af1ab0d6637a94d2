#!/usr/bin/env python3
"""Bumble extended advertiser: one advertising set with data beyond the legacy 31 octets.

Non-connectable (connectable with --connectable), non-scannable, extended (not legacy) PDUs, on
--phy (1m or coded) with the
secondary PHY --secondary-phy (1m, 2m or coded) and SID --sid. Its data: Complete Local Name
--name, then Manufacturer Specific Data (company 0x0059) filled with bytes 0, 1, 2, ... to
--length octets in all. Prints READY once the set advertises, then
{"event":"advertising","data":"hex","sid":n,"phy":"1m"|"coded"}, and a connection's events
(peer_common.watch_connections); a connected central finds Bumble's own GATT database (the
Device Name is --name).
"""
from __future__ import annotations

import asyncio
import struct
from typing import Any

from bumble import hci
from bumble.core import AdvertisingData
from bumble.device import AdvertisingEventProperties, AdvertisingParameters

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
        await device.create_advertising_set(
            advertising_parameters=parameters, random_address=device.random_address,
            advertising_data=data)
        common.ready()
        common.emit("advertising", data=data.hex(), sid=args.sid, phy=args.phy)
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
    common.run(main, parser.parse_args())

#!/usr/bin/env python3
"""Bumble peripheral with Enhanced ATT on (Core spec Vol 3 Part G §5.3; Bumble 0.0.236's
DeviceConfiguration.eatt_enabled), for the interop tests.

Its GATT service has Server Supported Features with "EATT Supported" (0x01), and its GATT server
takes ATT bearers on enhanced credit-based channels of SPSM 0x0027 as well as on CID 0x0004.
One custom service 7e1f00a0-8d0b-4c1e-9a00-5b1e00c0ffee has a readable characteristic
7e1f00a1-... whose value is "eatt read". Events: "ready", "connected"/"disconnected".
"""
from __future__ import annotations

import asyncio
from typing import Any

from bumble import gatt
from bumble.core import AdvertisingData
from bumble.device import AdvertisingType, Device, DeviceConfiguration

import peer_common as common

BASE = "-8d0b-4c1e-9a00-5b1e00c0ffee"
SERVICE = "7e1f00a0" + BASE
CHARACTERISTIC = "7e1f00a1" + BASE


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        config = DeviceConfiguration(name=args.name, address=common.parse_static_address(args.address))
        config.eatt_enabled = True
        device = Device.from_config_with_hci(config, transport.source, transport.sink)
        device.add_service(gatt.Service(SERVICE, [
            gatt.Characteristic(CHARACTERISTIC, gatt.Characteristic.Properties.READ,
                                gatt.Characteristic.READABLE, b"eatt read"),
        ]))
        common.watch_connections(device)
        await device.power_on()
        await device.start_advertising(
            advertising_type=AdvertisingType.UNDIRECTED_CONNECTABLE_SCANNABLE,
            advertising_data=bytes(AdvertisingData([
                (AdvertisingData.FLAGS, bytes([0x06])),
                (AdvertisingData.COMPLETE_LOCAL_NAME, args.name.encode()),
            ])),
            auto_restart=True,
            advertising_interval_min=50,
            advertising_interval_max=50,
        )
        common.ready()
        await stop.wait()
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--name", default="BumbleEATT")
    common.run(main, parser.parse_args())

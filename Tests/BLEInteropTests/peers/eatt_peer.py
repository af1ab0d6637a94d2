#!/usr/bin/env python3
"""Bumble peripheral with Enhanced ATT on (Core spec Vol 3 Part G §5.3; Bumble 0.0.236's
DeviceConfiguration.eatt_enabled), for the interop tests.

Its GATT service has Server Supported Features with "EATT Supported" (0x01), and its GATT server
takes ATT bearers on enhanced credit-based channels of SPSM 0x0027 as well as on CID 0x0004.
One custom service 7e1f00a0-8d0b-4c1e-9a00-5b1e00c0ffee has a readable characteristic
7e1f00a1-... whose value is "eatt read", and for the client's EATT tests:
  * 7e1f00a2 "gated": a read of it is answered ("A after B") only once a read of 7e1f00a3 has
    arrived (on any bearer). With one ATT bearer that is a deadlock, which the peer breaks after
    GATE_LIMIT seconds with an Unlikely Error response (the test then fails);
  * 7e1f00a3 "opener": readable ("B"); reading it opens the gate;
  * 7e1f00a4 "notifier": notifies; a write of anything to 7e1f00a5 "trigger" makes the peer send
    one notification of 7e1f00a4 ("on eatt") on every Enhanced ATT bearer of the link, and none
    on the unenhanced bearer;
  * 7e1f00a6 "long": readable, 60 octets 0x00..0x3b (for Read Multiple Variable Length);
  * with --secret, 7e1f00a7 "secret", readable only on an encrypted link (so a client that reads
    every value pairs, and then opens its Enhanced ATT bearers).
Pairing: Just Works, bonding off. Events: "ready", "connected"/"disconnected", "gated_read"
{enhanced}, "opener_read" {enhanced}, "notified" {bearers}, "encrypted".
"""
from __future__ import annotations

import asyncio
from typing import Any

from bumble import att, gatt
from bumble.core import AdvertisingData
from bumble.device import AdvertisingType, Device, DeviceConfiguration

import peer_common as common

BASE = "-8d0b-4c1e-9a00-5b1e00c0ffee"
SERVICE = "7e1f00a0" + BASE
CHARACTERISTIC = "7e1f00a1" + BASE
GATED = "7e1f00a2" + BASE
OPENER = "7e1f00a3" + BASE
NOTIFIER = "7e1f00a4" + BASE
TRIGGER = "7e1f00a5" + BASE
LONG = "7e1f00a6" + BASE
SECRET = "7e1f00a7" + BASE
# How long a gated read waits for the opener before it fails (a bound, not a timing assumption).
GATE_LIMIT = 20.0


def eatt_channels(device: Device, connection: Any) -> list[Any]:
    """The link's Enhanced ATT bearers (L2CAP channels on SPSM 0x0027)."""
    channels = device.l2cap_channel_manager.le_coc_channels.get(connection.handle, {}).values()
    return [c for c in channels if c.psm == att.EATT_PSM]


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        config = DeviceConfiguration(name=args.name, address=common.parse_static_address(args.address))
        # An IRK of its own (a bare DeviceConfiguration keeps Bumble's all-zero default, the same
        # for every peer): derived from the address, as Bumble's config loader does.
        config.irk = (bytes(config.address) * 3)[:16]
        config.eatt_enabled = True
        device = Device.from_config_with_hci(config, transport.source, transport.sink)
        gate = asyncio.Event()

        async def read_gated(bearer: Any) -> bytes:
            common.emit("gated_read", enhanced=att.is_enhanced_bearer(bearer))
            try:
                await asyncio.wait_for(gate.wait(), GATE_LIMIT)
            except asyncio.TimeoutError:
                raise att.ATT_Error(att.ATT_UNLIKELY_ERROR_ERROR)
            gate.clear()
            return b"A after B"

        def read_opener(bearer: Any) -> bytes:
            common.emit("opener_read", enhanced=att.is_enhanced_bearer(bearer))
            gate.set()
            return b"B"

        notifier = gatt.Characteristic(NOTIFIER, gatt.Characteristic.Properties.NOTIFY,
                                       gatt.Characteristic.READABLE, b"")

        async def notify_on_eatt(connection: Any) -> None:
            channels = eatt_channels(device, connection)
            for channel in channels:
                await device.gatt_server.notify_subscriber(channel, notifier, b"on eatt", force=True)
            common.emit("notified", bearers=len(channels))

        def write_trigger(connection: Any, value: bytes) -> None:
            asyncio.get_running_loop().create_task(notify_on_eatt(connection))

        extra = []
        if args.secret:
            extra.append(gatt.Characteristic(SECRET, gatt.Characteristic.Properties.READ,
                                             gatt.Characteristic.READ_REQUIRES_ENCRYPTION, b"secret"))
        device.add_service(gatt.Service(SERVICE, extra + [
            gatt.Characteristic(CHARACTERISTIC, gatt.Characteristic.Properties.READ,
                                gatt.Characteristic.READABLE, b"eatt read"),
            gatt.Characteristic(GATED, gatt.Characteristic.Properties.READ, gatt.Characteristic.READABLE,
                                att.AttributeValueV2(read=read_gated)),
            gatt.Characteristic(OPENER, gatt.Characteristic.Properties.READ, gatt.Characteristic.READABLE,
                                att.AttributeValueV2(read=read_opener)),
            notifier,
            gatt.Characteristic(TRIGGER, gatt.Characteristic.Properties.WRITE, gatt.Characteristic.WRITEABLE,
                                gatt.CharacteristicValue(write=write_trigger)),
            gatt.Characteristic(LONG, gatt.Characteristic.Properties.READ, gatt.Characteristic.READABLE,
                                bytes(i % 256 for i in range(512))),
        ]))

        def on_connect(connection: Any) -> None:
            connection.on("connection_encryption_change",
                          lambda: common.emit("encrypted", enabled=bool(connection.encryption)))

        common.watch_connections(device, on_connect=on_connect)
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
    parser.add_argument("--secret", action="store_true", help="add the encrypted-read characteristic 7e1f00a7")
    common.run(main, parser.parse_args())

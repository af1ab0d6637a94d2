#!/usr/bin/env python3
"""Bumble central as an Enhanced ATT client (Core spec Vol 3 Part G §5.3; Bumble 0.0.236's
gatt_client.Client.connect_eatt) of --target, for the interop tests of `ble serve --eatt`.

It connects, pairs (Just Works; EATT bearers need an encrypted link), discovers the database on
the unenhanced bearer and reports Server Supported Features, opens --bearers enhanced
credit-based channels on SPSM 0x0027 and then, on the EATT bearers only:
- reads --read UUID on every bearer at once (one request in flight per bearer),
- subscribes to --subscribe UUID by writing its CCCD on the first bearer, and waits for --count
  notifications, reporting the bearer each one came on.
Then it disconnects and exits 0; any failure prints {"event":"error","message":...}, exits 1.

Events (JSON lines): "paired", "features" {server: hex or null}, "eatt" {bearers, cids},
"read" {bearer, value (hex)}, "notification" {bearer (index, or "unenhanced"), value (hex)},
"done".
"""
from __future__ import annotations

import asyncio
from typing import Any

from bumble.core import UUID
from bumble.gatt_client import Client
from bumble.hci import Address
from bumble.keys import MemoryKeyStore
from bumble.pairing import PairingConfig, PairingDelegate

import peer_common as common

SERVER_SUPPORTED_FEATURES = UUID.from_16_bits(0x2B3A)
CCCD = UUID.from_16_bits(0x2902)


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, "BumbleEATTClient", args.address)
        device.keystore = MemoryKeyStore()
        device.pairing_config_factory = lambda connection: PairingConfig(
            sc=True, mitm=False, bonding=True, delegate=PairingDelegate(PairingDelegate.NO_OUTPUT_NO_INPUT))
        common.watch_connections(device)
        await device.power_on()
        common.ready()
        try:
            await asyncio.wait_for(run(device, args), timeout=args.timeout)
        except (Exception, asyncio.CancelledError) as error:  # noqa: BLE001
            if stop.is_set():
                raise
            common.emit("error", message=f"{type(error).__name__}: {error}")
            return 1
    common.emit("done")
    return 0


async def run(device: Any, args: Any) -> None:
    connection = await device.connect(Address(args.target, Address.RANDOM_DEVICE_ADDRESS), timeout=15)
    await connection.pair()
    common.emit("paired", encrypted=bool(connection.encryption))

    plain = connection.gatt_client
    await plain.discover_services()
    characteristics: dict[str, Any] = {}
    for service in plain.services:
        for characteristic in await service.discover_characteristics():
            characteristics[common.uuid_text(characteristic.uuid)] = characteristic
    features = characteristics.get(common.uuid_text(SERVER_SUPPORTED_FEATURES))
    value = bytes(await features.read_value()) if features is not None else None
    common.emit("features", server=value.hex() if value is not None else None)

    bearers = await Client.connect_eatt(connection, count=args.bearers)
    if not isinstance(bearers, list):
        bearers = [bearers]
    common.emit("eatt", bearers=len(bearers), cids=[b.bearer.source_cid for b in bearers])

    if args.read:
        target = characteristics[args.read.lower()]

        async def read(index: int, client: Client) -> None:
            result = await client.read_value(target.handle)
            common.emit("read", bearer=index, value=bytes(result).hex())

        await asyncio.gather(*(read(i, b) for i, b in enumerate(bearers)))

    if args.subscribe:
        target = characteristics[args.subscribe.lower()]
        descriptors = await plain.discover_descriptors(target)
        cccd = next(d for d in descriptors if d.type == CCCD)
        received = asyncio.Queue()

        def subscriber(bearer: Any):
            return lambda value: received.put_nowait((bearer, bytes(value)))

        plain.notification_subscribers.setdefault(target.handle, set()).add(subscriber("unenhanced"))
        for index, client in enumerate(bearers):
            client.notification_subscribers.setdefault(target.handle, set()).add(subscriber(index))
        await bearers[0].write_value(cccd.handle, b"\x01\x00", with_response=True)
        for _ in range(args.count):
            bearer, value = await received.get()
            common.emit("notification", bearer=bearer, value=value.hex())
    await connection.disconnect()


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--target", required=True)
    parser.add_argument("--bearers", type=int, default=2)
    parser.add_argument("--read", default="")
    parser.add_argument("--subscribe", default="")
    parser.add_argument("--count", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60)
    common.run(main, parser.parse_args())

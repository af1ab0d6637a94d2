#!/usr/bin/env python3
"""S4 accelerometer central: finds a device by name, subscribes to 0x0012, prints x, y, z.

Without --target it scans for --scan-timeout s (default 5, no service filter) and lists every
connectable device whose advertised local name contains --name-contains (default "ble",
case-insensitive) as a `found` event; then it connects to the first one listed (or to the one
named exactly --pick). --first stops the scan at the first match. It discovers service 0011 and
characteristic 0012, optionally reads it (--read) and writes it (--write HEX; a conforming
peripheral refuses), subscribes, prints --count samples decoded as three Float32 LE,
unsubscribes, disconnects and prints `done`. See README.md for the events.
"""
from __future__ import annotations

import struct
from typing import Any

from bumble import att

import peer_common as common
import seed_common as seed

SERVICE = "0011"
CHARACTERISTIC = "0012"


def decode(value: bytes) -> dict[str, float]:
    if len(value) != 12:
        raise ValueError(f"expected 12 bytes (3 x Float32), got {len(value)}: {value.hex()}")
    x, y, z = struct.unpack("<3f", value)
    return {"x": x, "y": y, "z": z}


async def work(device: Any, args: Any) -> None:
    needle = args.name_contains.lower()

    def match(name: str | None, services: list[str]) -> bool:
        if name is None or needle not in name.lower():
            return False
        return args.pick is None or name == args.pick

    connection = await seed.connect(device, args, f"device named *{args.name_contains}*", match,
                                    until_found=args.first)
    await seed.exchange_mtu(connection, args.mtu)
    found = await seed.discover(connection, SERVICE, [CHARACTERISTIC])
    characteristic = found[CHARACTERISTIC]
    client = connection.gatt_client

    if args.read:
        try:
            value = bytes(await client.read_value(characteristic))
            common.emit("read", uuid=CHARACTERISTIC, length=len(value), value=value.hex())
        except att.ATT_Error as error:
            common.emit("read_error", uuid=CHARACTERISTIC, error=int(error.error_code))
    for text in args.write:
        data = bytes.fromhex(text)
        try:
            await client.write_value(characteristic, data, with_response=True)
            common.emit("wrote", uuid=CHARACTERISTIC, value=data.hex())
        except att.ATT_Error as error:
            common.emit("write_error", uuid=CHARACTERISTIC, value=data.hex(),
                        error=int(error.error_code))

    inbox = seed.Inbox(connection)
    await client.subscribe(characteristic, inbox.put,
                           prefer_notify=True)
    common.emit("subscribed", uuid=CHARACTERISTIC)
    for index in range(args.count):
        raw = await inbox.get()
        try:
            common.emit("sample", index=index, **decode(raw), value=raw.hex())
        except ValueError as error:
            common.emit("malformed", index=index, value=raw.hex(), message=str(error))
    await client.unsubscribe(characteristic)
    common.emit("unsubscribed", uuid=CHARACTERISTIC)
    await seed.hang_up(device, connection)


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    seed.add_central_arguments(parser, scan_timeout=5.0)
    parser.add_argument("--name-contains", default="ble",
                        help="case-insensitive part of the local name to look for (default ble)")
    parser.add_argument("--pick", help="connect to the device with exactly this name")
    parser.add_argument("--first", action="store_true",
                        help="stop scanning at the first match instead of after --scan-timeout")
    parser.add_argument("--count", type=int, default=10, help="samples to print (default 10)")
    parser.add_argument("--read", action="store_true", help="read 0012 once before subscribing")
    parser.add_argument("--write", action="append", default=[], metavar="HEX",
                        help="write this value to 0012 before subscribing (repeatable)")
    common.run(seed.run_central("AccelCentral", work), parser.parse_args())

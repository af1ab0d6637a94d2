#!/usr/bin/env python3
"""S2 sample central: the article's step-by-step central against the M5Stack-style peripheral.

Connects to --target (or the first device advertising service
068c47b7-fc04-4d47-975a-7952be1a576f within --scan-timeout s), exchanges the MTU, discovers the
service and both characteristics, reads e3737b3f-… (value as hex and UTF-8), writes
"Write Data NNN" to it with response (NNN: --number, default random 000-999), reads it back,
subscribes to c9da2ce8-… and prints --count notifications, unsubscribes, disconnects and
prints `done`. See README.md for the events.
"""
from __future__ import annotations

import random
from typing import Any

import peer_common as common
import seed_common as seed

SERVICE = "068c47b7-fc04-4d47-975a-7952be1a576f"
READ_WRITE = "e3737b3f-a08d-405b-b32d-35a8f6c64c5d"
NOTIFY = "c9da2ce8-d119-40d5-90f7-ef24627e8193"


def text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")


async def work(device: Any, args: Any) -> None:
    connection = await seed.connect(device, args, f"device advertising {SERVICE}",
                                    lambda name, services: SERVICE in services)
    await seed.exchange_mtu(connection, args.mtu)
    found = await seed.discover(connection, SERVICE, [READ_WRITE, NOTIFY])
    client = connection.gatt_client
    read_write = found[READ_WRITE]

    async def read() -> None:
        value = bytes(await client.read_value(read_write))
        common.emit("read", uuid=READ_WRITE, length=len(value), value=value.hex(),
                    text=text(value))

    await read()
    number = args.number if args.number is not None else random.randrange(1000)
    data = f"Write Data {number:03d}".encode("ascii")
    await client.write_value(read_write, data, with_response=True)
    common.emit("wrote", uuid=READ_WRITE, length=len(data), value=data.hex(), text=text(data))
    await read()

    inbox = seed.Inbox(connection)
    notify = found[NOTIFY]
    await client.subscribe(notify, inbox.put, prefer_notify=True)
    common.emit("subscribed", uuid=NOTIFY)
    for index in range(args.count):
        value = await inbox.get()
        common.emit("notification", index=index, uuid=NOTIFY, value=value.hex(),
                    text=text(value))
    await client.unsubscribe(notify)
    common.emit("unsubscribed", uuid=NOTIFY)
    await seed.hang_up(device, connection)


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    seed.add_central_arguments(parser, scan_timeout=10.0)
    parser.add_argument("--count", type=int, default=3, help="notifications to print (default 3)")
    parser.add_argument("--number", type=int, default=None,
                        help="NNN of the written 'Write Data NNN' (default: random 0-999)")
    common.run(seed.run_central("SampleCentral", work), parser.parse_args())

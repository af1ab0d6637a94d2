#!/usr/bin/env python3
"""S2 sample peripheral (the M5Stack side): one service, a read/write and a notify characteristic.

Service 068c47b7-fc04-4d47-975a-7952be1a576f:
  e3737b3f-a08d-405b-b32d-35a8f6c64c5d  READ | WRITE (0x0A)  initially "Hello World"; a write
                                        (request, command or prepared) replaces the value
  c9da2ce8-d119-40d5-90f7-ef24627e8193  NOTIFY (0x10)        "Notify Data NNN" every --interval s
                                        (default 1) while subscribed; NNN counts 001, 002, … per
                                        subscription, three digits (wraps after 999)
Advertises flags, the 128-bit service UUID and the local name (--name, default M5Stack).
See README.md for the events.
"""
from __future__ import annotations

import asyncio
from typing import Any

from bumble import gatt
from bumble.att import Attribute

import peer_common as common
import seed_common as seed

SERVICE = "068c47b7-fc04-4d47-975a-7952be1a576f"
READ_WRITE = "e3737b3f-a08d-405b-b32d-35a8f6c64c5d"
NOTIFY = "c9da2ce8-d119-40d5-90f7-ef24627e8193"


def text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")


class Sample:
    def __init__(self, device: Any, args: Any, finished: asyncio.Event) -> None:
        self.device = device
        self.args = args
        self.finished = finished
        self.value = args.value.encode("utf-8")
        self.sent = 0
        self.tasks: dict[int, asyncio.Task] = {}
        P = gatt.Characteristic.Properties
        self.read_write = gatt.Characteristic(
            READ_WRITE, P.READ | P.WRITE, Attribute.READABLE | Attribute.WRITEABLE,
            seed.value(read=self.on_read, write=self.on_write))
        self.notify = gatt.Characteristic(NOTIFY, P.NOTIFY, 0, seed.value())
        device.add_service(gatt.Service(SERVICE, [self.read_write, self.notify]))
        self.notify.on("subscription", self.on_subscription)

    def on_read(self, connection: Any) -> bytes:
        common.emit("read", connection=connection.handle, uuid=READ_WRITE,
                    handle=self.read_write.handle, value=self.value.hex(), text=text(self.value))
        return self.value

    def on_write(self, connection: Any, value: bytes) -> None:
        self.value = bytes(value)
        common.emit("write", connection=connection.handle, uuid=READ_WRITE,
                    handle=self.read_write.handle, length=len(self.value),
                    value=self.value.hex(), text=text(self.value))

    def on_subscription(self, bearer: Any, notify: bool, indicate: bool) -> None:
        common.emit("subscription", uuid=NOTIFY, handle=self.notify.handle,
                    connection=bearer.handle, notify=notify, indicate=indicate)
        task = self.tasks.pop(bearer.handle, None)
        if task:
            task.cancel()
        if notify:
            self.tasks[bearer.handle] = asyncio.get_running_loop().create_task(
                self.notify_loop(bearer))

    def on_disconnect(self, connection: Any, reason: int) -> None:
        task = self.tasks.pop(connection.handle, None)
        if task:
            task.cancel()

    async def notify_loop(self, connection: Any) -> None:
        counter = 0
        while True:
            counter = counter % 999 + 1
            value = f"Notify Data {counter:03d}".encode("ascii")
            await seed.wait_for_room(self.device, connection)
            await self.device.notify_subscriber(connection, self.notify, value)
            common.emit("notified", connection=connection.handle, uuid=NOTIFY, counter=counter,
                        value=value.hex(), text=text(value))
            self.sent += 1
            if self.args.count and self.sent >= self.args.count:
                self.finished.set()
                return
            await asyncio.sleep(self.args.interval)


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, args.name, args.address)
        finished = asyncio.Event()
        peer = Sample(device, args, finished)
        common.watch_connections(device, on_disconnect=peer.on_disconnect)
        await device.power_on()
        await seed.advertise(device, seed.advertising_data(args.name, [SERVICE]))
        common.ready()
        await seed.wait_until(stop, finished, args.duration)
        if not stop.is_set():
            await seed.disconnect_all(device)
        for task in peer.tasks.values():
            task.cancel()
    if not stop.is_set():
        common.emit("done", notifications=peer.sent)
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--name", default="M5Stack", help="local name (default M5Stack)")
    parser.add_argument("--interval", type=float, default=1.0,
                        help="seconds between notifications (default 1)")
    parser.add_argument("--value", default="Hello World",
                        help="initial value of the read/write characteristic (default Hello World)")
    seed.add_peripheral_limits(parser, "notifications")
    common.run(main, parser.parse_args())

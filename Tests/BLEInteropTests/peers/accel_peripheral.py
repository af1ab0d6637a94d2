#!/usr/bin/env python3
"""S4 accelerometer peripheral: service 0x0011, characteristic 0x0012 (NOTIFY, readable).

Advertises flags, the 16-bit service UUID 0011 and the local name (--name, default BLE001).
While at least one central is subscribed to 0012 it samples a simulated motion every --interval
s (default 0.2 s, 5 Hz) and notifies each subscriber 12 bytes: x, y, z as Float32 little-endian
(sample n: x = sin(n/5), y = cos(n/5), z = 1 + sin(n/3)/10, in g, rounded to Float32). Sampling
stops when the last subscriber leaves; a new first subscriber restarts it at the next index.

Like the original (a CoreBluetooth characteristic with properties .notify and permissions
.readable) 0012 has the NOTIFY property only; --read-property adds READ. A read returns the last
sample (zeros before the first); a write is refused with ATT error 0x03 (Write Not Permitted).
Both are reported, as are subscribe and unsubscribe. See README.md for the events.
"""
from __future__ import annotations

import asyncio
import math
import struct
from typing import Any

from bumble import att, gatt
from bumble.att import Attribute

import peer_common as common
import seed_common as seed

SERVICE = "0011"
CHARACTERISTIC = "0012"


def sample(n: int) -> tuple[bytes, tuple[float, float, float]]:
    """Sample n as sent (12 bytes) and as the Float32 values a receiver decodes."""
    value = struct.pack("<3f", math.sin(n / 5), math.cos(n / 5), 1 + math.sin(n / 3) / 10)
    return value, struct.unpack("<3f", value)


class Accelerometer:
    def __init__(self, device: Any, args: Any, finished: asyncio.Event) -> None:
        self.device = device
        self.args = args
        self.finished = finished
        self.index = 0
        self.sent = 0
        self.last = bytes(12)
        self.subscribers: dict[int, Any] = {}
        self.wake = asyncio.Event()
        P = gatt.Characteristic.Properties
        properties = P.NOTIFY | (P.READ if args.read_property else 0)
        self.characteristic = gatt.Characteristic(
            CHARACTERISTIC, properties, Attribute.READABLE,
            seed.value(read=self.on_read, write=self.on_write))
        device.add_service(gatt.Service(SERVICE, [self.characteristic]))
        self.characteristic.on("subscription", self.on_subscription)

    def fields(self, connection: Any) -> dict[str, Any]:
        return {"connection": connection.handle, "uuid": CHARACTERISTIC,
                "handle": self.characteristic.handle}

    def on_read(self, connection: Any) -> bytes:
        common.emit("read", **self.fields(connection), value=self.last.hex())
        return self.last

    def on_write(self, connection: Any, value: bytes) -> None:
        common.emit("write", **self.fields(connection), value=bytes(value).hex(),
                    error=att.ATT_WRITE_NOT_PERMITTED_ERROR)
        raise att.ATT_Error(att.ATT_WRITE_NOT_PERMITTED_ERROR)

    def on_subscription(self, bearer: Any, notify: bool, indicate: bool) -> None:
        was = bearer.handle in self.subscribers
        if notify and not was:
            self.subscribers[bearer.handle] = bearer
            common.emit("subscribed", **self.fields(bearer))
            self.wake.set()
        elif not notify and was:
            del self.subscribers[bearer.handle]
            common.emit("unsubscribed", **self.fields(bearer), disconnected=False)

    def on_disconnect(self, connection: Any, reason: int) -> None:
        # CoreBluetooth reports a central that goes away as unsubscribed: do the same.
        if self.subscribers.pop(connection.handle, None) is not None:
            common.emit("unsubscribed", **self.fields(connection), disconnected=True)

    async def run(self) -> None:
        while True:
            if not self.subscribers:
                self.wake.clear()
                await self.wake.wait()
                continue
            value, (x, y, z) = sample(self.index)
            self.last = value
            sent_to = []
            for handle, connection in list(self.subscribers.items()):
                await seed.wait_for_room(self.device, connection)
                if handle in self.subscribers:
                    await self.device.notify_subscriber(connection, self.characteristic, value)
                    sent_to.append(handle)
            common.emit("sample", index=self.index, x=x, y=y, z=z, value=value.hex(),
                        connections=sent_to)
            self.index += 1
            self.sent += 1
            if self.args.count and self.sent >= self.args.count:
                self.finished.set()
                return
            await asyncio.sleep(self.args.interval)


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, args.name, args.address)
        finished = asyncio.Event()
        accelerometer = Accelerometer(device, args, finished)
        common.watch_connections(device, on_disconnect=accelerometer.on_disconnect)
        await device.power_on()
        await seed.advertise(device, seed.advertising_data(args.name, [SERVICE]))
        common.ready()
        sampler = asyncio.get_running_loop().create_task(accelerometer.run())
        await seed.wait_until(stop, finished, args.duration)
        if not stop.is_set():
            await seed.disconnect_all(device)
        sampler.cancel()
    if not stop.is_set():
        common.emit("done", samples=accelerometer.sent)
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--name", default="BLE001", help="local name (default BLE001)")
    parser.add_argument("--interval", type=float, default=0.2,
                        help="seconds between samples (default 0.2: 5 Hz)")
    parser.add_argument("--read-property", action="store_true",
                        help="give 0012 the READ property as well as NOTIFY")
    seed.add_peripheral_limits(parser, "samples")
    common.run(main, parser.parse_args())

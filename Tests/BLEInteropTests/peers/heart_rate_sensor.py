#!/usr/bin/env python3
"""S3 heart-rate sensor (peripheral): the standard Heart Rate Service 0x180D.

  2A37 Heart Rate Measurement  NOTIFY   one measurement every --interval s to each subscribed
                                        central, going through all 24 flag combinations
                                        (hr_measurement.variant_flags) from variant 0 on each
                                        new subscription
  2A38 Body Sensor Location    READ     --location (default 1, chest)
  2A39 Heart Rate Control Point WRITE   01 resets Energy Expended; anything else is refused
                                        with ATT error 0x80 (Control Point Not Supported)

With --bondable the sensor pairs (LE Secure Connections, Just Works) and bonds, keeping the keys
in memory; like Bumble's GATT server it keeps no CCCD across connections, even for a bonded
central (a client that counts on a kept subscription must write it again).

With --service-changed-after N, after the N-th measurement of a subscription the sensor
indicates Service Changed (Core Vol 3 Part G §7.1) for the Heart Rate Service's range to that
central if it subscribed to it (event "service_changed"), as a server whose database changed
would; a client must then find the characteristic again and subscribe again.

With --service-changed-on-access N, each of the first N reads of 2A38 and writes of 2A39 on a
connection is answered only after the sensor indicated Service Changed for the Heart Rate
Service's range to that central (forced: whether or not it subscribed) and had it confirmed, as a
server whose database changed while the request was outstanding; a client must not take that
answer (Core Vol 3 Part G §7.1), but find the characteristic again and ask once more.

Measurement k of a subscription (k = 0, 1, …) has variant k mod 24, heart rate 60 + (7k mod
120) for UInt8 and 200 + (7k mod 120) for UInt16 (so the high byte is used), the sensor's
Energy Expended (kJ; +3 per measurement sent, saturating at 0xFFFF, reset by the control
point), and 1 + (k mod 3) RR intervals derived from the rate. Advertises flags, 180D, appearance
0x0341 (Heart Rate Sensor) and the name. See README.md for the events.
"""
from __future__ import annotations

import asyncio
from typing import Any

from bumble import att, gatt
from bumble.att import Attribute
from bumble.keys import MemoryKeyStore
from bumble.pairing import PairingConfig

import hr_measurement as hrm
import peer_common as common
import seed_common as seed

HEART_RATE_SERVICE = "180D"
MEASUREMENT = "2A37"
BODY_SENSOR_LOCATION = "2A38"
CONTROL_POINT = "2A39"
CONTROL_POINT_NOT_SUPPORTED = 0x80  # Heart Rate Service 1.0 §3.3.1 (application error)
RESET_ENERGY_EXPENDED = 0x01
APPEARANCE_HEART_RATE_SENSOR = 0x0341


def measurement(k: int, energy_kj: int) -> tuple[int, int, int | None, list[int] | None]:
    flags = hrm.variant_flags(k)
    bpm = (200 if flags & hrm.FORMAT_UINT16 else 60) + (7 * k) % 120
    energy = energy_kj if flags & hrm.ENERGY_PRESENT else None
    rr = None
    if flags & hrm.RR_PRESENT:
        base = round(60 * 1024 / bpm)
        rr = [base + 5 * j for j in range(1 + k % 3)]
    return flags, bpm, energy, rr


class Sensor:
    def __init__(self, device: Any, args: Any, finished: asyncio.Event) -> None:
        self.device = device
        self.args = args
        self.finished = finished
        self.energy = 0
        self.sent = 0
        self.tasks: dict[int, asyncio.Task] = {}
        self.changed_accesses: dict[int, int] = {}
        P = gatt.Characteristic.Properties
        self.measurement = gatt.Characteristic(MEASUREMENT, P.NOTIFY, 0, seed.value())
        location = gatt.Characteristic(BODY_SENSOR_LOCATION, P.READ, Attribute.READABLE,
                                       seed.value(read=self.read_location))
        control = gatt.Characteristic(CONTROL_POINT, P.WRITE, Attribute.WRITEABLE,
                                      seed.value(write=self.write_control_point))
        self.service = gatt.Service(HEART_RATE_SERVICE, [self.measurement, location, control])
        device.add_service(self.service)
        self.handles = {MEASUREMENT: self.measurement.handle,
                        BODY_SENSOR_LOCATION: location.handle, CONTROL_POINT: control.handle}
        self.measurement.on("subscription", self.on_subscription)

    async def change_before_answering(self, connection: Any) -> None:
        done = self.changed_accesses.get(connection.handle, 0)
        if done < self.args.service_changed_on_access:
            self.changed_accesses[connection.handle] = done + 1
            await self.indicate_service_changed(connection, force=True)

    async def read_location(self, connection: Any) -> bytes:
        await self.change_before_answering(connection)
        value = bytes([self.args.location])
        common.emit("read", connection=connection.handle, uuid=BODY_SENSOR_LOCATION,
                    handle=self.handles[BODY_SENSOR_LOCATION], value=value.hex())
        return value

    async def write_control_point(self, connection: Any, value: bytes) -> None:
        await self.change_before_answering(connection)
        value = bytes(value)
        if value == bytes([RESET_ENERGY_EXPENDED]):
            self.energy = 0
            common.emit("control_point", connection=connection.handle, value=value.hex(),
                        accepted=True)
            return
        common.emit("control_point", connection=connection.handle, value=value.hex(),
                    accepted=False, error=CONTROL_POINT_NOT_SUPPORTED)
        raise att.ATT_Error(CONTROL_POINT_NOT_SUPPORTED)

    def on_subscription(self, bearer: Any, notify: bool, indicate: bool) -> None:
        common.emit("subscription", uuid=MEASUREMENT, handle=self.measurement.handle,
                    connection=bearer.handle, notify=notify, indicate=indicate)
        task = self.tasks.pop(bearer.handle, None)
        if task:
            task.cancel()
        if notify:
            self.tasks[bearer.handle] = asyncio.get_running_loop().create_task(
                self.notify_loop(bearer))

    def on_disconnect(self, connection: Any, reason: int) -> None:
        self.changed_accesses.pop(connection.handle, None)
        task = self.tasks.pop(connection.handle, None)
        if task:
            task.cancel()

    async def notify_loop(self, connection: Any) -> None:
        k = 0
        while True:
            await seed.wait_for_room(self.device, connection)
            self.energy = min(self.energy + 3, 0xFFFF)
            flags, bpm, energy, rr = measurement(k, self.energy)
            value = hrm.encode(flags, bpm, energy, rr)
            await self.device.notify_subscriber(connection, self.measurement, value)
            common.emit("measurement", connection=connection.handle, index=k,
                        variant=k % hrm.VARIANTS, **hrm.describe(flags, bpm, energy, rr, value))
            k += 1
            self.sent += 1
            if self.args.service_changed_after and k == self.args.service_changed_after:
                await self.indicate_service_changed(connection)
            if self.args.count and self.sent >= self.args.count:
                self.finished.set()
                return
            await asyncio.sleep(self.args.interval)


    async def indicate_service_changed(self, connection: Any, force: bool = False) -> None:
        sc = self.device.gatt_service.service_changed_characteristic if self.device.gatt_service else None
        if sc is None:
            return
        start, end = self.service.handle, self.service.end_group_handle
        value = start.to_bytes(2, "little") + end.to_bytes(2, "little")
        await self.device.indicate_subscriber(connection, sc, value, force=force)
        common.emit("service_changed", connection=connection.handle, start=start, end=end)


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, args.name, args.address)
        if args.bondable:
            device.keystore = MemoryKeyStore()
            device.pairing_config_factory = lambda connection: PairingConfig(sc=True, mitm=False, bonding=True)
        finished = asyncio.Event()
        sensor = Sensor(device, args, finished)
        common.watch_connections(device, on_disconnect=sensor.on_disconnect)
        await device.power_on()
        await seed.advertise(device, seed.advertising_data(
            args.name, [HEART_RATE_SERVICE], appearance=APPEARANCE_HEART_RATE_SENSOR))
        common.ready()
        await seed.wait_until(stop, finished, args.duration)
        if not stop.is_set():
            await seed.disconnect_all(device)
        for task in sensor.tasks.values():
            task.cancel()
    if not stop.is_set():
        common.emit("done", measurements=sensor.sent)
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--name", default="BumbleHR", help="local name (default BumbleHR)")
    parser.add_argument("--interval", type=float, default=1.0,
                        help="seconds between measurements (default 1)")
    parser.add_argument("--location", type=int, default=1,
                        help="Body Sensor Location value (default 1, chest)")
    parser.add_argument("--bondable", action="store_true",
                        help="pair (Just Works) and bond; keys in memory")
    parser.add_argument("--service-changed-after", type=int, default=0,
                        help="indicate Service Changed for 180D after this many measurements of a subscription")
    parser.add_argument("--service-changed-on-access", type=int, default=0,
                        help="indicate Service Changed for 180D (forced) before answering each of the first N reads of 2A38 and writes of 2A39 of a connection")
    seed.add_peripheral_limits(parser, "measurements")
    common.run(main, parser.parse_args())

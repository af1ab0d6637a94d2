#!/usr/bin/env python3
"""Bumble peripheral with a known advertisement and GATT database, for the interop tests.

See README.md in this directory for the exact advertising data, UUIDs and event lines.
"""
from __future__ import annotations

import asyncio
import contextvars
import struct
from typing import Any

from bumble import att, gatt
from bumble.att import Attribute
from bumble.core import AdvertisingData
from bumble.device import AdvertisingType

import peer_common as common

BASE = "-8d0b-4c1e-9a00-5b1e00c0ffee"
CUSTOM_SERVICE = "7e1f0001" + BASE
LONG_CHAR = "7e1f0002" + BASE
RW_CHAR = "7e1f0003" + BASE
NOTIFY_CHAR = "7e1f0004" + BASE
INDICATE_CHAR = "7e1f0005" + BASE
WNR_CHAR = "7e1f0006" + BASE
INCLUDED_SERVICE = "7e1f0007" + BASE
INCLUDED_CHAR = "7e1f0008" + BASE

LONG_VALUE = bytes(i % 256 for i in range(512))
PERIOD = 0.2  # seconds between notifications / indications of the counters

# Which ATT method delivered the write being handled ("request", "command", "prepared").
# Bumble runs each write handler in its own task, and tasks copy the context they are created in.
WRITE_METHOD: contextvars.ContextVar[str] = contextvars.ContextVar("write_method", default="?")


def ad_structure(ad_type: int, data: bytes) -> bytes:
    return bytes([len(data) + 1, ad_type]) + data


def uuid128_le(text: str) -> bytes:
    return bytes.fromhex(text.replace("-", ""))[::-1]


def advertising_data(name: str) -> bytes:
    """Flags, 16-bit services, name, TX power and manufacturer data: 31 bytes for a 10-char name.

    Legacy advertising PDUs carry at most 31 bytes (Core spec Vol 6 Part B §2.3.1), so the
    appearance goes into the scan response, and a name longer than 10 characters is sent as a
    Shortened Local Name cut to what fits.
    """
    head = (
        ad_structure(AdvertisingData.FLAGS, bytes([0x06]))
        + ad_structure(AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS,
                       struct.pack("<HH", 0x180D, 0x180F))
    )
    tail = (
        ad_structure(AdvertisingData.TX_POWER_LEVEL, struct.pack("<b", 4))
        + ad_structure(AdvertisingData.MANUFACTURER_SPECIFIC_DATA,
                       struct.pack("<H", 0x0059) + bytes([1, 2, 3]))
    )
    room = 31 - len(head) - len(tail) - 2
    encoded = name.encode("utf-8")
    if len(encoded) <= room:
        name_ad = ad_structure(AdvertisingData.COMPLETE_LOCAL_NAME, encoded)
    else:
        name_ad = ad_structure(AdvertisingData.SHORTENED_LOCAL_NAME, encoded[:room])
    return head + name_ad + tail


def scan_response_data() -> bytes:
    return (
        ad_structure(AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS,
                     uuid128_le(CUSTOM_SERVICE))
        + ad_structure(AdvertisingData.APPEARANCE, struct.pack("<H", 0x0341))
    )


def value(read: Any = None, write: Any = None) -> gatt.CharacteristicValue:
    """A characteristic value that answers Read/Write Not Permitted instead of misbehaving.

    Bumble 0.0.236 does not check attribute permissions: a static value is writable by anyone,
    and a callback-less read or write raises inside the server and leaves the request unanswered
    (the client times out after 30 s). Every value here therefore goes through callbacks.
    """
    if isinstance(read, (bytes, bytearray)):
        constant = bytes(read)
        read = lambda connection: constant  # noqa: E731

    def refuse_read(connection: Any) -> bytes:
        raise att.ATT_Error(att.ATT_READ_NOT_PERMITTED_ERROR)

    def refuse_write(connection: Any, data: bytes) -> None:
        raise att.ATT_Error(att.ATT_WRITE_NOT_PERMITTED_ERROR)

    return gatt.CharacteristicValue(read=read or refuse_read, write=write or refuse_write)


class Peer:
    def __init__(self, device: Any, args: Any) -> None:
        self.device = device
        self.args = args
        self.rw_value = b"hello"
        self.tasks: dict[tuple[int, str], asyncio.Task] = {}
        self.build_gatt()

    # ---------------------------------------------------------------- GATT database
    def build_gatt(self) -> None:
        R = Attribute.READABLE
        W = Attribute.WRITEABLE
        P = gatt.Characteristic.Properties

        self.hr_measurement = gatt.Characteristic(
            "2A37", P.NOTIFY, 0, value())
        heart_rate = gatt.Service("180D", [
            self.hr_measurement,
            gatt.Characteristic("2A38", P.READ, R, value(bytes([0x01]))),  # body sensor location: chest
        ])
        self.battery_level = gatt.Characteristic("2A19", P.READ | P.NOTIFY, R,
                                                 value(bytes([0x55])))
        battery = gatt.Service("180F", [self.battery_level])

        included = gatt.Service(INCLUDED_SERVICE, [
            gatt.Characteristic(INCLUDED_CHAR, P.READ, R, value(b"included")),
        ], primary=False)

        self.notify_char = gatt.Characteristic(NOTIFY_CHAR, P.NOTIFY, 0, value())
        self.indicate_char = gatt.Characteristic(INDICATE_CHAR, P.INDICATE, 0, value())
        rw_char = gatt.Characteristic(
            RW_CHAR, P.READ | P.WRITE, R | W,
            value(read=self.read_rw, write=self.on_write_rw),
            descriptors=[gatt.Descriptor(
                gatt.GATT_CHARACTERISTIC_USER_DESCRIPTION_DESCRIPTOR, R,
                b"read/write test value")],
        )
        wnr_char = gatt.Characteristic(
            WNR_CHAR, P.WRITE_WITHOUT_RESPONSE | P.WRITE, W,
            value(write=self.on_write_wnr))
        custom = gatt.Service(CUSTOM_SERVICE, [
            gatt.Characteristic(LONG_CHAR, P.READ, R, value(LONG_VALUE)),
            rw_char,
            self.notify_char,
            self.indicate_char,
            wnr_char,
        ], included_services=[included])

        # Register the secondary service before the primary that includes it: Bumble would
        # otherwise nest its attributes inside the including service's handle range.
        self.device.add_service(heart_rate)
        self.device.add_service(battery)
        self.device.add_service(included)
        self.device.add_service(custom)
        self.fix_include_declarations()

        for characteristic in (self.notify_char, self.indicate_char, self.hr_measurement,
                               self.battery_level):
            characteristic.on("subscription",
                              lambda bearer, notify, indicate, c=characteristic:
                              self.on_subscription(c, bearer, notify, indicate))
        self.handles = {common.uuid_text(c.uuid): c.handle for c in (
            rw_char, wnr_char, self.notify_char, self.indicate_char)}

        server = self.device.gatt_server
        for name, method in (("on_att_write_request", "request"),
                             ("on_att_write_command", "command"),
                             ("on_att_execute_write_request", "prepared")):
            original = getattr(server, name)

            def wrapped(bearer, pdu, original=original, method=method):
                token = WRITE_METHOD.set(method)
                try:
                    return original(bearer, pdu)
                finally:
                    WRITE_METHOD.reset(token)

            setattr(server, name, wrapped)

    def fix_include_declarations(self) -> None:
        """Core spec Vol 3 Part G §3.2: the Include declaration carries the service UUID only if
        it is a 16-bit UUID. Bumble 0.0.236 packs the first two bytes of a 128-bit UUID instead;
        drop them so the client has to read the UUID from the included service declaration."""
        for attribute in self.device.gatt_server.attributes:
            if isinstance(attribute, gatt.IncludedServiceDeclaration):
                if len(attribute.service.uuid.to_bytes()) != 2:
                    attribute.value = struct.pack(
                        "<HH", attribute.service.handle, attribute.service.end_group_handle)

    # ---------------------------------------------------------------- value callbacks
    def read_rw(self, connection: Any) -> bytes:
        return self.rw_value

    def on_write_rw(self, connection: Any, value: bytes) -> None:
        self.rw_value = bytes(value)
        common.emit("write", uuid=RW_CHAR, handle=self.handles[RW_CHAR],
                    method=WRITE_METHOD.get(), length=len(value), value=bytes(value).hex())

    def on_write_wnr(self, connection: Any, value: bytes) -> None:
        common.emit("write", uuid=WNR_CHAR, handle=self.handles[WNR_CHAR],
                    method=WRITE_METHOD.get(), length=len(value), value=bytes(value).hex())

    # ---------------------------------------------------------------- subscriptions
    def on_subscription(self, characteristic: Any, bearer: Any, notify: bool,
                        indicate: bool) -> None:
        uuid = common.uuid_text(characteristic.uuid)
        common.emit("subscription", uuid=uuid, handle=characteristic.handle,
                    notify=notify, indicate=indicate)
        key = (bearer.handle, uuid)
        task = self.tasks.pop(key, None)
        if task:
            task.cancel()
        if characteristic is self.notify_char and notify:
            self.tasks[key] = asyncio.create_task(self.notify_loop(bearer, characteristic))
        elif characteristic is self.indicate_char and indicate:
            self.tasks[key] = asyncio.create_task(self.indicate_loop(bearer, characteristic))

    async def notify_loop(self, bearer: Any, characteristic: Any) -> None:
        counter = 0
        while True:
            counter += 1
            await self.device.notify_subscriber(bearer, characteristic,
                                                struct.pack("<I", counter))
            common.emit("notified", uuid=NOTIFY_CHAR, counter=counter)
            await asyncio.sleep(PERIOD)

    async def indicate_loop(self, bearer: Any, characteristic: Any) -> None:
        counter = 0
        while True:
            counter += 1
            # Returns once the client's Handle Value Confirmation arrived (one in flight at most).
            await self.device.indicate_subscriber(bearer, characteristic,
                                                  struct.pack("<I", counter))
            common.emit("indicated", uuid=INDICATE_CHAR, counter=counter)
            await asyncio.sleep(PERIOD)

    def on_disconnect(self, connection: Any, reason: int) -> None:
        for key in [k for k in self.tasks if k[0] == connection.handle]:
            self.tasks.pop(key).cancel()


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, args.name, args.address)
        peer = Peer(device, args)
        common.watch_connections(device, on_disconnect=peer.on_disconnect)
        await device.power_on()
        await device.start_advertising(
            advertising_type=AdvertisingType.UNDIRECTED_CONNECTABLE_SCANNABLE,
            advertising_data=advertising_data(args.name),
            scan_response_data=scan_response_data(),
            auto_restart=True,
            advertising_interval_min=args.interval,
            advertising_interval_max=args.interval,
        )
        common.ready()
        await stop.wait()
        for task in peer.tasks.values():
            task.cancel()
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--name", default="BumblePeer", help="complete local name")
    parser.add_argument("--interval", type=float, default=100.0,
                        help="advertising interval in ms (default 100)")
    common.run(main, parser.parse_args())

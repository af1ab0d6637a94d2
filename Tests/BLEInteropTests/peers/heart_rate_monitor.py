#!/usr/bin/env python3
"""S3 heart-rate monitor (central): reads a Heart Rate Service 0x180D and prints measurements.

Connects to --target (or the first device advertising 180D within --scan-timeout s), exchanges
the MTU, discovers 180D (2A37, 2A38, 2A39), reads Body Sensor Location 2A38, writes each
--control value to Heart Rate Control Point 2A39 (default: 01, which must succeed, then 02,
which a conforming sensor refuses with ATT error 0x80), subscribes to 2A37 and prints --count
decoded measurements, unsubscribes, disconnects and prints `done`. See README.md for events.
"""
from __future__ import annotations

from typing import Any

from bumble import att

import hr_measurement as hrm
import peer_common as common
import seed_common as seed

HEART_RATE_SERVICE = "180D"
MEASUREMENT = "2A37"
BODY_SENSOR_LOCATION = "2A38"
CONTROL_POINT = "2A39"


async def work(device: Any, args: Any) -> None:
    connection = await seed.connect(device, args, f"device advertising {HEART_RATE_SERVICE}",
                                    lambda name, services: HEART_RATE_SERVICE in services)
    await seed.exchange_mtu(connection, args.mtu)
    found = await seed.discover(connection, HEART_RATE_SERVICE,
                                [MEASUREMENT, BODY_SENSOR_LOCATION, CONTROL_POINT])
    client = connection.gatt_client

    value = bytes(await client.read_value(found[BODY_SENSOR_LOCATION]))
    location = hrm.LOCATIONS.get(value[0]) if len(value) == 1 else None
    common.emit("read", uuid=BODY_SENSOR_LOCATION, length=len(value), value=value.hex(),
                location=location)

    for text in args.control if args.control is not None else ["01", "02"]:
        data = bytes.fromhex(text)
        try:
            await client.write_value(found[CONTROL_POINT], data, with_response=True)
            common.emit("wrote", uuid=CONTROL_POINT, value=data.hex())
        except att.ATT_Error as error:
            common.emit("write_error", uuid=CONTROL_POINT, value=data.hex(),
                        error=int(error.error_code))

    inbox = seed.Inbox(connection)
    measurement = found[MEASUREMENT]
    await client.subscribe(measurement, inbox.put, prefer_notify=True)
    common.emit("subscribed", uuid=MEASUREMENT)
    for index in range(args.count):
        raw = await inbox.get()
        try:
            decoded = hrm.decode(raw)
        except ValueError as error:
            common.emit("malformed", index=index, value=raw.hex(), message=str(error))
            continue
        common.emit("measurement", index=index, **decoded)
    await client.unsubscribe(measurement)
    common.emit("unsubscribed", uuid=MEASUREMENT)
    await seed.hang_up(device, connection)


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    seed.add_central_arguments(parser, scan_timeout=10.0)
    parser.add_argument("--count", type=int, default=24,
                        help="measurements to print (default 24: every flag combination)")
    parser.add_argument("--control", action="append", metavar="HEX",
                        help="value to write to the control point (repeatable; "
                             "default: 01 then 02; --control '' writes an empty value)")
    parser.add_argument("--no-control", dest="control", action="store_const", const=[],
                        help="do not write the control point")
    common.run(seed.run_central("HeartRateMonitor", work), parser.parse_args())

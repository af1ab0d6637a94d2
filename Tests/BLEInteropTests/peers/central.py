#!/usr/bin/env python3
"""Bumble central: connect to --target, discover everything, print it as JSON lines, exit.

Optional work after discovery, in this order: --read UUID (repeatable), --write UUID=HEX
(repeatable; Write Request, or prepared writes when longer than ATT_MTU-3), --write-command
UUID=HEX (repeatable; Write Command), --subscribe UUID (repeatable; waits for --count values
from each). Then it disconnects, prints {"event":"done"} and exits 0; any failure prints
{"event":"error","message":...} and exits 1.
"""
from __future__ import annotations

import asyncio
import struct
from typing import Any

from bumble import att
from bumble.core import UUID
from bumble.gatt import GATT_INCLUDE_ATTRIBUTE_TYPE, Characteristic
from bumble.gatt_client import ServiceProxy
from bumble.hci import Address

import peer_common as common


def parse_target(text: str) -> Address:
    """AA:BB:CC:DD:EE:FF is a random address; add /P for a public one."""
    if text.upper().endswith("/P"):
        return Address(text[:-2], Address.PUBLIC_DEVICE_ADDRESS)
    return Address(text, Address.RANDOM_DEVICE_ADDRESS)


def parse_assignment(text: str) -> tuple[str, bytes]:
    uuid, _, value = text.partition("=")
    return uuid.lower(), bytes.fromhex(value)


async def discover_includes(client: Any, service: Any) -> list[dict[str, Any]]:
    """Find Included Services (Core spec Vol 3 Part G §4.5.1), including the 128-bit case.

    An Include declaration carries the UUID only when it is 16-bit; otherwise the client reads
    the included service's declaration. Bumble 0.0.236's own client does not handle that case.
    """
    found: list[dict[str, Any]] = []
    start = service.handle
    while start <= service.end_group_handle:
        response = await client.send_request(att.ATT_Read_By_Type_Request(
            starting_handle=start, ending_handle=service.end_group_handle,
            attribute_type=GATT_INCLUDE_ATTRIBUTE_TYPE))
        if response is None or response.op_code == att.Opcode.ATT_ERROR_RESPONSE:
            break
        if not response.attributes:
            break
        for handle, value in response.attributes:
            first, last = struct.unpack_from("<HH", value)
            if len(value) >= 6:
                uuid = UUID.from_bytes(bytes(value[4:]))
            else:
                uuid = UUID.from_bytes(bytes(await client.read_value(first)))
            found.append({"handle": handle, "start": first, "end": last, "uuid": uuid})
        start = response.attributes[-1][0] + 1
    return found


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, "BumbleCentral", args.address)
        common.watch_connections(device)
        await device.power_on()
        common.ready()
        try:
            await asyncio.wait_for(run_central(device, args), timeout=args.timeout)
        except (Exception, asyncio.CancelledError) as error:  # noqa: BLE001
            if stop.is_set():
                raise  # SIGTERM: leave quietly
            # Bumble cancels a pending request when the link drops: report it like any error.
            common.emit("error", message=f"{type(error).__name__}: {error}")
            return 1
    common.emit("done")
    return 0


async def run_central(device: Any, args: Any) -> None:
    connection = await device.connect(parse_target(args.target), timeout=args.connect_timeout)
    client = connection.gatt_client
    if args.mtu:
        await client.request_mtu(args.mtu)  # reported by the "mtu" event of watch_connections

    characteristics: dict[str, Any] = {}
    services = await client.discover_services()
    extra = []
    for service in services:
        common.emit("service", uuid=common.uuid_text(service.uuid), handle=service.handle,
                    end=service.end_group_handle, primary=True)
        for include in await discover_includes(client, service):
            common.emit("include", service=common.uuid_text(service.uuid),
                        handle=include["handle"], uuid=common.uuid_text(include["uuid"]),
                        start=include["start"], end=include["end"])
            extra.append(include)
    # Characteristics of the primary services, then of the included (secondary) ones.
    groups = list(services) + [
        ServiceProxy(client, i["start"], i["end"], i["uuid"], False) for i in extra]
    for service in groups:
        for characteristic in await client.discover_characteristics([], service):
            characteristics.setdefault(common.uuid_text(characteristic.uuid), characteristic)
            common.emit("characteristic", service=common.uuid_text(service.uuid),
                        uuid=common.uuid_text(characteristic.uuid),
                        handle=characteristic.handle - 1, value_handle=characteristic.handle,
                        properties=int(characteristic.properties))
            for descriptor in await client.discover_descriptors(characteristic):
                common.emit("descriptor", characteristic=common.uuid_text(characteristic.uuid),
                            uuid=common.uuid_text(descriptor.type), handle=descriptor.handle)
    common.emit("discovered", services=len(services), characteristics=len(characteristics))

    def lookup(uuid: str) -> Any:
        key = uuid.upper() if len(uuid) <= 8 else uuid.lower()
        if key not in characteristics:
            raise LookupError(f"no characteristic {uuid}")
        return characteristics[key]

    for uuid in args.read:
        characteristic = lookup(uuid)
        try:
            value = bytes(await client.read_value(characteristic))
            common.emit("read", uuid=common.uuid_text(characteristic.uuid), length=len(value),
                        value=value.hex())
        except att.ATT_Error as error:
            common.emit("read_error", uuid=common.uuid_text(characteristic.uuid),
                        error=int(error.error_code))

    for uuid, value in map(parse_assignment, args.write):
        characteristic = lookup(uuid)
        await client.write_value(characteristic, value, with_response=True)
        common.emit("wrote", uuid=common.uuid_text(characteristic.uuid), length=len(value))
    for uuid, value in map(parse_assignment, args.write_command):
        characteristic = lookup(uuid)
        await client.write_value(characteristic, value, with_response=False)
        common.emit("wrote", uuid=common.uuid_text(characteristic.uuid), length=len(value),
                    command=True)

    waiters = []
    for uuid in args.subscribe:
        characteristic = lookup(uuid)
        kind = "notification" if characteristic.properties & Characteristic.Properties.NOTIFY \
            else "indication"
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        await client.subscribe(characteristic, queue.put_nowait,
                               prefer_notify=kind == "notification")
        waiters.append(collect(characteristic, kind, queue, args.count))
    await asyncio.gather(*waiters)
    await connection.disconnect()


async def collect(characteristic: Any, kind: str, queue: asyncio.Queue, count: int) -> None:
    for _ in range(count):
        value = bytes(await queue.get())
        common.emit(kind, uuid=common.uuid_text(characteristic.uuid), value=value.hex())


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--target", required=True,
                        help="peer address (random static; add /P for a public address)")
    parser.add_argument("--mtu", type=int, default=247, help="ATT MTU to request (0: none)")
    parser.add_argument("--read", action="append", default=[], metavar="UUID")
    parser.add_argument("--write", action="append", default=[], metavar="UUID=HEX")
    parser.add_argument("--write-command", action="append", default=[], metavar="UUID=HEX")
    parser.add_argument("--subscribe", action="append", default=[], metavar="UUID")
    parser.add_argument("--count", type=int, default=3,
                        help="values to wait for per subscription (default 3)")
    parser.add_argument("--connect-timeout", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="overall deadline for connect + discovery + work (seconds)")
    common.run(main, parser.parse_args())

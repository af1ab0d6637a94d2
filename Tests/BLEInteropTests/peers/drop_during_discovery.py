#!/usr/bin/env python3
"""Bumble peripheral "DropPeer" that drops the link instead of answering an ATT request.

On each connection, the first ATT request other than Exchange MTU (or really the first one
with --drop-on-any) is not answered: the peer disconnects at once with reason 0x13 (Remote
User Terminated Connection). The Swift client's pending GATT operation must end with a typed
"disconnected" error well before its ATT transaction timeout (30 s, Core spec Vol 3 Part F
§3.3.3). Advertising restarts after the drop, so a test may connect again.

Events: connected, request {"opcode": n, "name": "..."} for the request that triggered the
drop, dropping, disconnected {"reason": 19} (plus READY first).
"""
from __future__ import annotations

import asyncio
from typing import Any

from bumble import att
from bumble.core import AdvertisingData
from bumble.device import AdvertisingType

import peer_common as common


def advertising_data(name: str) -> bytes:
    encoded = name.encode("utf-8")
    return (bytes([2, AdvertisingData.FLAGS, 0x06])
            + bytes([len(encoded) + 1, AdvertisingData.COMPLETE_LOCAL_NAME]) + encoded)


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, args.name, args.address)
        dropped: set[int] = set()
        common.watch_connections(device, on_disconnect=lambda c, r: dropped.discard(c.handle))

        server = device.gatt_server
        original = server.on_gatt_pdu

        def on_gatt_pdu(connection: Any, pdu: Any) -> None:
            is_request = pdu.op_code in att.ATT_REQUESTS
            skip = pdu.op_code == att.Opcode.ATT_EXCHANGE_MTU_REQUEST and not args.drop_on_any
            if is_request and not skip:
                handle = connection.handle
                if handle not in dropped:
                    dropped.add(handle)
                    common.emit("request", opcode=int(pdu.op_code), name=pdu.name)
                    common.emit("dropping", handle=handle)
                    asyncio.get_running_loop().create_task(
                        connection.disconnect(reason=0x13))
                return  # never answer: the link is going away
            original(connection, pdu)

        server.on_gatt_pdu = on_gatt_pdu

        await device.power_on()
        await device.start_advertising(
            advertising_type=AdvertisingType.UNDIRECTED_CONNECTABLE_SCANNABLE,
            advertising_data=advertising_data(args.name),
            scan_response_data=b"",
            auto_restart=True,
            advertising_interval_min=100.0,
            advertising_interval_max=100.0,
        )
        common.ready()
        await stop.wait()
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--name", default="DropPeer", help="complete local name")
    parser.add_argument("--drop-on-any", action="store_true",
                        help="also drop on an Exchange MTU Request (default: answer it)")
    common.run(main, parser.parse_args())

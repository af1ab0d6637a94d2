#!/usr/bin/env python3
"""Bumble scanner: prints each distinct advertising report as a JSON line.

Events: {"event":"advertisement","address":"C4:..","address_type":"random"|"public",
"scan_response":bool,"connectable":bool,"legacy":bool,"rssi":n,"data":"hex"} (one line per
distinct (address, scan_response, data); the raw AD bytes, not merged with the scan response),
then {"event":"done"} when --duration ends or, with --target and --until-found, as soon as the
target's advertisement (and, when scanning actively, its scan response) were seen.
"""
from __future__ import annotations

import asyncio
from typing import Any

from bumble.device import Advertisement
from bumble.hci import Address

import peer_common as common


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, "BumbleScanner", args.address)
        seen: set[tuple[str, bool, bytes]] = set()
        kinds: set[bool] = set()
        found = asyncio.Event()
        target = args.target.upper() if args.target else None

        def on_report(report: Any) -> None:
            advertisement = Advertisement.from_advertising_report(report)
            if advertisement is None:
                return
            address = str(advertisement.address).split("/")[0].upper()
            if target and address != target:
                return
            key = (address, advertisement.is_scan_response, bytes(advertisement.data_bytes))
            if key in seen:
                return
            seen.add(key)
            common.emit(
                "advertisement", address=address,
                address_type="public" if advertisement.address.is_public else "random",
                scan_response=advertisement.is_scan_response,
                connectable=advertisement.is_connectable, legacy=advertisement.is_legacy,
                rssi=advertisement.rssi, data=bytes(advertisement.data_bytes).hex())
            kinds.add(advertisement.is_scan_response)
            if target and (kinds == {False, True} or (args.passive and False in kinds)):
                found.set()

        device.host.on("advertising_report", on_report)
        await device.power_on()
        await device.start_scanning(legacy=args.legacy, active=not args.passive,
                                    filter_duplicates=False)
        common.ready()
        waits = [asyncio.create_task(stop.wait()),
                 asyncio.create_task(asyncio.sleep(args.duration))]
        if args.until_found:
            waits.append(asyncio.create_task(found.wait()))
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in waits:
            task.cancel()
        # No stop_scanning(): Bumble 0.0.236 stops a --legacy scan with the extended command,
        # which rootcanal rejects; closing the transport ends the scan anyway.
    common.emit("done", reports=len(seen))
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--target", help="only report this address")
    parser.add_argument("--passive", action="store_true", help="passive scan (no scan requests)")
    parser.add_argument("--legacy", action="store_true", help="use legacy HCI scan commands")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds to scan (default 5)")
    parser.add_argument("--until-found", action="store_true",
                        help="stop once --target's advertisement (and scan response) were seen")
    common.run(main, parser.parse_args())

#!/usr/bin/env python3
"""Bumble extended scanner: prints each distinct advertisement, whole, as a JSON line.

Scans with the extended commands on --phy (1m, coded, or 1m,coded); the reports of a chain
(Data Status incomplete) are put together before they are printed. Events: {"event":"advertisement","address":"C4:..","address_type":
"random"|"public","legacy":bool,"connectable":bool,"scannable":bool,"scan_response":bool,
"sid":n,"primary_phy":n,"secondary_phy":n,"tx_power":n,"truncated":bool,"data":"hex"} (one per
distinct (address, sid, scan_response, data)); with --target, only that address's.

With --sync (and --target, --sid), once the target is heard it syncs to its periodic
advertising: {"event":"synced"}, then {"event":"periodic","data":"hex","truncated":bool} per
distinct periodic data, {"event":"sync_lost"} if the train goes. With --connect it connects to
the target after hearing it: {"event":"connected"}. Ends with {"event":"done"} after
--duration, or as soon as --until-found is satisfied (the target heard; with --sync, --count
periodic reports; with --connect, connected).
"""
from __future__ import annotations

import asyncio
from typing import Any

from bumble import hci
from bumble.device import Advertisement, ConnectionParametersPreferences

import peer_common as common

PHYS = {"1m": hci.HCI_LE_1M_PHY, "coded": hci.HCI_LE_CODED_PHY}


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, "BumbleExtScanner", args.address)
        seen: set[tuple[str, int, bool, bytes]] = set()
        periodic_seen: set[bytes] = set()
        heard = asyncio.Event()
        finished = asyncio.Event()
        target = args.target.upper() if args.target else None
        state = {"periodic": 0, "started": False}

        async def sync_to(address: hci.Address) -> None:
            sync = await device.create_periodic_advertising_sync(address, args.sid)

            def on_report(advertisement: Any) -> None:
                state["periodic"] += 1
                data = bytes(advertisement.data_bytes)
                if data not in periodic_seen:
                    periodic_seen.add(data)
                    common.emit("periodic", data=data.hex(), truncated=advertisement.is_truncated)
                if state["periodic"] >= args.count:
                    finished.set()

            sync.on("establishment", lambda: common.emit("synced", sid=args.sid))
            sync.on("establishment_error", lambda: common.emit("sync_failed"))
            sync.on("loss", lambda: common.emit("sync_lost"))
            sync.on("periodic_advertisement", on_report)

        async def connect_to(address: hci.Address) -> None:
            await device.stop_scanning()
            # Initiate on every PHY scanned, so a set advertising on LE Coded is reached too.
            preferences = {PHYS[p]: ConnectionParametersPreferences.default for p in args.phy.split(",")}
            await device.connect(address, own_address_type=hci.OwnAddressType.RANDOM, timeout=10,
                                 connection_parameters_preferences=preferences)
            common.emit("connected", address=str(address).split("/")[0])
            finished.set()

        pending: dict[tuple[str, int, bool], bytes] = {}

        def on_advertisement(advertisement: Advertisement) -> None:
            address = str(advertisement.address).split("/")[0].upper()
            if target and address != target:
                return
            # Bumble 0.0.236 hands over each report of a chain (Data Status "incomplete, more
            # to come") on its own: put them together here.
            part = (address, advertisement.sid, advertisement.is_scan_response)
            data = pending.pop(part, b"") + bytes(advertisement.data_bytes)
            if not advertisement.is_complete and not advertisement.is_truncated:
                pending[part] = data
                return
            key = (address, advertisement.sid, advertisement.is_scan_response, data)
            if key not in seen:
                seen.add(key)
                common.emit(
                    "advertisement", address=address,
                    address_type="public" if advertisement.address.is_public else "random",
                    legacy=advertisement.is_legacy, connectable=advertisement.is_connectable,
                    scannable=advertisement.is_scannable, scan_response=advertisement.is_scan_response,
                    sid=advertisement.sid, primary_phy=advertisement.primary_phy,
                    secondary_phy=advertisement.secondary_phy, tx_power=advertisement.tx_power,
                    truncated=advertisement.is_truncated, data=data.hex())
            if target and not state["started"] and (args.sid is None or advertisement.sid == args.sid):
                state["started"] = True
                heard.set()
                if args.sync:
                    asyncio.ensure_future(sync_to(advertisement.address))
                elif args.connect:
                    asyncio.ensure_future(connect_to(advertisement.address))
                else:
                    finished.set()

        device.on("advertisement", on_advertisement)
        await device.power_on()
        phys = [PHYS[p] for p in args.phy.split(",")]
        await device.start_scanning(legacy=False, active=not args.passive, scanning_phys=phys,
                                    filter_duplicates=False)
        common.ready()
        waits = [asyncio.create_task(stop.wait()), asyncio.create_task(asyncio.sleep(args.duration))]
        if args.until_found:
            waits.append(asyncio.create_task(finished.wait()))
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in waits:
            task.cancel()
    common.emit("done", reports=len(seen), periodic=state["periodic"])
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--target", help="only report this address")
    parser.add_argument("--sid", type=int, help="with --target: the set to act on")
    parser.add_argument("--phy", default="1m,coded", help="1m, coded or 1m,coded (default both)")
    parser.add_argument("--passive", action="store_true", help="passive scan (no scan requests)")
    parser.add_argument("--duration", type=float, default=8.0, help="seconds to run at most (default 8)")
    parser.add_argument("--until-found", action="store_true", help="stop as soon as the target's work is done")
    parser.add_argument("--sync", action="store_true", help="sync to the target's periodic advertising")
    parser.add_argument("--count", type=int, default=3, help="with --sync: periodic reports to wait for")
    parser.add_argument("--connect", action="store_true", help="connect to the target once heard")
    common.run(main, parser.parse_args())

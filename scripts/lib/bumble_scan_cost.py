#!/usr/bin/env python3
"""Bumble's side of `ble-bench scan`: advertising reports through Bumble's host to a consumer.

Replays the HCI events `ble-bench scan-events --out FILE` writes (the same bytes `ble-bench scan`
feeds our host: two rounds of 10,000 devices, legacy and extended reports, scan responses and
malformed events; format in Sources/BLEBench/ScanEventsDump.swift) into a Bumble `Host` that has
been powered on over a Bumble `Controller` and is scanning actively. Each event enters where a
transport would hand it over (`Host.on_packet`), so it goes through Bumble's HCI packet parsing,
advertising report decoding, the `Device`'s per-address accumulator (which joins a legacy scan
response to its advertisement) and the AD structure decoding of `Advertisement`, to a listener
of the device's `advertisement` event.

Bumble's host neither filters duplicates nor ages devices out; the consumer does what ours gets
done by our host: a device list keyed by address, a device delivered when it is new or its
advertising data changed (then its name, service UUIDs, manufacturer and service data,
appearance and TX power are read out of the decoded structures), and every 10 s of scan time the
devices not heard for 60 s dropped (our scanner's figures). Time is one second per round, as in
`ble-bench scan`. COUNT is a number of reports; the run stops at the first event that reaches it:

  bumble scan: N advertising reports in E HCI events, M malformed events, D devices delivered to the consumer (K different)
    S s CPU: R reports per CPU-second

  .venv/bin/python scripts/lib/bumble_scan_cost.py --events FILE [--count N]
"""
import argparse
import asyncio
import logging
import struct
import sys
import time

from bumble import hci
from bumble.controller import Controller
from bumble.core import AdvertisingData
from bumble.device import Device
from bumble.host import Host
from bumble.link import LocalLink
from bumble.transport.common import AsyncPipeSink

ROUND_END = 0xFFFF
PRUNE_EVERY = 10.0
FORGET_AFTER = 60.0
NAMES = (AdvertisingData.COMPLETE_LOCAL_NAME, AdvertisingData.SHORTENED_LOCAL_NAME)
SERVICES = (AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS,
            AdvertisingData.INCOMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS,
            AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS,
            AdvertisingData.INCOMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS)


def read_rounds(path: str) -> list[list[tuple[int, bytes]]]:
    """The rounds of the file: each a list of (reports, H4 packet bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    rounds, current, offset = [], [], 0
    while offset + 4 <= len(data):
        reports, length = struct.unpack_from("<HH", data, offset)
        offset += 4
        if reports == ROUND_END:
            rounds.append(current)
            current = []
            continue
        if offset + length > len(data):
            raise ValueError(f"{path}: a record runs past the end of the file")
        current.append((reports, data[offset:offset + length]))
        offset += length
    if not rounds or current:
        raise ValueError(f"{path}: not a ble-bench scan-events file")
    return rounds


class DeviceList:
    """The consumer: devices by address, delivered when new or changed, aged out."""

    def __init__(self) -> None:
        self.now = 0.0
        self.entries: dict = {}
        self.delivered = 0
        self.heard: set = set()

    def on_advertisement(self, advertisement) -> None:
        entry = self.entries.get(advertisement.address)
        structures = advertisement.data.ad_structures
        if entry is not None:
            entry[0] = self.now
            if entry[1] == structures:
                return
            entry[1] = structures
        else:
            entry = [self.now, structures, None]
            self.entries[advertisement.address] = entry
        ad = advertisement.data
        entry[2] = (
            next((n for n in (ad.get(t) for t in NAMES) if n is not None), None),
            [u for t in SERVICES for u in (ad.get(t) or [])],
            ad.get(AdvertisingData.MANUFACTURER_SPECIFIC_DATA),
            ad.get(AdvertisingData.SERVICE_DATA_16_BIT_UUID),
            ad.get(AdvertisingData.APPEARANCE),
            ad.get(AdvertisingData.TX_POWER_LEVEL),
            advertisement.rssi,
        )
        self.delivered += 1
        self.heard.add(advertisement.address)

    def prune(self) -> None:
        stale = [a for a, e in self.entries.items() if self.now - e[0] > FORGET_AFTER]
        for address in stale:
            del self.entries[address]


async def run(rounds, count: int):
    controller = Controller("scanner", link=LocalLink(), public_address="F0:F0:F0:F0:F0:F0")
    host = Host(controller, AsyncPipeSink(controller))
    device = Device(address=hci.Address("F0:F0:F0:F0:F0:F0"), host=host)
    await device.power_on()
    await device.start_scanning(active=True, filter_duplicates=False)
    consumer = DeviceList()
    device.on("advertisement", consumer.on_advertisement)

    reports = events = malformed = 0
    next_prune = PRUNE_EVERY
    before = time.process_time()
    index = 0
    while reports < count:
        for n, packet in rounds[index % len(rounds)]:
            host.on_packet(packet)
            reports += n
            events += 1
            malformed += n == 0
            if reports >= count:
                break
        else:
            index += 1
            consumer.now += 1.0
            if consumer.now >= next_prune:
                consumer.prune()
                next_prune += PRUNE_EVERY
    cpu = time.process_time() - before
    return reports, events, malformed, consumer, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", required=True, help="a file from `ble-bench scan-events --out FILE`")
    parser.add_argument("--count", type=int, default=60_000)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    try:
        rounds = read_rounds(args.events)
    except (OSError, ValueError) as error:
        print(f"bumble_scan_cost.py: {error}", file=sys.stderr)
        return 2
    reports, events, malformed, consumer, cpu = asyncio.run(run(rounds, max(1, args.count)))
    print(f"bumble scan: {reports} advertising reports in {events} HCI events, {malformed} malformed events, "
          f"{consumer.delivered} devices delivered to the consumer ({len(consumer.heard)} different)")
    print(f"  {cpu:.3f} s CPU: {reports / cpu:.0f} reports per CPU-second")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Bumble's side of `ble-bench raw`: the host cost of GATT notifications, both ends in one process.

Two Bumble devices, each a Bumble host on a Bumble `Controller`, the controllers on one
`LocalLink` (the in-process set-up of Bumble's own tests). The peripheral's GATT server has one
notify characteristic; the central finds it, asks for an ATT MTU of 247 and subscribes; the
peripheral then notifies COUNT values of 244 bytes and the central counts them.

  --acl-buffer B   both controllers' LE ACL data buffer length (HCI_LE_Read_Buffer_Size, Core spec
                   Vol 4 Part E §7.8.2), 27 to 251: the sending host fragments every notification to
                   it. Bumble's controller hands a received PDU to its host in one ACL packet
                   whatever its length; here it is cut to B as well, as a controller does (and as
                   ours does), so that with 27 bytes each notification is ten fragments each way.

The sender keeps at most WINDOW notifications ahead of the receiver (flow control of a kind our
host has too), so nothing piles up in Bumble's unbounded queues. After a 200-notification warm-up,
the CPU time of the process (`time.process_time`) over the COUNT notifications gives:

  bumble raw: COUNT notifications of 244 B, B-byte ACL buffers, Bumble → Bumble (both hosts in this process)
    S s CPU: R notifications per CPU-second

scripts/bench.sh --compare runs it twice under callgrind (two COUNTs) for instructions per
notification, the same way as ours.

  .venv/bin/python scripts/lib/bumble_notify_cost.py [--count N] [--acl-buffer 27|251]
"""
import argparse
import asyncio
import logging
import sys
import time

from bumble import hci
from bumble.controller import Controller
from bumble.core import PhysicalTransport
from bumble.device import Device, Peer
from bumble.gatt import Characteristic, Service
from bumble.host import Host
from bumble.link import LocalLink
from bumble.transport.common import AsyncPipeSink

VALUE_SIZE = 244
WINDOW = 64
WARM_UP = 200
SERVICE = "8e0a0001-2f6b-4e4b-9a07-6b2f1c3d4e5f"
CHARACTERISTIC = "8e0a0002-2f6b-4e4b-9a07-6b2f1c3d4e5f"


class FragmentingController(Controller):
    """A Bumble controller that also fragments what it receives to its LE ACL buffer length."""

    def on_link_acl_data(self, sender_address, transport, data):
        connection = self.le_connections.get(sender_address) if transport == PhysicalTransport.LE else None
        if connection is None:
            super().on_link_acl_data(sender_address, transport, data)
            return
        size = self.le_acl_data_packet_length
        for offset in range(0, len(data), size):
            chunk = data[offset:offset + size]
            # Packet_Boundary_Flag 0b10 first fragment, 0b01 continuation (Vol 4 Part E §5.4.2).
            boundary = 0b10 if offset == 0 else 0b01
            self.send_hci_packet(hci.HCI_AclDataPacket(connection.handle, boundary, 0, len(chunk), chunk))


def device(link: LocalLink, name: str, address: str, acl_buffer: int) -> Device:
    controller = FragmentingController(name, link=link, public_address=address)
    controller.le_acl_data_packet_length = acl_buffer
    return Device(address=hci.Address(address), host=Host(controller, AsyncPipeSink(controller)))


class Counter:
    """Counts the central's notifications and wakes the sender when the receiver catches up."""

    def __init__(self) -> None:
        self.received = 0
        self.target = 0
        self.waiter: asyncio.Future | None = None

    def on_value(self, _value: bytes) -> None:
        self.received += 1
        if self.waiter is not None and not self.waiter.done() and self.received >= self.target:
            self.waiter.set_result(None)

    async def until(self, target: int) -> None:
        if self.received >= target:
            return
        self.target = target
        self.waiter = asyncio.get_running_loop().create_future()
        await self.waiter


async def send(peripheral: Device, characteristic: Characteristic, counter: Counter, count: int) -> None:
    value = bytes(i & 0xFF for i in range(VALUE_SIZE))
    start = counter.received
    for i in range(count):
        if i - (counter.received - start) >= WINDOW:
            await counter.until(start + i - WINDOW // 2)
        await peripheral.notify_subscribers(characteristic, value)
    await counter.until(start + count)


async def run(count: int, acl_buffer: int) -> float:
    link = LocalLink()
    central = device(link, "central", "F0:F0:F0:F0:F0:F0", acl_buffer)
    peripheral = device(link, "peripheral", "F1:F1:F1:F1:F1:F1", acl_buffer)
    characteristic = Characteristic(CHARACTERISTIC, Characteristic.Properties.NOTIFY,
                                    Characteristic.READABLE, bytes(VALUE_SIZE))
    peripheral.add_service(Service(SERVICE, [characteristic]))
    await central.power_on()
    await peripheral.power_on()
    connected = asyncio.get_running_loop().create_future()
    peripheral.once("connection", connected.set_result)
    await peripheral.start_advertising(advertising_interval_min=20)
    connection = await central.connect(peripheral.random_address)
    await connected

    peer = Peer(connection)
    await peer.request_mtu(247)
    await peer.discover_services()
    services = peer.get_services_by_uuid(SERVICE)
    await peer.discover_characteristics(service=services[0])
    remote = services[0].characteristics[0]
    counter = Counter()
    await peer.subscribe(remote, counter.on_value)

    await send(peripheral, characteristic, counter, WARM_UP)
    before = time.process_time()
    await send(peripheral, characteristic, counter, count)
    return time.process_time() - before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--acl-buffer", type=int, default=251)
    args = parser.parse_args()
    if not 27 <= args.acl_buffer <= 251 or args.count < 1:
        print("bumble_notify_cost.py: --acl-buffer takes 27 to 251, --count at least 1", file=sys.stderr)
        return 2
    logging.disable(logging.WARNING)
    cpu = asyncio.run(run(args.count, args.acl_buffer))
    print(f"bumble raw: {args.count} notifications of {VALUE_SIZE} B, {args.acl_buffer}-byte ACL buffers, "
          "Bumble → Bumble (both hosts in this process)")
    print(f"  {cpu:.3f} s CPU: {args.count / cpu:.0f} notifications per CPU-second")
    return 0


if __name__ == "__main__":
    sys.exit(main())

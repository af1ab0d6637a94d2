"""Helpers shared by the seed-system peers (S1-S4, docs/SYSTEMS.md).

Built on peer_common (same contract: READY, JSON event lines, exit 0 on SIGTERM). What is here:
advertising data, finding a peripheral by scanning, the central's connect-work-disconnect run
with `done`/`error` events, callback-only characteristic values, and waiting for room in
Bumble's ACL queue before sending more notifications.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import struct
from typing import Any, Awaitable, Callable, Iterable

from bumble import att, core, gatt
from bumble.core import UUID, AdvertisingData
from bumble.device import AdvertisingType
from bumble.hci import Address

import peer_common as common

log = logging.getLogger("seed")

LEGACY_AD_MAX = 31  # Core spec Vol 6 Part B §2.3.1: legacy advertising data is at most 31 bytes


# ------------------------------------------------------------------------------- advertising
def ad_structure(ad_type: int, data: bytes) -> bytes:
    return bytes([len(data) + 1, ad_type]) + data


def uuid_le(text: str) -> bytes:
    """A UUID as carried in AD structures and ATT PDUs: little-endian, 2 or 16 bytes."""
    return bytes.fromhex(text.replace("-", ""))[::-1]


def advertising_data(name: str | None, services: Iterable[str] = (), appearance: int | None = None,
                     flags: int = 0x06) -> bytes:
    """Flags, complete lists of the services' UUIDs (16-bit and 128-bit), appearance, then the
    local name (none when `name` is None): complete if it fits the 31 bytes, otherwise shortened
    to what fits."""
    uuids16 = b"".join(uuid_le(s) for s in services if len(s) == 4)
    uuids128 = b"".join(uuid_le(s) for s in services if len(s) != 4)
    head = ad_structure(AdvertisingData.FLAGS, bytes([flags]))
    if uuids16:
        head += ad_structure(AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, uuids16)
    if uuids128:
        head += ad_structure(AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS,
                             uuids128)
    if appearance is not None:
        head += ad_structure(AdvertisingData.APPEARANCE, struct.pack("<H", appearance))
    room = LEGACY_AD_MAX - len(head) - 2
    if name is None:
        return head
    encoded = name.encode("utf-8")
    if room < 1:
        return head
    if len(encoded) <= room:
        return head + ad_structure(AdvertisingData.COMPLETE_LOCAL_NAME, encoded)
    return head + ad_structure(AdvertisingData.SHORTENED_LOCAL_NAME, encoded[:room])


async def advertise(device: Any, data: bytes, scan_response: bytes = b"",
                    interval: float = 100.0) -> Any:
    """Connectable, scannable legacy advertising that goes on while centrals are connected, so
    several centrals can connect at once (the controller stops an advertising set when a
    connection is made from it; we start it again at once, and after each disconnection).
    Returns the advertising set (or Bumble's legacy advertiser)."""
    await device.start_advertising(
        advertising_type=AdvertisingType.UNDIRECTED_CONNECTABLE_SCANNABLE,
        advertising_data=data,
        scan_response_data=scan_response,
        auto_restart=False,
        advertising_interval_min=interval,
        advertising_interval_max=interval,
    )

    # Extended advertising set with legacy PDUs (rootcanal), or Bumble's legacy advertiser,
    # which Bumble forgets on connection when auto_restart is off: keep our own reference.
    advertiser = device.legacy_advertising_set or device.legacy_advertiser

    async def restart() -> None:
        if getattr(advertiser, "enabled", False):
            return
        try:
            await advertiser.start()
        except Exception as error:  # noqa: BLE001 - e.g. the controller's connection limit
            log.warning("could not restart advertising: %s", error)

    def on_connection(connection: Any) -> None:
        if connection.role != 0:  # we are the peripheral: our advertising made this link
            asyncio.get_running_loop().create_task(restart())
        connection.on("disconnection",
                      lambda reason: asyncio.get_running_loop().create_task(restart()))

    device.on("connection", on_connection)
    return advertiser


async def ignore_scan_requests_in_turns(advertiser: Any, ignore: float, answer: float) -> None:
    """Runs until cancelled: the advertiser ignores every scan request for `ignore` seconds, then
    answers them for `answer` seconds, and again. Ignoring is Advertising_Filter_Policy 0x01
    (scan requests only from the Filter Accept List, which is empty; connection requests from
    anyone; Core spec Vol 4 Part E §7.8.53), so a scanner meets scan requests lost in a row as
    on a busy channel. The parameters change only while the set is off: it is stopped, changed
    and started again each turn (a turn that fails, e.g. during a connection, is logged)."""
    while True:
        for policy, duration in ((0x01, ignore), (0x00, answer)):
            try:
                if getattr(advertiser, "enabled", False):
                    await advertiser.stop()
                parameters = advertiser.advertising_parameters
                parameters.advertising_filter_policy = policy
                await advertiser.set_advertising_parameters(parameters)
                await advertiser.start()
            except Exception as error:  # noqa: BLE001 - the controller refusing a turn
                log.warning("scan request policy %d: %s", policy, error)
            await asyncio.sleep(duration)


# ------------------------------------------------------------------------------- GATT server
def value(read: Any = None, write: Any = None) -> gatt.CharacteristicValue:
    """A value that answers Read/Write Not Permitted when it has no callback for it.

    Bumble 0.0.236 checks neither properties nor READABLE/WRITEABLE permissions, and a static
    value is writable by anyone, so every value of these peers goes through callbacks."""
    if isinstance(read, (bytes, bytearray)):
        constant = bytes(read)
        read = lambda connection: constant  # noqa: E731

    def refuse_read(connection: Any) -> bytes:
        raise att.ATT_Error(att.ATT_READ_NOT_PERMITTED_ERROR)

    def refuse_write(connection: Any, data: bytes) -> None:
        raise att.ATT_Error(att.ATT_WRITE_NOT_PERMITTED_ERROR)

    return gatt.CharacteristicValue(read=read or refuse_read, write=write or refuse_write)


def is_connected(device: Any, connection: Any) -> bool:
    return device.connections.get(connection.handle) is connection


async def wait_for_room(device: Any, connection: Any) -> None:
    """Backpressure for notifications.

    Bumble's notify_subscriber only queues the PDU in the host's ACL queue (it returns at once
    and never drops); the queue sends to the controller as its buffers free up. A sender that
    loops on notify_subscriber would grow that queue without bound, so before each notification
    we wait until the packets not yet completed by the controller are fewer than the
    controller's buffer count. Order is kept because a single task sends each stream."""
    queue = device.host.get_data_packet_queue(connection.handle)
    if queue is None:
        return
    limit = max(1, queue.max_in_flight)
    while queue.pending >= limit and is_connected(device, connection):
        log.debug("waiting for room: %d ACL packets pending, limit %d", queue.pending, limit)
        flowed = asyncio.Event()
        handler = queue.on("flow", flowed.set)
        try:
            # A disconnection flushes the queue without a "flow" event: poll as well.
            await asyncio.wait_for(flowed.wait(), timeout=0.25)
        except asyncio.TimeoutError:
            pass
        finally:
            queue.remove_listener("flow", handler)


def subscribed_to_notifications(device: Any, connection: Any, characteristic: Any) -> bool:
    cccd = device.gatt_server.subscribers.get(connection, {}).get(characteristic.handle)
    return bool(cccd) and len(cccd) == 2 and bool(cccd[0] & 0x01)


# ------------------------------------------------------------------------------- central side
def parse_target(text: str) -> Address:
    """AA:BB:CC:DD:EE:FF is a random address; add /P for a public one (as central.py)."""
    if text.upper().endswith("/P"):
        return Address(text[:-2], Address.PUBLIC_DEVICE_ADDRESS)
    return Address(text, Address.RANDOM_DEVICE_ADDRESS)


def address_text(address: Any) -> str:
    return str(address).split("/")[0].upper()


def advertised_name(advertisement: Any) -> str | None:
    for ad_type in (AdvertisingData.COMPLETE_LOCAL_NAME, AdvertisingData.SHORTENED_LOCAL_NAME):
        for kind, data in advertisement.data.ad_structures:
            if kind == ad_type:
                return bytes(data).decode("utf-8", errors="replace")
    return None


UUID_LISTS = {
    AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS: 2,
    AdvertisingData.INCOMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS: 2,
    AdvertisingData.COMPLETE_LIST_OF_32_BIT_SERVICE_CLASS_UUIDS: 4,
    AdvertisingData.INCOMPLETE_LIST_OF_32_BIT_SERVICE_CLASS_UUIDS: 4,
    AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS: 16,
    AdvertisingData.INCOMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS: 16,
}


def advertised_services(advertisement: Any) -> list[str]:
    found: list[str] = []
    for kind, data in advertisement.data.ad_structures:
        size = UUID_LISTS.get(kind)
        if size is None:
            continue
        for i in range(0, len(data) - size + 1, size):
            found.append(common.uuid_text(UUID.from_bytes(bytes(data[i:i + size]))))
    return found


async def scan(device: Any, match: Callable[[str | None, list[str]], bool], duration: float,
               until_found: bool) -> list[Any]:
    """Active scan for `duration` seconds (or until the first match with `until_found`).

    Prints {"event":"found","address","name","rssi","services"} once per matching device and
    returns their advertisements in the order found. Bumble merges a scan response into the
    advertisement it answers, so a name or UUID in either is seen."""
    found: dict[str, Any] = {}
    first = asyncio.Event()

    def on_advertisement(advertisement: Any) -> None:
        if not advertisement.is_connectable and not advertisement.is_scan_response:
            return
        address = address_text(advertisement.address)
        if address in found:
            return
        name = advertised_name(advertisement)
        services = advertised_services(advertisement)
        if not match(name, services):
            return
        found[address] = advertisement
        common.emit("found", address=address, name=name, rssi=advertisement.rssi,
                    services=services)
        first.set()

    device.on("advertisement", on_advertisement)
    await device.start_scanning(active=True, filter_duplicates=False)
    try:
        if until_found:
            try:
                await asyncio.wait_for(first.wait(), timeout=duration)
            except asyncio.TimeoutError:
                pass
        else:
            await asyncio.sleep(duration)
    finally:
        device.remove_listener("advertisement", on_advertisement)
        await device.stop_scanning()
    return list(found.values())


async def connect(device: Any, args: argparse.Namespace, what: str,
                  match: Callable[[str | None, list[str]], bool],
                  until_found: bool = True) -> Any:
    """Connect to --target, or to the first device `scan` finds within --scan-timeout."""
    if args.target:
        address: Any = parse_target(args.target)
    else:
        found = await scan(device, match, args.scan_timeout, until_found)
        if not found:
            raise LookupError(f"not found: no {what} within {args.scan_timeout:g} s")
        address = found[0].address
    common.emit("connecting", address=address_text(address))
    # rootcanal 1.10.0: when two centrals send a connect request to one advertiser in the same
    # advertising event, the advertiser accepts one and the other initiator stays "pending"
    # for ever, ignoring the advertising that follows, until its host cancels. So connect in
    # attempts of --connect-attempt s; a cancelled attempt makes the next one start afresh.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + args.connect_timeout
    attempt = 0
    while True:
        attempt += 1
        remaining = deadline - loop.time()
        try:
            return await device.connect(address, timeout=max(0.1, min(args.connect_attempt,
                                                                       remaining)))
        except core.TimeoutError:
            if deadline - loop.time() < 0.1:
                raise asyncio.TimeoutError(
                    f"no connection to {address_text(address)} within "
                    f"{args.connect_timeout:g} s ({attempt} attempts)") from None
            common.emit("connect_retry", address=address_text(address), attempt=attempt)


def add_central_arguments(parser: argparse.ArgumentParser, scan_timeout: float = 10.0,
                          mtu: int = 247) -> None:
    parser.add_argument("--target", help="peer address (random static; add /P for a public "
                        "address); without it, scan")
    parser.add_argument("--scan-timeout", type=float, default=scan_timeout,
                        help=f"seconds to scan when there is no --target (default {scan_timeout:g})")
    parser.add_argument("--connect-timeout", type=float, default=10.0,
                        help="seconds to wait for the connection (default 10)")
    parser.add_argument("--connect-attempt", type=float, default=2.0,
                        help="seconds per connection attempt within --connect-timeout "
                             "(default 2; see seed_common.connect)")
    parser.add_argument("--mtu", type=int, default=mtu,
                        help=f"ATT MTU to request (default {mtu}; 0: no exchange, stay at 23)")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="overall deadline for scan + connect + work (seconds, default 60)")


def run_central(name: str, work: Callable[[Any, argparse.Namespace], Awaitable[None]]) -> Callable:
    """The `main` of a central peer: power on, READY, `work(device, args)` under --timeout.

    Ends with {"event":"done"} and status 0, or {"event":"error","message":...} and status 1
    (a scan that finds nothing gives "LookupError: not found: ..."); SIGTERM ends it quietly."""

    async def main(args: argparse.Namespace, stop: asyncio.Event) -> int:
        async with await common.open_hci(args.transport) as transport:
            device = common.make_device(transport, name, args.address)
            dropped: list[int] = []
            common.watch_connections(device, on_disconnect=lambda c, r: dropped.append(r))
            await device.power_on()
            common.ready()
            try:
                await asyncio.wait_for(work(device, args), timeout=args.timeout)
            except (Exception, asyncio.CancelledError) as error:  # noqa: BLE001
                if stop.is_set():
                    # SIGTERM/SIGINT (run() cancelled us) or rootcanal went away: leave quietly.
                    if isinstance(error, asyncio.CancelledError):
                        raise
                    return 0
                # Bumble cancels a pending GATT request when the link drops: an error like any.
                if isinstance(error, asyncio.CancelledError) and dropped:
                    error = ConnectionError(f"disconnected (reason {dropped[-1]}) during a GATT "
                                            "request")
                elif isinstance(error, asyncio.TimeoutError) and not str(error):
                    error = asyncio.TimeoutError(f"no result within --timeout {args.timeout:g} s")
                common.emit("error", message=f"{type(error).__name__}: {error}")
                return 1
        common.emit("done")
        return 0

    return main


async def exchange_mtu(connection: Any, mtu: int) -> None:
    if mtu:
        await connection.gatt_client.request_mtu(mtu)  # "mtu" event from watch_connections


async def discover(connection: Any, service_uuid: str,
                   characteristic_uuids: Iterable[str]) -> dict[str, Any]:
    """Discover one service and the given characteristics in it (with their descriptors);
    prints {"event":"characteristic","service","uuid","handle","value_handle","properties"}
    for each and returns them by UUID text."""
    client = connection.gatt_client
    services = await client.discover_service(UUID(service_uuid))
    if not services:
        raise LookupError(f"service {service_uuid} not found")
    service = services[0]
    common.emit("service", uuid=common.uuid_text(service.uuid), handle=service.handle,
                end=service.end_group_handle)
    wanted = list(characteristic_uuids)
    result: dict[str, Any] = {}
    for characteristic in await client.discover_characteristics([], service):
        key = common.uuid_text(characteristic.uuid)
        if key not in wanted or key in result:
            continue
        await client.discover_descriptors(characteristic)
        result[key] = characteristic
        common.emit("characteristic", service=common.uuid_text(service.uuid), uuid=key,
                    handle=characteristic.handle - 1, value_handle=characteristic.handle,
                    properties=int(characteristic.properties))
    missing = [u for u in wanted if u not in result]
    if missing:
        raise LookupError(f"characteristic(s) {', '.join(missing)} not found in {service_uuid}")
    return result


# ------------------------------------------------------------------------------- limits
def add_peripheral_limits(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--count", type=int, default=0,
                        help=f"end after sending this many {what} in total (default 0: no limit)")
    parser.add_argument("--duration", type=float, default=0.0,
                        help="end after this many seconds (default 0: run until stopped)")


async def wait_until(stop: asyncio.Event, finished: asyncio.Event, duration: float) -> None:
    """Returns on SIGTERM/SIGINT (`stop`), when the peer's work is `finished`, or after
    `duration` seconds when it is positive."""
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(finished.wait())]
    if duration > 0:
        waits.append(asyncio.ensure_future(asyncio.sleep(duration)))
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()


async def disconnect_all(device: Any, timeout: float = 2.0) -> None:
    """End every link with reason 0x13 before a peripheral exits by itself (--count or
    --duration), so its centrals see a normal disconnection rather than a lost controller."""
    connections = list(device.connections.values())
    if not connections:
        return

    async def one(connection: Any) -> None:
        try:
            await connection.disconnect()
        except Exception as error:  # noqa: BLE001 - already gone, or the controller refused
            log.debug("disconnect %s: %s", connection.handle, error)

    try:
        await asyncio.wait_for(asyncio.gather(*(one(c) for c in connections)), timeout)
    except asyncio.TimeoutError:
        pass


async def hang_up(device: Any, connection: Any) -> None:
    """Disconnect at the end of a central's work, unless the peripheral already did."""
    if is_connected(device, connection):
        try:
            await connection.disconnect()
        except Exception as error:  # noqa: BLE001 - lost the race with the peer's disconnect
            if is_connected(device, connection):
                raise
            log.debug("disconnect: %s", error)


class Inbox:
    """Notification values of one subscription, in order; `get` raises ConnectionError when
    the link drops while a central waits (instead of waiting until --timeout)."""

    def __init__(self, connection: Any) -> None:
        self.queue: asyncio.Queue[bytes | Exception] = asyncio.Queue()
        connection.on("disconnection", self._gone)

    def put(self, value: bytes) -> None:
        self.queue.put_nowait(bytes(value))

    def _gone(self, reason: int) -> None:
        self.queue.put_nowait(ConnectionError(
            f"disconnected (reason {int(reason)}) while waiting for notifications"))

    async def get(self) -> bytes:
        item = await self.queue.get()
        if isinstance(item, Exception):
            self.queue.put_nowait(item)  # every later get fails the same way
            raise item
        return item

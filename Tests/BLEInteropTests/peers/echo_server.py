#!/usr/bin/env python3
"""S1 echo/image server (peripheral): framed byte stream over one write + notify characteristic.

Service 54f06857-695e-47e4-aea8-c78184ad6c75, characteristic 30a5f1bb-61dc-45f0-9c52-2218d080fa77
(WRITE | NOTIFY). Centrals write frames (CODE + 7-digit SIZE + BODY, see echo_frames.py) split
any way they like; the server reassembles each connection's stream and answers on the same
characteristic by notifications of at most min(ATT_MTU - 3, 512) bytes, in order:

  T text -> T "You said: " + text
  U url  -> I with the bytes fetched from the URL (file://, http://, https://; fetched in a
            thread, the peer keeps serving meanwhile), or T "error: ..." when the fetch fails
  N, I   -> no answer
  malformed header -> T "error: ..."; that connection's reassembly buffer is reset

Replies wait until the central has enabled notifications, and each notification waits for room
in Bumble's ACL queue (nothing is dropped). Any number of centrals at once, each with its own
stream. See README.md for the events.
"""
from __future__ import annotations

import asyncio
import hashlib
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from bumble import gatt
from bumble.att import Attribute
from bumble.core import AdvertisingData

import echo_frames as frames
import peer_common as common
import seed_common as seed

SERVICE = "54f06857-695e-47e4-aea8-c78184ad6c75"
CHARACTERISTIC = "30a5f1bb-61dc-45f0-9c52-2218d080fa77"
MAX_VALUE = 512  # GATT attribute values (and so Bumble's write handler) stop at 512 bytes
SCHEMES = ("file", "http", "https")


class FetchError(Exception):
    pass


def fetch_blocking(url: str, limit: int, timeout: float) -> bytes:
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in SCHEMES:
        raise FetchError(f"unsupported URL scheme {scheme!r} (use file, http or https)")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310
            data = response.read(limit + 1)
    except urllib.error.HTTPError as error:
        raise FetchError(f"HTTP {error.code} {error.reason}") from error
    except urllib.error.URLError as error:
        raise FetchError(str(error.reason)) from error
    except (OSError, ValueError) as error:
        raise FetchError(f"{type(error).__name__}: {error}") from error
    if len(data) > limit:
        raise FetchError(f"the resource is larger than the limit of {limit} bytes")
    return data


async def fetch(url: str, limit: int, timeout: float) -> bytes:
    """urllib in a daemon thread: the event loop keeps serving, and a SIGTERM during a slow
    fetch does not wait for it (asyncio.to_thread's executor would be joined at exit)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[bytes] = loop.create_future()

    def settle(result: bytes | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result or b"")

    def worker() -> None:
        try:
            data = fetch_blocking(url, limit, timeout)
        except BaseException as error:  # noqa: BLE001 - handed to the loop
            loop.call_soon_threadsafe(settle, None, error)
        else:
            loop.call_soon_threadsafe(settle, data, None)

    threading.Thread(target=worker, name="fetch", daemon=True).start()
    return await future


class Session:
    """One central's stream: its reassembler, the frames waiting for an answer, the sender."""

    def __init__(self, connection: Any, limit: int) -> None:
        self.connection = connection
        self.reassembler = frames.Reassembler(limit)
        self.inbox: asyncio.Queue[frames.Frame | frames.FrameError] = asyncio.Queue()
        self.subscribed = asyncio.Event()
        self.task: asyncio.Task | None = None


class EchoServer:
    def __init__(self, device: Any, args: Any, finished: asyncio.Event) -> None:
        self.device = device
        self.args = args
        self.finished = finished
        self.replies = 0
        self.sessions: dict[int, Session] = {}
        P = gatt.Characteristic.Properties
        self.characteristic = gatt.Characteristic(
            CHARACTERISTIC, P.WRITE | P.NOTIFY, Attribute.WRITEABLE,
            seed.value(write=self.on_write))
        device.add_service(gatt.Service(SERVICE, [self.characteristic]))
        self.characteristic.on("subscription", self.on_subscription)

    def session(self, connection: Any) -> Session:
        session = self.sessions.get(connection.handle)
        if session is None or session.connection is not connection:
            session = Session(connection, self.args.max_size)
            session.task = asyncio.get_running_loop().create_task(self.serve(session))
            self.sessions[connection.handle] = session
        return session

    def on_disconnect(self, connection: Any, reason: int) -> None:
        session = self.sessions.pop(connection.handle, None)
        if session and session.task:
            session.task.cancel()

    # ------------------------------------------------------------------ incoming
    def on_subscription(self, bearer: Any, notify: bool, indicate: bool) -> None:
        common.emit("subscription", uuid=CHARACTERISTIC, handle=self.characteristic.handle,
                    connection=bearer.handle, notify=notify, indicate=indicate)
        session = self.session(bearer)
        if notify:
            session.subscribed.set()
        else:
            session.subscribed.clear()

    def on_write(self, connection: Any, data: bytes) -> None:
        # Runs synchronously for each write, in arrival order, before the Write Response.
        session = self.session(connection)
        common.emit("write", connection=connection.handle, length=len(data))
        for item in session.reassembler.feed(bytes(data)):
            if isinstance(item, frames.FrameError):
                common.emit("frame_error", connection=connection.handle, message=str(item))
            else:
                event: dict[str, Any] = {"code": item.code, "size": len(item.body)}
                if item.code in "TU":
                    event["text"] = item.text()
                common.emit("frame", connection=connection.handle, **event)
            session.inbox.put_nowait(item)

    # ------------------------------------------------------------------ answers
    async def serve(self, session: Session) -> None:
        """Answers one connection's frames strictly in order (a slow fetch delays the answers
        to the frames after it, never reorders them)."""
        while not self.finished.is_set():
            item = await session.inbox.get()
            if self.finished.is_set():
                return
            reply = await self.answer(session, item)
            if reply is not None:
                await self.send(session, *reply)

    async def answer(self, session: Session,
                     item: frames.Frame | frames.FrameError) -> tuple[str, bytes] | None:
        if isinstance(item, frames.FrameError):
            return "T", f"error: {item}".encode("utf-8")
        if item.code == "T":
            return "T", b"You said: " + item.body
        if item.code != "U":
            return None
        url = item.body.decode("utf-8", errors="replace").strip()
        handle = session.connection.handle
        common.emit("fetch", connection=handle, url=url)
        limit = min(self.args.max_size, frames.MAX_SIZE)
        try:
            data = await fetch(url, limit, self.args.fetch_timeout)
        except FetchError as error:
            common.emit("fetch_error", connection=handle, url=url, message=str(error))
            return "T", f"error: cannot fetch {url}: {error}".encode("utf-8")
        common.emit("fetched", connection=handle, url=url, size=len(data),
                    sha256=hashlib.sha256(data).hexdigest())
        return "I", data

    async def send(self, session: Session, code: str, body: bytes) -> None:
        connection = session.connection
        stream = frames.encode(code, body)
        offset = count = largest = 0
        while offset < len(stream):
            await seed.wait_for_room(self.device, connection)
            if not seed.subscribed_to_notifications(self.device, connection, self.characteristic):
                # Keep the rest for when the central subscribes (again); never drop it.
                session.subscribed.clear()
                await session.subscribed.wait()
                continue
            size = min(connection.att_mtu - 3, MAX_VALUE)
            chunk = stream[offset:offset + size]
            await self.device.notify_subscriber(connection, self.characteristic, chunk)
            offset += len(chunk)
            count += 1
            largest = max(largest, len(chunk))
        event: dict[str, Any] = {"code": code, "size": len(body), "notifications": count,
                                 "max_notification": largest, "mtu": connection.att_mtu}
        if code == "T":
            event["text"] = body.decode("utf-8", errors="replace")
        else:
            event["sha256"] = hashlib.sha256(body).hexdigest()
        common.emit("reply", connection=connection.handle, **event)
        self.replies += 1
        if self.args.count and self.replies >= self.args.count:
            self.finished.set()


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, args.name, args.address)
        finished = asyncio.Event()
        server = EchoServer(device, args, finished)
        common.watch_connections(device, on_disconnect=server.on_disconnect)
        await device.power_on()
        scan_response = seed.ad_structure(AdvertisingData.COMPLETE_LOCAL_NAME,
                                          args.name.encode("utf-8"))
        advertised_name = None if args.name_in_scan_response else args.name
        advertiser = await seed.advertise(device, seed.advertising_data(advertised_name, [SERVICE]), scan_response)
        turns = None
        if args.ignore_scan_requests:
            ignore, answer = (float(ms) / 1000 for ms in args.ignore_scan_requests.split("/"))
            turns = asyncio.get_running_loop().create_task(
                seed.ignore_scan_requests_in_turns(advertiser, ignore, answer))
        common.ready()
        await seed.wait_until(stop, finished, args.duration)
        if turns:
            turns.cancel()
        for session in server.sessions.values():
            if session.task:
                session.task.cancel()
        if not stop.is_set():
            await seed.disconnect_all(device)
    if not stop.is_set():
        common.emit("done", replies=server.replies)
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--name", default="EchoServer", help="local name (default EchoServer)")
    parser.add_argument("--name-in-scan-response", action="store_true",
                        help="no name in the advertising data: the name only in the scan response")
    parser.add_argument("--ignore-scan-requests", metavar="IGNORE_MS/ANSWER_MS",
                        help="ignore all scan requests for IGNORE_MS, then answer them for ANSWER_MS, in turns")
    parser.add_argument("--max-size", type=int, default=frames.DEFAULT_LIMIT,
                        help="largest frame body accepted, and largest fetched resource "
                             f"(bytes, default {frames.DEFAULT_LIMIT})")
    parser.add_argument("--fetch-timeout", type=float, default=10.0,
                        help="seconds before a URL fetch fails (default 10)")
    seed.add_peripheral_limits(parser, "replies")
    common.run(main, parser.parse_args())

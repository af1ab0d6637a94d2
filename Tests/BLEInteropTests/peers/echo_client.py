#!/usr/bin/env python3
"""S1 echo/image client (central): sends frames to an echo server and prints the answers.

Connects to --target (or scans for service 54f06857-695e-47e4-aea8-c78184ad6c75 for at most
--scan-timeout s), exchanges the MTU (--mtu), discovers the service and characteristic
30a5f1bb-61dc-45f0-9c52-2218d080fa77, enables notifications, then writes the frames given by
--text / --url / --empty / --raw (in command-line order) as one byte stream cut into Write
Requests of at most min(ATT_MTU - 3, 512, --write-size) bytes, so a frame may span writes and a
write may end one frame and start the next (a --raw piece starts and ends its own writes). It reassembles the notified answers, prints each
(`reply`; an I frame's body goes to --output), disconnects and prints `done`.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
from typing import Any

import echo_frames as frames
import peer_common as common
import seed_common as seed

SERVICE = "54f06857-695e-47e4-aea8-c78184ad6c75"
CHARACTERISTIC = "30a5f1bb-61dc-45f0-9c52-2218d080fa77"
MAX_VALUE = 512


class Ordered(argparse.Action):
    """Collects --text/--url/--empty/--raw into args.items, keeping their order."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        items = list(getattr(namespace, "items", None) or [])
        items.append((self.const, values))
        namespace.items = items


def build_segments(items: list[tuple[str, Any]]) -> tuple[list[bytes], str, int]:
    """The byte stream to write, as segments that each start a new write; the codes of what is
    in it; how many answers to expect (one per T and U frame and per --raw piece).

    Consecutive frames share a segment, so one write may end a frame and start the next. A
    --raw piece is a segment of its own: after a malformed header the server drops the rest of
    that write, and the next frame starts cleanly at the beginning of the following write."""
    segments: list[bytearray] = [bytearray()]
    codes = ""
    expected = 0
    for kind, value in items:
        if kind == "raw":
            segments.append(bytearray(bytes.fromhex(value)))
            segments.append(bytearray())
            codes += "?"
            expected += 1
        elif kind == "N":
            segments[-1] += frames.encode("N")
            codes += "N"
        else:
            segments[-1] += frames.encode(kind, value.encode("utf-8"))
            codes += kind
            expected += 1
    return [bytes(s) for s in segments if s], codes, expected


async def work(device: Any, args: Any) -> None:
    items = getattr(args, "items", None) or []
    if not items:
        raise ValueError("nothing to send: give --text, --url, --empty or --raw")
    segments, codes, expected = build_segments(items)
    if args.replies is not None:
        expected = args.replies

    connection = await seed.connect(device, args, f"device advertising {SERVICE}",
                                    lambda name, services: SERVICE in services)
    await seed.exchange_mtu(connection, args.mtu)
    found = await seed.discover(connection, SERVICE, [CHARACTERISTIC])
    characteristic = found[CHARACTERISTIC]

    reassembler = frames.Reassembler(args.max_size)
    replies: list[frames.Frame] = []
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    state = {"notifications": 0, "largest": 0, "images": 0, "total": 0}

    def on_notification(value: bytes) -> None:
        value = bytes(value)
        state["notifications"] += 1
        state["total"] += 1
        state["largest"] = max(state["largest"], len(value))
        for item in reassembler.feed(value):
            if isinstance(item, frames.FrameError):
                if not done.done():
                    done.set_exception(ValueError(f"malformed frame from the server: {item}"))
                return
            report(item)

    def report(frame: frames.Frame) -> None:
        event: dict[str, Any] = {"code": frame.code, "size": len(frame.body),
                                 "notifications": state["notifications"],
                                 "max_notification": state["largest"],
                                 "mtu": connection.att_mtu}
        state["notifications"] = state["largest"] = 0
        if frame.code == "I":
            event["sha256"] = hashlib.sha256(frame.body).hexdigest()
            if args.output:
                state["images"] += 1
                path = args.output if state["images"] == 1 else f"{args.output}.{state['images']}"
                with open(path, "wb") as f:
                    f.write(frame.body)
                event["output"] = path
        else:
            event["text"] = frame.text()
        common.emit("reply", **event)
        replies.append(frame)
        if len(replies) >= expected and not done.done():
            done.set_result(None)

    def on_disconnection(reason: int) -> None:
        if not done.done():
            done.set_exception(ConnectionError(
                f"disconnected (reason {int(reason)}) after {len(replies)} of {expected} answers"))

    connection.on("disconnection", on_disconnection)
    await connection.gatt_client.subscribe(characteristic, on_notification, prefer_notify=True)
    common.emit("subscribed", uuid=CHARACTERISTIC)

    size = min(connection.att_mtu - 3, MAX_VALUE)
    if args.write_size:
        size = min(size, args.write_size)
    pieces = [piece for segment in segments for piece in frames.split(segment, size)]
    for piece in pieces:
        await connection.gatt_client.write_value(characteristic, piece, with_response=True)
    common.emit("sent", codes=codes, bytes=sum(map(len, segments)), writes=len(pieces),
                write_size=max(len(p) for p in pieces), mtu=connection.att_mtu)

    if expected:
        await done
    await seed.hang_up(device, connection)


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    seed.add_central_arguments(parser, scan_timeout=10.0)
    parser.add_argument("--text", action=Ordered, const="T", metavar="TEXT",
                        help="send a T frame (repeatable)")
    parser.add_argument("--url", action=Ordered, const="U", metavar="URL",
                        help="send a U frame; the server answers with an I frame (repeatable)")
    parser.add_argument("--empty", action=Ordered, const="N", nargs=0,
                        help="send an N frame (empty body, no answer expected)")
    parser.add_argument("--raw", action=Ordered, const="raw", metavar="HEX",
                        help="append raw bytes to the stream, e.g. a malformed header "
                             "(one answer expected per --raw)")
    parser.add_argument("--write-size", type=int, default=0,
                        help="cap each write below ATT_MTU - 3 (default: no cap)")
    parser.add_argument("--replies", type=int, default=None,
                        help="answers to wait for (default: one per --text, --url, --raw)")
    parser.add_argument("--output", help="file for the body of an I frame (further ones: .2, .3…)")
    parser.add_argument("--max-size", type=int, default=frames.MAX_SIZE,
                        help="largest answer body accepted (bytes, default 9999999)")
    common.run(seed.run_central("EchoClient", work), parser.parse_args())

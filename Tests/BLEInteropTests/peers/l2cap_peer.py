#!/usr/bin/env python3
"""Bumble LE credit-based channel peer (Core spec Vol 3 Part A §4.22, §10.2), for the interop tests.

--role server (default): advertises as --name and listens on --psm with --mtu/--mps/--credits;
  with --echo every SDU goes back. Events: {"event":"channel","psm","mtu","mps","peer_mtu",
  "peer_mps"} when a channel opens; {"event":"closed","bytes":N,"sdus":N,"sha256":HEX} when it
  closes (bytes received, and the SHA-256 of all of them).
--role client: connects to --target, opens a channel on --psm, sends --size bytes (byte i is
  i*7+3 mod 256) in SDUs of --sdu bytes, waits until they are out and --hold seconds more, closes
  the channel, disconnects. Events: "channel" as above; {"event":"sent","bytes","sha256"};
  {"event":"closed",...} with what it received; then "done" (or "error" and exit 1).
  With --enhanced it opens --count channels with one Credit Based Connection Request (Vol 3
  Part A §4.25) and sends on each (channel k: byte i is i*7+3+k mod 256; "sent" has "index");
  --reconfigure-mtu M [--reconfigure-mps S] then sends a Credit Based Reconfigure Request for
  all of them (§4.27; Bumble 0.0.236 has the PDUs but no procedure, so this script sends the
  request and takes the response itself): {"event":"reconfigured","result":R}.
The server accepts channels of both modes (Bumble's LE CoC server answers both requests).
"""
from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from bumble.core import AdvertisingData
from bumble.device import AdvertisingType
from bumble.hci import Address, HCI_Error
from bumble.l2cap import (
    L2CAP_Credit_Based_Reconfigure_Request,
    L2CAP_LE_SIGNALING_CID,
    LeCreditBasedChannelSpec,
)

import peer_common as common


def pattern(size: int, offset: int = 0) -> bytes:
    return bytes((i * 7 + 3 + offset) % 256 for i in range(size))


def watch_channel(channel: Any, echo: bool) -> asyncio.Event:
    received = bytearray()
    count = [0]
    closed = asyncio.Event()
    common.emit("channel", psm=channel.psm, mtu=channel.mtu, mps=channel.mps,
                peer_mtu=channel.peer_mtu, peer_mps=channel.peer_mps)

    def sink(sdu: bytes) -> None:
        received.extend(sdu)
        count[0] += 1
        if echo:
            channel.write(sdu)

    def on_close() -> None:
        common.emit("closed", bytes=len(received), sdus=count[0],
                    sha256=hashlib.sha256(bytes(received)).hexdigest())
        closed.set()

    channel.sink = sink
    channel.on("close", on_close)
    return closed


def spec(args: Any) -> LeCreditBasedChannelSpec:
    return LeCreditBasedChannelSpec(psm=args.psm, mtu=args.mtu, mps=args.mps, max_credits=args.credits)


async def serve(device: Any, args: Any, stop: asyncio.Event) -> int:
    device.create_l2cap_server(spec(args), lambda channel: watch_channel(channel, args.echo))
    await device.start_advertising(
        advertising_type=AdvertisingType.UNDIRECTED_CONNECTABLE_SCANNABLE,
        advertising_data=bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.COMPLETE_LOCAL_NAME, args.name.encode()),
        ])),
        auto_restart=True,
        advertising_interval_min=50,
        advertising_interval_max=50,
    )
    common.ready()
    await stop.wait()
    return 0


async def client(device: Any, args: Any) -> int:
    common.ready()
    try:
        connection = await device.connect(Address(args.target, Address.RANDOM_DEVICE_ADDRESS
                                                  if not args.target.upper().endswith("/P") else Address.PUBLIC_DEVICE_ADDRESS),
                                          timeout=20)
        if args.enhanced:
            channels = await device.l2cap_channel_manager.create_enhanced_credit_based_channels(
                connection, spec(args), args.count)
        else:
            channels = [await connection.create_l2cap_channel(spec(args))]
        watched = [watch_channel(channel, False) for channel in channels]
        if args.reconfigure_mtu:
            await reconfigure(device, connection, channels, args)
        for index, channel in enumerate(channels):
            data = pattern(args.size, index if args.enhanced else 0)
            for offset in range(0, len(data), args.sdu):
                channel.write(data[offset:offset + args.sdu])
        for index, channel in enumerate(channels):
            await channel.drain()
            data = pattern(args.size, index if args.enhanced else 0)
            common.emit("sent", index=index, bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
        await asyncio.sleep(args.hold)
        for channel, closed in zip(channels, watched):
            if not closed.is_set():
                await channel.disconnect()
        try:
            await connection.disconnect()
        except HCI_Error:
            pass  # the other side (e.g. `ble l2cap listen --once`) disconnected first
    except Exception as error:  # noqa: BLE001
        common.emit("error", message=f"{type(error).__name__}: {error}")
        return 1
    common.emit("done")
    return 0


async def reconfigure(device: Any, connection: Any, channels: list[Any], args: Any) -> None:
    """Sends a Credit Based Reconfigure Request for `channels` (our source CIDs) and waits for
    the response, which Bumble's channel manager has no handler for: this one is installed."""
    manager = device.l2cap_channel_manager
    answered: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def on_response(_connection: Any, _cid: int, response: Any) -> None:
        if not answered.done():
            answered.set_result(int(response.result))

    manager.on_l2cap_credit_based_reconfigure_response = on_response
    mps = args.reconfigure_mps or channels[0].mps
    request = L2CAP_Credit_Based_Reconfigure_Request(
        identifier=manager.next_identifier(connection), mtu=args.reconfigure_mtu, mps=mps,
        destination_cid=[channel.source_cid for channel in channels])
    manager.send_control_frame(connection, L2CAP_LE_SIGNALING_CID, request)
    result = await asyncio.wait_for(answered, timeout=30)
    if result == 0:
        for channel in channels:
            channel.mtu = args.reconfigure_mtu
            channel.mps = mps
    common.emit("reconfigured", result=result)


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, args.name, args.address)
        common.watch_connections(device)
        await device.power_on()
        if args.role == "server":
            return await serve(device, args, stop)
        return await client(device, args)


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--role", choices=["server", "client"], default="server")
    parser.add_argument("--name", default="BumbleCoC")
    parser.add_argument("--psm", type=lambda s: int(s, 0), default=0x80)
    parser.add_argument("--mtu", type=int, default=2048)
    parser.add_argument("--mps", type=int, default=247)
    parser.add_argument("--credits", type=int, default=8)
    parser.add_argument("--echo", action="store_true")
    parser.add_argument("--target", help="client: the address to connect to (random; add /P for public)")
    parser.add_argument("--size", type=int, default=65536, help="client: bytes to send")
    parser.add_argument("--sdu", type=int, default=1000, help="client: bytes per SDU")
    parser.add_argument("--hold", type=float, default=0.5, help="client: seconds to wait after sending")
    parser.add_argument("--enhanced", action="store_true", help="client: open --count channels in the enhanced mode")
    parser.add_argument("--count", type=int, default=1, help="client --enhanced: how many channels (1...5)")
    parser.add_argument("--reconfigure-mtu", type=int, default=0, help="client: reconfigure the channels to this MTU")
    parser.add_argument("--reconfigure-mps", type=int, default=0, help="client: ... and this MPS (default unchanged)")
    common.run(main, parser.parse_args())

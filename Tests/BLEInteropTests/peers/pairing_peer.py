#!/usr/bin/env python3
"""Bumble peer for the pairing interop tests, as peripheral or central.

--role peripheral: advertises --name with a service 7e1f0101-… holding three readable values:
  7e1f0102 "open" (no security), 7e1f0103 "encrypted" (needs an encrypted link), 7e1f0104
  "authenticated" (needs a link encrypted with an authenticated, MITM-protected key; checked
  here, since Bumble 0.0.236 counts any pairing as authenticated).
--role central: connects to --target, pairs (unless --no-pair-first), reads every value of
  --service (default the service above) and prints each, then stays connected until SIGTERM.

Pairing options: --io none|display|keyboard|yesno|keyboard-display, --legacy (no Secure
Connections), --mitm, --no-bond, --passkey N (the passkey this side shows or types), --reject
(answer a numeric comparison with no), --security-request (peripheral: ask the central to pair
as soon as it connects). --privacy (peripheral): advertise with a resolvable private address made
from --irk (hex, least significant octet first as SMP distributes it), a new one after each
disconnection; "advertising" {address} says which. --keystore FILE keeps bonds in a JSON file
(across runs); --encrypt-first (central): encrypt with the stored bond instead of pairing.

Events (JSON lines): "connected"/"disconnected" (peer_common), "passkey" {passkey} when this side
displays, "compare" {number}, "paired" {sc, ltk, ltk_central, ltk_peripheral, irk, csrk,
identity, authenticated}, "pairing_failure" {reason}, "encrypted" {enabled, key_size},
"read" {uuid, value} / "read_error" {uuid, code} in central mode.
"""
from __future__ import annotations

import asyncio
from typing import Any

from bumble import att, gatt
from bumble.core import AdvertisingData
from bumble.device import AdvertisingType, Device
from bumble.hci import Address, HCI_LE_Set_Random_Address_Command, OwnAddressType
from bumble.keys import JsonKeyStore, MemoryKeyStore
from bumble.pairing import PairingConfig, PairingDelegate

import peer_common as common

BASE = "-8d0b-4c1e-9a00-5b1e00c0ffee"
SERVICE = "7e1f0101" + BASE
OPEN = "7e1f0102" + BASE
ENCRYPTED = "7e1f0103" + BASE
AUTHENTICATED = "7e1f0104" + BASE

IO = {
    "none": PairingDelegate.NO_OUTPUT_NO_INPUT,
    "display": PairingDelegate.DISPLAY_OUTPUT_ONLY,
    "keyboard": PairingDelegate.KEYBOARD_INPUT_ONLY,
    "yesno": PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT,
    "keyboard-display": PairingDelegate.DISPLAY_OUTPUT_AND_KEYBOARD_INPUT,
}


class Delegate(PairingDelegate):
    def __init__(self, args: Any) -> None:
        super().__init__(io_capability=IO[args.io])
        self.args = args

    async def generate_passkey(self) -> int:
        return self.args.passkey if self.args.passkey is not None else await super().generate_passkey()

    async def display_number(self, number: int, digits: int) -> None:
        common.emit("passkey", passkey=number)

    async def get_number(self) -> int | None:
        return self.args.passkey

    async def compare_numbers(self, number: int, digits: int) -> bool:
        common.emit("compare", number=number)
        return not self.args.reject

    async def confirm(self, auto: bool = False) -> bool:
        return not self.args.reject


def key_hex(key: Any) -> str | None:
    return key.value.hex() if key is not None else None


class Peer:
    def __init__(self, device: Device, args: Any) -> None:
        self.device = device
        self.args = args
        # Peer address -> whether its bond's key is authenticated (a reconnection that encrypts
        # with the stored key is as authenticated as the pairing that made it).
        self.mitm: dict[str, bool] = {}
        device.keystore = JsonKeyStore(None, args.keystore) if args.keystore else MemoryKeyStore()
        device.pairing_config_factory = lambda connection: PairingConfig(
            sc=not args.legacy, mitm=args.mitm, bonding=not args.no_bond, delegate=Delegate(args))

    def watch(self, connection: Any) -> None:
        def on_pairing(keys: Any) -> None:
            ltk = keys.ltk or keys.ltk_central or keys.ltk_peripheral
            self.mitm[str(connection.peer_address)] = bool(ltk and ltk.authenticated)
            common.emit("paired", sc=bool(connection.sc), ltk=key_hex(keys.ltk), ltk_central=key_hex(keys.ltk_central),
                        ltk_peripheral=key_hex(keys.ltk_peripheral), irk=key_hex(keys.irk), csrk=key_hex(keys.csrk),
                        identity=str(connection.peer_address).split("/")[0],
                        authenticated=self.mitm[str(connection.peer_address)])

        def on_failure(reason: int) -> None:
            common.emit("pairing_failure", reason=int(reason))

        def on_encryption_change() -> None:
            common.emit("encrypted", enabled=bool(connection.encryption), key_size=connection.encryption_key_size)

        connection.on("pairing", on_pairing)
        connection.on("pairing_failure", on_failure)
        connection.on("connection_encryption_change", on_encryption_change)
        if self.args.role == "peripheral" and self.args.privacy:
            connection.on("disconnection", lambda reason: asyncio.ensure_future(advertise(self.device, self.args)))
        if self.args.role == "peripheral" and self.args.security_request:
            connection.request_pairing()

    def read_authenticated(self, connection: Any) -> bytes:
        if not connection.encryption:
            raise att.ATT_Error(att.ATT_INSUFFICIENT_AUTHENTICATION_ERROR)
        if not self.mitm.get(str(connection.peer_address), False):
            raise att.ATT_Error(att.ATT_INSUFFICIENT_AUTHENTICATION_ERROR)
        return b"authenticated"

    def service(self) -> gatt.Service:
        R = gatt.Characteristic.Properties.READ
        return gatt.Service(SERVICE, [
            gatt.Characteristic(OPEN, R, gatt.Characteristic.READABLE, b"open"),
            gatt.Characteristic(ENCRYPTED, R, gatt.Characteristic.READ_REQUIRES_ENCRYPTION, b"encrypted"),
            gatt.Characteristic(AUTHENTICATED, R, gatt.Characteristic.READABLE,
                                gatt.CharacteristicValue(read=self.read_authenticated)),
        ])


async def run_central(device: Device, peer: Peer, args: Any, stop: asyncio.Event) -> int:
    target = Address(args.target, Address.PUBLIC_DEVICE_ADDRESS if args.public_target else Address.RANDOM_DEVICE_ADDRESS)
    common.ready()
    connection = await device.connect(target, timeout=15)
    peer.watch(connection)
    try:
        if args.encrypt_first:
            await connection.encrypt()
        elif not args.no_pair_first:
            await connection.pair()
    except Exception as error:  # noqa: BLE001
        common.emit("error", message=f"{'encrypt' if args.encrypt_first else 'pair'}: {error}")
    from bumble.gatt_client import Client  # noqa: F401  (ensures the client is loaded)
    services = await connection.gatt_client.discover_services([gatt.UUID(args.service)])
    for service in services:
        await service.discover_characteristics()
        for characteristic in service.characteristics:
            uuid = common.uuid_text(characteristic.uuid)
            try:
                value = await characteristic.read_value()
                common.emit("read", uuid=uuid, value=bytes(value).decode("utf-8", "replace"))
            except att.ATT_Error as error:
                common.emit("read_error", uuid=uuid, code=int(error.error_code))
    common.emit("done")
    await stop.wait()
    return 0


async def advertise(device: Device, args: Any) -> None:
    name = args.name.encode("utf-8")
    data = bytes([2, AdvertisingData.FLAGS, 0x06, len(name) + 1, AdvertisingData.COMPLETE_LOCAL_NAME]) + name
    if not args.privacy:
        await device.start_advertising(advertising_type=AdvertisingType.UNDIRECTED_CONNECTABLE_SCANNABLE,
                                       advertising_data=data, auto_restart=True)
        return
    # A new RPA for every advertising run (Core spec Vol 6 Part B 1.3.2.2), set while idle.
    rpa = Address.generate_private_address(device.irk)
    await device.send_command(HCI_LE_Set_Random_Address_Command(random_address=rpa))
    device.random_address = rpa
    await device.start_advertising(advertising_type=AdvertisingType.UNDIRECTED_CONNECTABLE_SCANNABLE,
                                   own_address_type=OwnAddressType.RANDOM, advertising_data=data, auto_restart=False)
    common.emit("advertising", address=str(rpa).split("/")[0])


async def main(args: Any, stop: asyncio.Event) -> int:
    async with await common.open_hci(args.transport) as transport:
        device = common.make_device(transport, args.name, args.address)
        if args.irk:
            # Our IRK as SMP distributes it (least significant octet first); Bumble keeps it so.
            device.irk = bytes.fromhex(args.irk)
        peer = Peer(device, args)
        if args.role == "peripheral":
            device.add_service(peer.service())
            common.watch_connections(device, on_connect=peer.watch)
        else:
            common.watch_connections(device)
        await device.power_on()
        if args.role == "central":
            return await run_central(device, peer, args, stop)
        await advertise(device, args)
        common.ready()
        await stop.wait()
    return 0


if __name__ == "__main__":
    parser = common.base_parser(__doc__)
    parser.add_argument("--role", choices=["peripheral", "central"], default="peripheral")
    parser.add_argument("--name", default="BumbleLock")
    parser.add_argument("--target", help="central: the address to connect to")
    parser.add_argument("--public-target", action="store_true", help="central: --target is a public address")
    parser.add_argument("--io", choices=sorted(IO), default="none")
    parser.add_argument("--legacy", action="store_true")
    parser.add_argument("--mitm", action="store_true")
    parser.add_argument("--no-bond", action="store_true")
    parser.add_argument("--passkey", type=int)
    parser.add_argument("--reject", action="store_true")
    parser.add_argument("--security-request", action="store_true")
    parser.add_argument("--no-pair-first", action="store_true")
    parser.add_argument("--encrypt-first", action="store_true", help="central: encrypt with the stored bond instead of pairing")
    parser.add_argument("--keystore", help="a JSON file for the bonds (else memory)")
    parser.add_argument("--privacy", action="store_true", help="peripheral: advertise with a new RPA after each disconnection")
    parser.add_argument("--irk", help="this device's IRK, 32 hex digits")
    parser.add_argument("--service", default=SERVICE, help="central: the service whose values to read")
    common.run(main, parser.parse_args())

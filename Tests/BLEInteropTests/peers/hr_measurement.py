"""Heart Rate Measurement (0x2A37) values, for heart_rate_sensor.py and heart_rate_monitor.py.

Heart Rate Service 1.0 §3.1.1: byte 0 is the flags field, then the fields it announces.
  bit 0     heart rate value format: 0 = UInt8, 1 = UInt16 little-endian
  bits 1-2  sensor contact: bit 2 = supported, bit 1 = detected (0b00/0b01 not supported,
            0b10 supported but not detected, 0b11 detected)
  bit 3     Energy Expended present: UInt16 LE, kilojoules
  bit 4     RR-Intervals present: UInt16 LE each, 1/1024 s, as many as the rest of the value holds

The JSON shape printed by both peers (`describe`):
  {"flags": n, "format": "uint8"|"uint16", "bpm": n,
   "contact": "notSupported"|"notDetected"|"detected",
   "energyKJ": n or null, "rrIntervals": [seconds…] or null, "rrRaw": [1/1024 s…] or null,
   "value": "hex"}
(rrIntervals are raw / 1024, exact in binary floating point, so they print exactly.)
"""
from __future__ import annotations

import struct
from typing import Any

FORMAT_UINT16 = 0x01
CONTACT_DETECTED = 0x02
CONTACT_SUPPORTED = 0x04
ENERGY_PRESENT = 0x08
RR_PRESENT = 0x10

CONTACTS = ("notSupported", "notDetected", "detected")
CONTACT_BITS = {"notSupported": 0b00, "notDetected": 0b10, "detected": 0b11}
VARIANTS = 24  # 2 formats x 3 contact states x energy or not x RR or not

LOCATIONS = {0: "other", 1: "chest", 2: "wrist", 3: "finger", 4: "hand", 5: "earLobe", 6: "foot"}


def variant_flags(variant: int) -> int:
    """The flags of combination `variant` (0…23): bit 0 of the variant picks the format, then
    the contact state, then energy expended, then RR intervals, so 24 consecutive measurements
    go through every combination."""
    variant %= VARIANTS
    flags = FORMAT_UINT16 if variant & 1 else 0
    flags |= CONTACT_BITS[CONTACTS[(variant >> 1) % 3]] << 1
    if (variant // 6) & 1:
        flags |= ENERGY_PRESENT
    if (variant // 12) & 1:
        flags |= RR_PRESENT
    return flags


def encode(flags: int, bpm: int, energy_kj: int | None, rr_raw: list[int] | None) -> bytes:
    out = bytearray([flags])
    out += struct.pack("<H", bpm) if flags & FORMAT_UINT16 else struct.pack("<B", bpm)
    if flags & ENERGY_PRESENT:
        out += struct.pack("<H", energy_kj or 0)
    if flags & RR_PRESENT:
        for rr in rr_raw or []:
            out += struct.pack("<H", rr)
    return bytes(out)


def contact_name(flags: int) -> str:
    if not flags & CONTACT_SUPPORTED:
        return "notSupported"
    return "detected" if flags & CONTACT_DETECTED else "notDetected"


def decode(value: bytes) -> dict[str, Any]:
    """Parses a measurement; raises ValueError when it is too short for its flags."""
    value = bytes(value)
    if not value:
        raise ValueError("empty Heart Rate Measurement")
    flags = value[0]
    offset = 1
    if flags & FORMAT_UINT16:
        if len(value) < offset + 2:
            raise ValueError(f"measurement {value.hex()} too short for a UInt16 heart rate")
        (bpm,) = struct.unpack_from("<H", value, offset)
        offset += 2
    else:
        if len(value) < offset + 1:
            raise ValueError(f"measurement {value.hex()} has no heart rate")
        bpm = value[offset]
        offset += 1
    energy: int | None = None
    if flags & ENERGY_PRESENT:
        if len(value) < offset + 2:
            raise ValueError(f"measurement {value.hex()} too short for Energy Expended")
        (energy,) = struct.unpack_from("<H", value, offset)
        offset += 2
    rr: list[int] | None = None
    if flags & RR_PRESENT:
        rr = [struct.unpack_from("<H", value, i)[0] for i in range(offset, len(value) - 1, 2)]
    return describe(flags, bpm, energy, rr, value)


def describe(flags: int, bpm: int, energy_kj: int | None, rr_raw: list[int] | None,
             value: bytes) -> dict[str, Any]:
    return {
        "flags": flags,
        "format": "uint16" if flags & FORMAT_UINT16 else "uint8",
        "bpm": bpm,
        "contact": contact_name(flags),
        "energyKJ": energy_kj if flags & ENERGY_PRESENT else None,
        "rrIntervals": [r / 1024 for r in rr_raw] if flags & RR_PRESENT and rr_raw is not None
        else None,
        "rrRaw": list(rr_raw) if flags & RR_PRESENT and rr_raw is not None else None,
        "value": bytes(value).hex(),
    }

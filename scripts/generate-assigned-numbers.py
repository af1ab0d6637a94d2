#!/usr/bin/env python3
"""Generate Sources/BLEWire/AssignedNumbers+*.generated.swift from the Bluetooth SIG numbers tables.

Usage (from the repository root):

    python3 scripts/generate-assigned-numbers.py DATA_DIR [OUTPUT_DIR]

DATA_DIR is not part of this repository: it holds the v1/ tables of Nordic Semiconductor's
bluetooth-numbers-database (service_uuids.json, characteristic_uuids.json,
descriptor_uuids.json, company_ids.json, gap_appearance.json), a SOURCE file naming where and at
which commit they were taken, and the database's LICENSE. OUTPUT_DIR defaults to
Sources/BLEWire.

Why text tables and not Swift literals: a dictionary or array literal with thousands of entries
takes the Swift type checker a very long time. Each table is emitted as one raw multi-line string
(one "KEY<TAB>NAME" line per entry) that AssignedNumbers.swift parses lazily on first use.

Python 3 standard library only.
"""

import json
import os
import re
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUTPUT = os.path.join(REPO_ROOT, "Sources", "BLEWire")
COMMAND = "python3 scripts/generate-assigned-numbers.py DATA_DIR"

UUID16 = re.compile(r"^[0-9A-F]{4}$")
UUID32 = re.compile(r"^[0-9A-F]{8}$")
UUID128 = re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$")
BASE_SUFFIX = "-0000-1000-8000-00805F9B34FB"


def fail(message):
    sys.stderr.write("generate-assigned-numbers: %s\n" % message)
    sys.exit(1)


def load(data_dir, name):
    path = os.path.join(data_dir, name)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail("cannot read %s: %s" % (path, e))


def clean_name(name, where):
    """Names go into tab-separated lines of a raw string: no tabs, newlines or control characters."""
    if not isinstance(name, str) or not name.strip():
        fail("empty or non-string name in %s: %r" % (where, name))
    name = " ".join(name.split())
    if any(ord(c) < 0x20 for c in name):
        fail("control character in name in %s: %r" % (where, name))
    return name


def normalise_uuid(text, where):
    """Upper-case 4-hex-digit form for SIG (base-range, 16-bit) UUIDs, 8 digits for 32-bit ones,
    the dashed 36-character form for everything else."""
    u = text.strip().upper()
    if u.startswith("0X"):
        u = u[2:]
    if UUID16.match(u) or UUID32.match(u):
        return u if len(u) == 4 or not u.startswith("0000") else u[4:]
    if UUID128.match(u):
        if u.endswith(BASE_SUFFIX):
            short = u[:8]
            return short[4:] if short.startswith("0000") else short
        return u
    fail("unrecognised UUID %r in %s" % (text, where))


def uuid_table(data_dir, filename):
    """Lines sorted by key; the first entry for a UUID wins (the data repeats a few)."""
    entries = {}
    for item in load(data_dir, filename):
        key = normalise_uuid(item.get("uuid", ""), filename)
        if key not in entries:
            entries[key] = clean_name(item.get("name"), filename)
    return sorted(entries.items(), key=lambda kv: (len(kv[0]), kv[0]))


def company_table(data_dir):
    entries = {}
    for item in load(data_dir, "company_ids.json"):
        code = item.get("code")
        if not isinstance(code, int) or not 0 <= code <= 0xFFFF:
            fail("bad company code %r" % (code,))
        if code not in entries:
            entries[code] = clean_name(item.get("name"), "company_ids.json")
    return [("%04X" % code, name) for code, name in sorted(entries.items())]


def appearance_tables(data_dir):
    """Categories keyed by category number (3 hex digits, the value's top 10 bits); subcategories
    keyed by the full 16-bit appearance value (category << 6 | subcategory)."""
    categories, subcategories = {}, {}
    for item in load(data_dir, "gap_appearance.json"):
        cat = item.get("category")
        if not isinstance(cat, int) or not 0 <= cat <= 0x3FF:
            fail("bad appearance category %r" % (cat,))
        categories.setdefault(cat, clean_name(item.get("name"), "gap_appearance.json"))
        for sub in item.get("subcategory", []) or []:
            value = sub.get("value")
            if not isinstance(value, int) or not 0 <= value <= 0x3F:
                fail("bad appearance subcategory %r in category %d" % (value, cat))
            subcategories.setdefault(cat << 6 | value, clean_name(sub.get("name"), "gap_appearance.json"))
    return (
        [("%03X" % k, v) for k, v in sorted(categories.items())],
        [("%04X" % k, v) for k, v in sorted(subcategories.items())],
    )


def raw_string(lines):
    """A Swift raw multi-line string literal holding the lines; enough '#'s that no line can end it."""
    body = "\n".join("%s\t%s" % kv for kv in lines)
    hashes = "#"
    while ('"""' + hashes) in body or ("\\" + hashes) in body:
        hashes += "#"
    return '%s"""\n%s\n"""%s' % (hashes, body, hashes)


def read_text(data_dir, name):
    path = os.path.join(data_dir, name)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError as e:
        fail("cannot read %s: %s" % (path, e))


def comment(text):
    return "\n".join(("// " + line).rstrip() for line in text.splitlines())


def main(argv):
    if len(argv) < 2 or len(argv) > 3:
        fail("usage: %s [OUTPUT_DIR]" % COMMAND)
    data_dir = os.path.abspath(argv[1])
    output = os.path.abspath(argv[2]) if len(argv) > 2 else DEFAULT_OUTPUT

    services = uuid_table(data_dir, "service_uuids.json")
    characteristics = uuid_table(data_dir, "characteristic_uuids.json")
    descriptors = uuid_table(data_dir, "descriptor_uuids.json")
    companies = company_table(data_dir)
    categories, subcategories = appearance_tables(data_dir)
    source = read_text(data_dir, "SOURCE")
    licence = read_text(data_dir, "LICENSE")

    # One file per concern: GATT UUID names, company identifiers, appearance values.
    files = [
        ("AssignedNumbers+UUIDs.generated.swift", [
            ("serviceTable", "Service UUIDs: UUID, tab, name.", services),
            ("characteristicTable", "Characteristic UUIDs: UUID, tab, name.", characteristics),
            ("descriptorTable", "Descriptor UUIDs: UUID, tab, name.", descriptors),
        ]),
        ("AssignedNumbers+Companies.generated.swift", [
            ("companyTable", "Company identifiers (hex), tab, name.", companies),
        ]),
        ("AssignedNumbers+Appearance.generated.swift", [
            ("appearanceCategoryTable", "Appearance categories (value >> 6, hex), tab, name.", categories),
            ("appearanceSubcategoryTable", "Appearance subcategories (full 16-bit value, hex), tab, name.", subcategories),
        ]),
    ]

    header = []
    header.append("// GENERATED FILE - DO NOT EDIT.")
    header.append("// Regenerate with: %s" % COMMAND)
    header.append("//")
    header.append("// Data: Bluetooth assigned numbers (service, characteristic and descriptor UUIDs, company")
    header.append("// identifiers, appearance values) from the Bluetooth numbers database.")
    header.append(comment(source))
    header.append("//")
    header.append("// The data is distributed under the following licence, reproduced as it requires:")
    header.append("//")
    header.append(comment(licence))
    header.append("")

    os.makedirs(output, exist_ok=True)
    for filename, tables in files:
        out = list(header)
        out.append("extension AssignedNumbers {")
        for name, doc, lines in tables:
            out.append("    /// %s %d entries." % (doc, len(lines)))
            out.append("    static let %s: String = %s" % (name, raw_string(lines)))
            out.append("")
        out[-1] = "}"
        path = os.path.join(output, filename)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")
        counts = ", ".join("%s %d" % (name, len(lines)) for name, _, lines in tables)
        print("wrote %s (%s)" % (os.path.relpath(path, os.getcwd()), counts))


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env bash
# Shows that the seed systems (Sources/BLESystems) and the ble tool (Sources/ble) use the public
# API only: none of their files imports a module below BLE. They import BLE
# (which re-exports BLEWire and BLERuntime, so those may be named too), BLEVirtual for the virtual
# radio, and the tool's own modules (BLESystems, BLEProfiles, BLEHTTP, BLECommandLine). SwiftPM
# cannot enforce this: a module a dependency depends on can always be imported.
#
# The exceptions, with their reason: `ble ui` serves HTTP from BLETransport's TCP server, writes
# its pages with PrivateFiles and lists NetworkInterfaces, and `ble pandora` takes its bridge's
# control connection from the same TCP server; those are the OS services of the transport
# layer, not Bluetooth, so BLE does not export them.
#
# Usage: scripts/check-api-users.sh   (prints each file:line that breaks the rule; exit 1 if any)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
below='BLEHost|BLEHCI|BLETransport|BLEVirtualRadio|BLECrypto|CLibcrypto'
allowed='^Sources/ble/(Commands/UICommand|Commands/PandoraCommand|Pandora/PandoraServer)\.swift:[0-9]+:import BLETransport$'
for dir in Sources/BLESystems Sources/ble; do
    [[ -d "$dir" ]] || { echo "check-api-users: $dir is missing" >&2; exit 1; }
done
# Any import form: attributes (with arguments, `@_spi(X)`), access levels (`internal import`),
# kinds (`import struct`).
attribute='@[_A-Za-z]+(\([^)]*\))?[[:space:]]+'
access='(public|package|internal|fileprivate|private)[[:space:]]+'
found=$(grep -rnE "^[[:space:]]*($attribute)*($access)?import[[:space:]]+([a-z]+[[:space:]]+)?($below)\b" Sources/BLESystems Sources/ble \
    | grep -vE "$allowed" || true)
if [[ -n "$found" ]]; then
    echo "$found"
    echo "check-api-users: BLESystems and ble import only BLE, BLEVirtual and their own modules; export what they need from BLE (Sources/BLE/API/Exports.swift)" >&2
    exit 1
fi
echo "check-api-users: ok: BLESystems and ble use the public API" >&2

#!/usr/bin/env bash
# Shows that the BLE library product stands alone (docs/ARCHITECTURE.md, "The library stands alone"):
#   1. a package that depends only on the `BLE` product builds, with the README's library
#      examples as its code and `import BLE` as its only import;
#   2. that build compiled none of the virtual radio (no BLEVirtualRadio or BLEVirtual module).
# Usage: scripts/check-ble-product.sh   (exit 0 when both hold; the build takes a minute or two)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(mktemp -d /tmp/ble-product-check.XXXXXX)"
[[ "${BLE_KEEP_CHECK:-0}" == 1 ]] || trap 'rm -rf "$WORK"' EXIT

mkdir -p "$WORK/Sources/App"
cat >"$WORK/Package.swift" <<SWIFT
// swift-tools-version:6.2
import PackageDescription
let package = Package(
    name: "App",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "SwiftBLE", path: "$ROOT")],
    targets: [.executableTarget(name: "App", dependencies: [.product(name: "BLE", package: "SwiftBLE")])],
    swiftLanguageModes: [.v6]
)
SWIFT
# The README's examples, as a user would paste them (never run: they need a controller): the two
# ```swift blocks of its "## The library" section, the central's then the peripheral's
# (Tests/BLETests/DocExamplesTests.swift checks they are there).
library() { awk '/^## /{on = ($0 == "## The library")} on' "$ROOT/README.md"; }
{
    echo 'import BLE'
    echo
    echo 'func central() async throws {'
    library | awk '/^```swift/{n++} n==1' | sed -n '/^```swift/,/^```$/p' | sed '1d;$d' | grep -v '^import '
    echo '}'
    echo
    echo 'func peripheral() async throws {'
    library | awk '/^```swift/{n++} n==2' | sed -n '/^```swift/,/^```$/p' | sed '1d;$d'
    echo '}'
    echo
    echo 'if CommandLine.arguments.count > 5 { try await central(); try await peripheral() }'
} >"$WORK/Sources/App/main.swift"

echo "check-ble-product: building a package that depends only on the BLE product ($WORK)" >&2
if ! (cd "$WORK" && swift build --product App 2>&1 | tail -n 30); then
    echo "check-ble-product: FAILED: the package did not build" >&2
    exit 1
fi
if [[ ! -x "$WORK/.build/debug/App" ]]; then
    echo "check-ble-product: FAILED: no App binary (see the build output above)" >&2
    exit 1
fi
compiled="$(find "$WORK/.build" -name '*.swiftmodule' -path '*Modules*' -printf '%f\n' 2>/dev/null | sort -u | tr '\n' ' ')"
echo "check-ble-product: modules compiled: $compiled" >&2
# SwiftPM lays out an (empty) build folder for every target of the package graph; what counts is
# whether anything was compiled for the virtual radio: object files or a module.
virtual="$(find "$WORK/.build" \( -path '*/BLEVirtual*.build/*.o' -o -name 'BLEVirtual*.swiftmodule' \) 2>/dev/null)"
if [[ -n "$virtual" ]]; then
    echo "check-ble-product: FAILED: the virtual radio was compiled for a BLE-only package:" >&2
    echo "$virtual" | head -n 10 >&2
    exit 1
fi
echo "check-ble-product: ok: BLE builds alone with the README examples, without the virtual radio" >&2

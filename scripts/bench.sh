#!/usr/bin/env bash
# The benchmarks (README "Performance"), from a release build:
#   1. notification throughput Swift → Swift on the virtual radio with the air-time model, in
#      virtual time, against the theoretical figure for the same PHY, interval and data length;
#   2. the raw host cost without the air-time model: notifications per CPU-second;
#   3. instructions per notification under valgrind's callgrind: two runs of different lengths,
#      the difference divided by the difference in notifications (start-up cost cancels out),
#      with 251- and with 27-byte LE ACL buffers (`--acl-buffer`).
# Usage: scripts/bench.sh [--no-callgrind]
set -euo pipefail
cd "$(dirname "$0")/.."

swift build -c release --product ble-bench >/dev/null
bench=.build/release/ble-bench
"$bench" air
echo
"$bench" raw
"$bench" raw --acl-buffer 27

if [[ "${1:-}" == "--no-callgrind" ]]; then exit 0; fi
if ! command -v valgrind >/dev/null 2>&1; then
    echo "installing valgrind (Debian package) for the instruction count" >&2
    if [[ $(id -u) == 0 ]]; then apt-get install -y -q valgrind >/dev/null; else sudo apt-get install -y -q valgrind >/dev/null; fi
fi
instructions() { # total instructions of one `ble-bench raw --count N --acl-buffer B` run
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" raw --count "$1" --acl-buffer "$2" 2>&1 >/dev/null \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | tail -1
}
small=1000
large=3000
for buffer in 251 27; do
    a=$(instructions $small $buffer)
    b=$(instructions $large $buffer)
    echo
    echo "callgrind, $buffer-byte ACL buffers: $small notifications: $a instructions; $large notifications: $b instructions"
    echo "  $(( (b - a) / (large - small) )) instructions per notification (both hosts and the radio, Swift → Swift)"
done

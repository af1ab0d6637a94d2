#!/usr/bin/env bash
# Google's Avatar suite against our stack: `ble pandora` as the device under test (DUT), a
# Bumble device as the reference (REF), both on one rootcanal, no radio.
#
#   scripts/avatar.sh            LeHostTest and LeSecurityTest in full, for our DUT, then for
#                                Bumble as DUT on the same rootcanal; a summary side by side
#   scripts/avatar.sh --slice    LeHostTest and the fixed LeSecurityTest slice below, our DUT
#                                only (what scripts/test.sh runs)
#
# Both also run our own cases for our DUT (scripts/lib/avatar_ble_test.py: L2CAP channels both
# ways, bad calls that must end with gRPC errors).
#
# Steps: .venv-avatar/ with pandora-avatar, bt-test-interfaces, bumble 0.0.233 (the last with
# bumble.pandora, which Avatar imports) and rootcanal 1.10.0, apart from the interop tests'
# .venv; `swift build --product ble` unless BLE_AVATAR_BLE names a built ble; rootcanal on
# free loopback ports; `ble pandora` on a free port; avatar; everything started is stopped by
# PID on exit. Logs: .build-tools/avatar/. Exit status: 0 when every case the reference
# passes passed with our DUT, or is listed with its reason in scripts/lib/avatar-exceptions.txt
# (--slice: every case of the slice passed).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
LIB="$ROOT/scripts/lib"
VENV="$ROOT/.venv-avatar"
TOOLS="$ROOT/.build-tools"
OUT="$TOOLS/avatar"
AVATAR_PINS=(pandora-avatar==0.0.11 bt-test-interfaces==0.0.6 bumble==0.0.233 rootcanal==1.10.0)

# The LeSecurityTest slice: every variant (accept, reject, rejected, disconnect, disconnected),
# every IO capability of the REF, both connection and both pairing directions, both REF address
# types, and the association models they give with our keyboard-display DUT (numeric comparison,
# passkey entry both ways, Just Works). The lk key distribution needs BR/EDR (see
# avatar-exceptions.txt), so the slice keeps to ltk_irk_csrk.
SLICE=(
    "LeSecurityTest.test_le_pairing('outgoing_connection','outgoing_pairing','against_random','accept','against_display_yes_no','ltk_irk_csrk')"
    "LeSecurityTest.test_le_pairing('outgoing_connection','incoming_pairing','against_public','accept','against_keyboard_only','ltk_irk_csrk')"
    "LeSecurityTest.test_le_pairing('incoming_connection','outgoing_pairing','against_public','accept','against_display_only','ltk_irk_csrk')"
    "LeSecurityTest.test_le_pairing('incoming_connection','incoming_pairing','against_random','accept','against_no_output_no_input','ltk_irk_csrk')"
    "LeSecurityTest.test_le_pairing('outgoing_connection','outgoing_pairing','against_public','accept','against_both_display_and_keyboard','ltk_irk_csrk')"
    "LeSecurityTest.test_le_pairing('outgoing_connection','incoming_pairing','against_random','reject','against_display_yes_no','ltk_irk_csrk')"
    "LeSecurityTest.test_le_pairing('incoming_connection','outgoing_pairing','against_random','reject','against_no_output_no_input','ltk_irk_csrk')"
    "LeSecurityTest.test_le_pairing('incoming_connection','incoming_pairing','against_public','rejected','against_keyboard_only','ltk_irk_csrk')"
    "LeSecurityTest.test_le_pairing('outgoing_connection','outgoing_pairing','against_random','rejected','against_display_only','ltk_irk_csrk')"
    "LeSecurityTest.test_le_pairing('outgoing_connection','incoming_pairing','against_public','disconnect','against_both_display_and_keyboard','ltk_irk_csrk')"
    "LeSecurityTest.test_le_pairing('incoming_connection','outgoing_pairing','against_random','disconnect','against_keyboard_only','ltk_irk_csrk')"
    "LeSecurityTest.test_le_pairing('incoming_connection','incoming_pairing','against_random','disconnected','against_display_yes_no','ltk_irk_csrk')"
    "LeSecurityTest.test_le_pairing('outgoing_connection','outgoing_pairing','against_public','disconnected','against_no_output_no_input','ltk_irk_csrk')"
)

slice=0
case "${1:-}" in
    --slice) slice=1 ;;
    "") ;;
    *) echo "usage: scripts/avatar.sh [--slice]" >&2; exit 64 ;;
esac

log() { printf '[avatar.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Long steps run as background jobs that the script waits for: bash runs the TERM trap only
# between commands, and `wait` is the one a signal interrupts, so a stopped avatar.sh stops what
# it started at once.
PIDS=()
run_waiting() { # run_waiting COMMAND...: runs it as a tracked background job; its exit status
    "$@" &
    PIDS+=($!)
    local status=0
    wait "${PIDS[-1]}" || status=$?
    unset 'PIDS[-1]'  # ended: its PID may be anyone's from now on
    return $status
}
stop_pid() { # SIGTERM, then SIGKILL after 3 s; only PIDs this script started
    local pid="$1" i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() { # TERM to everything still running at once, newest first, then wait for each
    local i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${PIDS[i]}" 2>/dev/null || true; done
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[i]}"; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. Avatar's own environment.
want="${AVATAR_PINS[*]}"
if [[ ! -x "$VENV/bin/avatar" || "$(cat "$VENV/.pins" 2>/dev/null)" != "$want" ]]; then
    log "creating $VENV: ${AVATAR_PINS[*]}"
    rm -rf "$VENV"
    "${BLE_TEST_PYTHON_HOST:-/usr/bin/python3}" -m venv "$VENV"
    run_waiting "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${AVATAR_PINS[@]}"
    echo "$want" > "$VENV/.pins"
fi

# 2. ble.
BLE="${BLE_AVATAR_BLE:-}"
if [[ -z "$BLE" ]]; then
    log "swift build --product ble"
    run_waiting swift build --product ble >&2
    BLE="$ROOT/.build/debug/ble"
fi
[[ -x "$BLE" ]] || die "$BLE is not an executable"

# 3. rootcanal (with the TCP_NODELAY shim of scripts/test.sh when it is built).
mkdir -p "$OUT"
rm -rf "$OUT/logs"
RC_BIN="$("$VENV/bin/python" -c 'import rootcanal.binaries as b; print(b.get_package_binary_resource_path("rootcanal"))')"
SHIM="$TOOLS/rootcanal-nodelay.so"
if [[ ! -f "$SHIM" || "$ROOT/scripts/rootcanal-nodelay.c" -nt "$SHIM" ]] && command -v gcc >/dev/null; then
    gcc -shared -fPIC -O2 -Wall -o "$SHIM.tmp" "$ROOT/scripts/rootcanal-nodelay.c" -ldl && mv "$SHIM.tmp" "$SHIM" \
        || log "could not build the TCP_NODELAY shim; rootcanal runs without it"
fi
preload=()
[[ -f "$SHIM" ]] && preload=("LD_PRELOAD=$SHIM")
mapfile -t ports < <("$VENV/bin/python" "$LIB/netutil.py" free-ports 5)
env "${preload[@]}" "$RC_BIN" -test_port "${ports[0]}" -hci_port "${ports[1]}" \
    -link_port "${ports[2]}" -link_ble_port "${ports[3]}" > "$OUT/rootcanal.log" 2>&1 &
PIDS+=($!)
"$VENV/bin/python" "$LIB/netutil.py" wait-listen "${PIDS[-1]}" "${ports[1]}" 10 || die "rootcanal did not start (see $OUT/rootcanal.log)"
HCI="tcp:127.0.0.1:${ports[1]}"
GRPC_PORT="${ports[4]}"
log "rootcanal pid ${PIDS[-1]} on $HCI"

# 4. Our DUT.
"$BLE" pandora --hci "$HCI" --port "$GRPC_PORT" --python "$VENV/bin/python" > "$OUT/ble-pandora.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do
    grep -q "serving Pandora" "$OUT/ble-pandora.log" 2>/dev/null && break
    kill -0 "${PIDS[-1]}" 2>/dev/null || { cat "$OUT/ble-pandora.log" >&2; die "ble pandora exited"; }
    sleep 0.1
done
grep -q "serving Pandora" "$OUT/ble-pandora.log" || die "ble pandora did not start (see $OUT/ble-pandora.log)"
log "ble pandora pid ${PIDS[-1]} on 127.0.0.1:$GRPC_PORT"

cat > "$OUT/config.yml" <<EOF
TestBeds:
- Name: ble
  Controllers:
    PandoraDevice:
    - grpc_target: '127.0.0.1:$GRPC_PORT'
    BumbleDevice:
    - transport: 'tcp-client:127.0.0.1:${ports[1]}'
- Name: bumble
  Controllers:
    BumbleDevice:
    - transport: 'tcp-client:127.0.0.1:${ports[1]}'
    - transport: 'tcp-client:127.0.0.1:${ports[1]}'
MoblyParams:
  LogPath: '$OUT/logs'
EOF

# run_avatar BED [FILE] -- TESTS...: runs avatar on a test bed (an hour at most), with Avatar's own
# cases and those of FILE; sets SUMMARY to its mobly summary file.
run_avatar() {
    local bed="$1" start=$SECONDS status=0 files=()
    shift
    while [[ "$1" != "--" ]]; do files+=("$1"); shift; done
    shift
    log "avatar on test bed '$bed' ($# selection(s))"
    (cd "$OUT" && exec timeout 3600 "$VENV/bin/avatar" -c "$OUT/config.yml" -b "$bed" -t "$@" -o "$OUT/logs" "${files[@]}") \
        > "$OUT/avatar-$bed.log" 2>&1 &
    PIDS+=($!)
    wait "${PIDS[-1]}" || status=$?
    unset 'PIDS[-1]'
    log "avatar on '$bed': $((SECONDS - start)) s (status $status; log: ${OUT#"$ROOT"/}/avatar-$bed.log)"
    SUMMARY="$(ls -t "$OUT"/logs/"$bed"/*/test_summary.yaml 2>/dev/null | head -n1 || true)"
    [[ -n "$SUMMARY" ]] || die "avatar wrote no summary for '$bed' (see $OUT/avatar-$bed.log)"
}

# The LeHostTest cases, for the summary to tell a case that never ran from one that passed.
EXPECTED="$OUT/expected.txt"
"$VENV/bin/avatar" -c "$OUT/config.yml" -l -t LeHostTest 2>/dev/null | sed -n 's/^\(LeHostTest\.test_[^ ]*\).*/\1/p' > "$EXPECTED" || true
[[ "$(grep -c '^LeHostTest\.' "$EXPECTED" || true)" -gt 0 ]] || die "avatar -l listed no LeHostTest case"

OURS=(LeL2capTest PandoraBadInputTest)
printf '%s\n' "LeL2capTest.test_dut_opens_a_channel_to_the_reference" "LeL2capTest.test_reference_opens_a_channel_to_the_dut" \
    "PandoraBadInputTest.test_bad_calls_get_errors_and_the_server_keeps_serving" >> "$EXPECTED"
if ((slice)); then
    printf '%s\n' "${SLICE[@]}" >> "$EXPECTED"
    run_avatar ble "$LIB/avatar_ble_test.py" -- LeHostTest "${SLICE[@]}" "${OURS[@]}"
    "$VENV/bin/python" "$LIB/avatar_summary.py" --expected "$EXPECTED" "$LIB/avatar-exceptions.txt" "$SUMMARY"
else
    run_avatar ble "$LIB/avatar_ble_test.py" -- LeHostTest LeSecurityTest "${OURS[@]}"
    ours="$SUMMARY"
    run_avatar bumble -- LeHostTest LeSecurityTest
    "$VENV/bin/python" "$LIB/avatar_summary.py" --expected "$EXPECTED" "$LIB/avatar-exceptions.txt" "$ours" "$SUMMARY"
fi

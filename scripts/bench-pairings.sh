#!/usr/bin/env bash
# `ble bench` and bumble-bench (Bumble's apps/bench.py) in all four pairings, central ↔
# peripheral: Swift↔Swift, Swift↔Bumble, Bumble↔Swift, Bumble↔Bumble, over rootcanal and over
# `ble radio` (the stack's virtual radio served over TCP), with the same command line for both
# tools. Prints one table: GATT and L2CAP throughput (the receiver's average, kB/s) and ping
# round trips (the sender's average RTT, ms).
#
#   scripts/bench-pairings.sh                  release build of ble, default packet counts
#   scripts/bench-pairings.sh --debug          the debug build (faster to make, slower to run)
#   scripts/bench-pairings.sh --count 200      packets per throughput run (default 500)
#   scripts/bench-pairings.sh --pings 20       packets per ping run (default 50)
#   scripts/bench-pairings.sh --medium radio   only one medium (rootcanal or radio)
#   scripts/bench-pairings.sh --ble PATH       this ble executable, not built here
#
# Needs .venv with bumble 0.0.236 and rootcanal 1.10.0 (scripts/test.sh makes it). Every process
# it starts runs on free loopback ports and is stopped by PID. bumble-bench 0.0.236 dies after
# queueing its packets in GATT mode (a missing `can_receive`), losing the end of its run: the
# Bumble side runs through scripts/lib/bumble_bench.py, bumble-bench with that one method added.
# Throughput is the receiver's figure, round trips the sender's. Logs of every run go to
# .build-tools/logs/bench-pairings-PID/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
# bumble-bench itself, with its GATT sender fixed (scripts/lib/bumble_bench.py says how and why).
BUMBLE_BENCH="$PY $ROOT/scripts/lib/bumble_bench.py"
LIB="$ROOT/scripts/lib"
SHIM="$ROOT/.build-tools/rootcanal-nodelay.so"
CONFIG=release
BLE=""
COUNT=500
PINGS=50
MEDIA="rootcanal radio"
GATT_SIZE=244   # one notification or write at ATT_MTU 247, what rootcanal links negotiate
L2CAP_SIZE=1000 # within the channel's 1024-byte MTU
INTERVAL=15     # ms, asked for by every central (bumble-bench takes whole milliseconds)

while (($#)); do
    case "$1" in
        --debug) CONFIG=debug ;;
        --release) CONFIG=release ;;
        --count) COUNT="$2"; shift ;;
        --pings) PINGS="$2"; shift ;;
        --medium) MEDIA="$2"; shift ;;
        --ble) BLE="$2"; shift ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "bench-pairings: unknown argument $1" >&2; exit 64 ;;
    esac
    shift
done

log() { printf '[bench-pairings] %s\n' "$*" >&2; }
[[ -x "$PY" && -x "$VENV/bin/bumble-bench" ]] || { log "no .venv with bumble-bench: run scripts/test.sh once"; exit 1; }

if [[ -z "${BLE:-}" ]]; then
    log "swift build -c $CONFIG --product ble"
    swift build -c "$CONFIG" --product ble 2>&1 | grep -E "error|warning:" >&2 || true
    BLE="$ROOT/.build/$CONFIG/ble"
fi
[[ -x "$BLE" ]] || { log "no $BLE"; exit 1; }

LOGS="$ROOT/.build-tools/logs/bench-pairings-$$"
mkdir -p "$LOGS"
PIDS=()
stop_pid() {
    local pid="$1" i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() { local p; for p in "${PIDS[@]}"; do stop_pid "$p"; done; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# ----------------------------------------------------------------------------- media
start_rootcanal() { # sets MEDIUM_PID, SWIFT_HCI, BUMBLE_TRANSPORT
    local binary ports
    binary="$("$PY" -c 'import rootcanal.binaries as b; print(b.get_package_binary_resource_path("rootcanal"))' 2>/dev/null || true)"
    [[ -x "$binary" ]] || binary="$(find "$VENV" -path '*rootcanal/bin/linux-x86_64/rootcanal' -type f | head -n1)"
    mapfile -t ports < <("$PY" "$LIB/netutil.py" free-ports 4)
    if [[ -f "$SHIM" ]]; then
        LD_PRELOAD="$SHIM" "$binary" -test_port "${ports[0]}" -hci_port "${ports[1]}" -link_port "${ports[2]}" \
            -link_ble_port "${ports[3]}" >"$LOGS/rootcanal.log" 2>&1 &
    else
        "$binary" -test_port "${ports[0]}" -hci_port "${ports[1]}" -link_port "${ports[2]}" \
            -link_ble_port "${ports[3]}" >"$LOGS/rootcanal.log" 2>&1 &
    fi
    MEDIUM_PID=$!
    PIDS+=("$MEDIUM_PID")
    "$PY" "$LIB/netutil.py" wait-listen "$MEDIUM_PID" "${ports[1]}" 10 || { log "rootcanal did not listen"; exit 1; }
    SWIFT_HCI="tcp:127.0.0.1:${ports[1]}"
    BUMBLE_TRANSPORT="tcp-client:127.0.0.1:${ports[1]}"
}

start_radio() { # sets MEDIUM_PID, SWIFT_HCI, BUMBLE_TRANSPORT
    local port="" i
    "$BLE" radio --listen tcp:127.0.0.1:0 --json >"$LOGS/radio.log" 2>&1 &
    MEDIUM_PID=$!
    PIDS+=("$MEDIUM_PID")
    for i in $(seq 100); do
        port="$(sed -n 's/.*"event":"listening".*"port":\([0-9]*\).*/\1/p; s/.*"port":\([0-9]*\).*"event":"listening".*/\1/p' "$LOGS/radio.log" | head -n1)"
        [[ -n "$port" ]] && break
        sleep 0.1
    done
    [[ -n "$port" ]] || { log "ble radio printed no port"; cat "$LOGS/radio.log" >&2; exit 1; }
    SWIFT_HCI="tcp:127.0.0.1:$port"
    BUMBLE_TRANSPORT="tcp-client:127.0.0.1:$port"
}

# ----------------------------------------------------------------------------- one run
# bench TOOL ROLE LOGFILE OPTIONS...: the same options for both tools; only how the controller
# is named differs (--hci SPEC after the role for ble, TRANSPORT after the role for Bumble).
bench_command() {
    local tool="$1" role="$2"; shift 2
    local before=() after=()
    # bumble-bench takes --peripheral/--connection-interval/--phy after the role, everything else before.
    while (($#)); do
        case "$1" in
            --connection-interval|--ci|--phy|--peripheral) after+=("$1" "$2"); shift ;;
            *) before+=("$1") ;;
        esac
        shift
    done
    if [[ "$tool" == swift ]]; then
        echo "$BLE" bench "${before[@]}" "$role" --hci "$SWIFT_HCI" "${after[@]}"
    else
        echo "$BUMBLE_BENCH" "${before[@]}" "$role" "$BUMBLE_TRANSPORT" "${after[@]}"
    fi
}

# run_pair CENTRAL_TOOL PERIPHERAL_TOOL NAME CENTRAL_OPTIONS -- PERIPHERAL_OPTIONS
run_pair() {
    local ctool="$1" ptool="$2" name="$3"; shift 3
    local copts=() popts=()
    while (($#)) && [[ "$1" != -- ]]; do copts+=("$1"); shift; done
    shift
    popts=("$@")
    local plog="$LOGS/$name.peripheral.log" clog="$LOGS/$name.central.log" pid i
    # shellcheck disable=SC2046
    timeout 120 $(bench_command "$ptool" peripheral "${popts[@]}") >"$plog" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    for i in $(seq 300); do
        grep -q "Waiting for connection" "$plog" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    # shellcheck disable=SC2046
    timeout 120 $(bench_command "$ctool" central "${copts[@]}" --connection-interval "$INTERVAL") >"$clog" 2>&1 || true
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    stop_pid "$pid"
}

strip() { sed 's/\x1b\[[0-9;]*m//g' "$1"; }
# The receiver's last average speed, in kB/s.
throughput() { strip "$1" | sed -n 's/.*Speed: instant=.*average=\([0-9.]*\).*/\1/p' | tail -n1 | awk '{ if ($1 != "") printf "%.1f", $1 / 1000; }'; }
# The sender's average RTT, in ms.
rtt() { strip "$1" | sed -n 's/.*@@@ RTTs: min=.*average=\([0-9.]*\),.*/\1/p' | tail -n1; }

or_dash() { [[ -n "$1" ]] && echo "$1" || echo "—"; }

ROWS=()
for medium in $MEDIA; do
    case "$medium" in
        rootcanal) start_rootcanal ;;
        radio) start_radio ;;
        *) log "unknown medium $medium"; exit 64 ;;
    esac
    log "$medium: Swift at $SWIFT_HCI, Bumble at $BUMBLE_TRANSPORT"
    for pairing in swift:swift swift:bumble bumble:swift bumble:bumble; do
        c="${pairing%%:*}" p="${pairing##*:}"
        tag="$medium.$c-$p"
        log "$tag: gatt send"
        run_pair "$c" "$p" "$tag.gatt-send" --packet-size "$GATT_SIZE" --packet-count "$COUNT" --
        log "$tag: l2cap send"
        run_pair "$c" "$p" "$tag.l2cap-send" --mode l2cap-client --packet-size "$L2CAP_SIZE" --packet-count "$COUNT" -- --mode l2cap-server
        log "$tag: gatt ping"
        run_pair "$c" "$p" "$tag.gatt-ping" --scenario ping --packet-size "$GATT_SIZE" --packet-count "$PINGS" -- --scenario pong
        log "$tag: l2cap ping"
        run_pair "$c" "$p" "$tag.l2cap-ping" --mode l2cap-client --scenario ping --packet-size "$GATT_SIZE" --packet-count "$PINGS" \
            -- --mode l2cap-server --scenario pong
        name() { [[ "$1" == swift ]] && echo Swift || echo Bumble; }
        ROWS+=("| $medium | $(name "$c") ↔ $(name "$p") | $(or_dash "$(throughput "$LOGS/$tag.gatt-send.peripheral.log")") \
| $(or_dash "$(throughput "$LOGS/$tag.l2cap-send.peripheral.log")") | $(or_dash "$(rtt "$LOGS/$tag.gatt-ping.central.log")") \
| $(or_dash "$(rtt "$LOGS/$tag.l2cap-ping.central.log")") |")
    done
    stop_pid "$MEDIUM_PID"
done

echo
echo "central ↔ peripheral; throughput: $COUNT packets (GATT $GATT_SIZE bytes, L2CAP $L2CAP_SIZE), the receiver's average;"
echo "round trips: $PINGS pings of $GATT_SIZE bytes, the sender's average; ${INTERVAL} ms connection interval asked for; $BLE"
echo
echo "| medium | central ↔ peripheral | GATT send kB/s | L2CAP send kB/s | GATT ping RTT ms | L2CAP ping RTT ms |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
printf '%s\n' "${ROWS[@]}"
echo
echo "logs: ${LOGS#"$ROOT"/}"

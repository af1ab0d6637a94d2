#!/usr/bin/env bash
# The benchmarks (docs/PERFORMANCE.md), from a release build:
#   1. notification throughput Swift → Swift on the virtual radio with the air-time model, in
#      virtual time, against the theoretical figure for the same PHY, interval and data length;
#   2. the raw host cost without the air-time model: notifications per CPU-second, the hosts in a
#      one-thread virtual-time world (as the tests run them) and, with `--real-time`, on Swift's
#      default executors in real time (as an application runs them);
#   3. instructions per notification under valgrind's callgrind: two runs of different lengths,
#      the difference divided by the difference in notifications (start-up cost cancels out),
#      with 251- and with 27-byte LE ACL buffers (`--acl-buffer`): one pair in the virtual-time
#      world (the count is the same every run), and the median of three pairs on the default
#      executors (their count varies with how the threads interleave, and leaves out the kernel).
#   4. advertising reports from 10,000 devices through the whole host to a `Central.scan`
#      consumer: reports per CPU-second, and instructions per report the same way as 3;
#   5. the S1 framed-stream decoder: bytes per CPU-second and the time ratio for 10× the data.
# With --compare, in the same invocation, Bumble 0.0.236 (.venv) does the equivalent of 2, 3 and 4
# (scripts/lib/bumble_notify_cost.py, bumble_scan_cost.py, on the same event bytes), both clients
# count their round trips to a first notification against one `ble serve heart-rate`
# (scripts/lib/round_trips.py), and a table `figure | Bumble | this stack | ratio | goal` ends the
# output; the S1 decoder has no Bumble counterpart and is listed without a ratio.
# Usage: scripts/bench.sh [--no-callgrind] [--compare]
set -euo pipefail
cd "$(dirname "$0")/.."

callgrind=1
compare=0
for argument in "$@"; do
    case "$argument" in
        --no-callgrind) callgrind=0 ;;
        --compare) compare=1 ;;
        *) echo "usage: scripts/bench.sh [--no-callgrind] [--compare]" >&2; exit 2 ;;
    esac
done

swift build -c release --product ble-bench >/dev/null
bench=.build/release/ble-bench
if [[ $compare == 1 ]]; then
    # The round trips (`ble radio`, `ble serve`, `ble subscribe`) are counts, the same from any
    # build: the debug one, which `swift build` and the tests make anyway.
    swift build --product ble >/dev/null
    if ! .venv/bin/python -c 'import bumble' 2>/dev/null; then
        echo "setting up .venv with Bumble (scripts/test.sh's set-up steps, no tests)" >&2
        BLE_TEST_COMMAND=true scripts/test.sh >&2
    fi
    python=.venv/bin/python
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi

# Instructions per notification, keyed "251", "27" (the virtual-time world) and "251 rt", "27 rt"
# (the default executors: the median of three pairs; "… range" holds min–max).
declare -A per_notification bumble_per_notification

# The number in the line of "$1" (output) that matches the sed expression "$2".
figure() { sed -n "$2" <<<"$1" | tail -1; }

"$bench" air
echo
raw251=$("$bench" raw); echo "$raw251"
raw27=$("$bench" raw --acl-buffer 27); echo "$raw27"
rawrt251=$("$bench" raw --real-time); echo "$rawrt251"
rawrt27=$("$bench" raw --real-time --acl-buffer 27); echo "$rawrt27"
echo
scan=$("$bench" scan); echo "$scan"
echo
framing=$("$bench" framing); echo "$framing"

if [[ $callgrind == 1 ]]; then
    if ! command -v valgrind >/dev/null 2>&1; then
        echo "installing valgrind (Debian package) for the instruction count" >&2
        if [[ $(id -u) == 0 ]]; then apt-get install -y -q valgrind >/dev/null; else sudo apt-get install -y -q valgrind >/dev/null; fi
    fi
    # Total instructions of one run of the command "$@" under callgrind.
    collected() {
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null \
            | sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | tail -1
    }
    small=1000
    large=3000
    for buffer in 251 27; do
        a=$(collected "$bench" raw --count $small --acl-buffer $buffer)
        b=$(collected "$bench" raw --count $large --acl-buffer $buffer)
        per_notification[$buffer]=$(( (b - a) / (large - small) ))
        echo
        echo "callgrind, $buffer-byte ACL buffers, virtual-time world: $small notifications: $a instructions; $large notifications: $b instructions"
        echo "  ${per_notification[$buffer]} instructions per notification (both hosts and the radio, Swift → Swift)"
    done
    for buffer in 251 27; do
        runs=()
        for _ in 1 2 3; do
            a=$(collected "$bench" raw --real-time --count $small --acl-buffer $buffer)
            b=$(collected "$bench" raw --real-time --count $large --acl-buffer $buffer)
            runs+=($(( (b - a) / (large - small) )))
        done
        read -r low mid high <<<"$(printf '%s\n' "${runs[@]}" | sort -n | tr '\n' ' ')"
        per_notification["$buffer rt"]=$mid
        per_notification["$buffer rt range"]="$low–$high"
        echo
        echo "callgrind, $buffer-byte ACL buffers, Swift's default executors (real time), three pairs of $small and $large notifications: ${runs[*]}"
        echo "  $mid instructions per notification, the median (user-space only: the kernel's thread wake-ups are not counted)"
    done

    # Instructions and reports of one `ble-bench scan --count N` run (the run ends at the first batch
    # past N, so the reports it printed are what is divided by).
    scan_instructions() {
        local out
        out=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" scan --count "$1" 2>&1)
        echo "$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' <<<"$out" | tail -1) $(sed -n 's/^scan: \([0-9]*\) advertising reports.*/\1/p' <<<"$out")"
    }
    read -r c nc <<<"$(scan_instructions 50000)"
    read -r d nd <<<"$(scan_instructions 150000)"
    per_report=$(( (d - c) / (nd - nc) ))
    echo
    echo "callgrind: $nc reports: $c instructions; $nd reports: $d instructions"
    echo "  $per_report instructions per advertising report (HCI event bytes → Central.scan consumer)"
fi

[[ $compare == 1 ]] || exit 0

# ----------------------------------------------------------------------------- Bumble, side by side
echo
echo "Bumble $("$python" -c 'import bumble; print(bumble.__version__)'), the same figures (scripts/lib/bumble_*.py, round_trips.py)"
echo
bumble251=$("$python" scripts/lib/bumble_notify_cost.py --count 10000 --acl-buffer 251); echo "$bumble251"
bumble27=$("$python" scripts/lib/bumble_notify_cost.py --count 2000 --acl-buffer 27); echo "$bumble27"
echo
"$bench" scan-events --out "$work/scan-events" >/dev/null
bumblescan=$("$python" scripts/lib/bumble_scan_cost.py --events "$work/scan-events" --count 60000); echo "$bumblescan"
echo
trips=$("$python" scripts/lib/round_trips.py --ble .build/debug/ble); echo "$trips"

if [[ $callgrind == 1 ]]; then
    # CPython under callgrind runs about 50 times slower than natively, and its start-up (importing
    # Bumble) is over a billion instructions: shorter runs than ours, the same difference method.
    # A fixed hash seed keeps dict and set layouts, and so the counts, the same from run to run.
    export PYTHONHASHSEED=0
    for buffer in 251 27; do
        if [[ $buffer == 251 ]]; then small=200 large=600; else small=100 large=300; fi
        a=$(collected "$python" scripts/lib/bumble_notify_cost.py --count $small --acl-buffer $buffer)
        b=$(collected "$python" scripts/lib/bumble_notify_cost.py --count $large --acl-buffer $buffer)
        bumble_per_notification[$buffer]=$(( (b - a) / (large - small) ))
        echo
        echo "callgrind, Bumble, $buffer-byte ACL buffers: $small notifications: $a instructions; $large notifications: $b instructions"
        echo "  ${bumble_per_notification[$buffer]} instructions per notification (both Bumble hosts and controllers, Python)"
    done
    small=1000 large=3000
    a=$(collected "$python" scripts/lib/bumble_scan_cost.py --events "$work/scan-events" --count $small)
    b=$(collected "$python" scripts/lib/bumble_scan_cost.py --events "$work/scan-events" --count $large)
    bumble_per_report=$(( (b - a) / (large - small) ))
    echo
    echo "callgrind, Bumble: $small reports: $a instructions; $large reports: $b instructions (the first round: every device new)"
    echo "  $bumble_per_report instructions per advertising report (HCI event bytes → Bumble Device → consumer)"
fi

# ----------------------------------------------------------------------------- the table
rate='s/.* CPU: \([0-9]*\) notifications per CPU-second/\1/p'
reports='s/.* CPU: \([0-9]*\) reports per CPU-second/\1/p'
trip() { figure "$trips" "s/^round trips: $1 $2 \([0-9]*\) .*/\1/p"; }
# Our advantage: Bumble's cost ÷ ours (lower is better), or our rate ÷ Bumble's (higher is better).
fewer() { awk -v b="$1" -v o="$2" 'BEGIN { if (b == "" || o == "") print "—"; else if (o == 0) print "none needed"; else printf "%.1f× fewer\n", b / o }'; }
more() { awk -v b="$1" -v o="$2" 'BEGIN { if (b == "" || o == "" || b == 0) print "—"; else printf "%.1f× more\n", o / b }'; }
number() { if [[ -n "$1" ]]; then sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; else echo "not measured (--no-callgrind)"; fi; }
row() { echo "| $1 | $2 | $3 | $4 | $5 |"; }

echo
echo "Side by side (this run; ratio = how many times better this stack is, > 1 is better):"
echo
row figure Bumble "this stack" ratio goal
row --- --- --- --- ---
row "instructions per notification, 251-byte ACL buffers (callgrind, both hosts + controllers; ours in the one-thread virtual-time world)" \
    "$(number "${bumble_per_notification[251]:-}")" "$(number "${per_notification[251]:-}")" \
    "$(fewer "${bumble_per_notification[251]:-}" "${per_notification[251]:-}")" "≤ 18,000 (50× fewer than Bumble)"
row "instructions per notification, 27-byte ACL buffers" \
    "$(number "${bumble_per_notification[27]:-}")" "$(number "${per_notification[27]:-}")" \
    "$(fewer "${bumble_per_notification[27]:-}" "${per_notification[27]:-}")" "≤ 96,000"
row "the same, 251-byte buffers, ours on Swift's default executors in real time (\`raw --real-time\`; median of 3, range ${per_notification[251 rt range]:-—}; user-space only)" \
    "$(number "${bumble_per_notification[251]:-}")" "$(number "${per_notification[251 rt]:-}")" \
    "$(fewer "${bumble_per_notification[251]:-}" "${per_notification[251 rt]:-}")" "—"
row "the same, 27-byte buffers, default executors (range ${per_notification[27 rt range]:-—})" \
    "$(number "${bumble_per_notification[27]:-}")" "$(number "${per_notification[27 rt]:-}")" \
    "$(fewer "${bumble_per_notification[27]:-}" "${per_notification[27 rt]:-}")" "—"
b=$(figure "$bumble251" "$rate") o=$(figure "$raw251" "$rate")
row "notifications per CPU-second, in process, 251-byte ACL buffers" "$(number "$b")" "$(number "$o")" "$(more "$b" "$o")" "≥ 150,000"
b=$(figure "$bumble27" "$rate") o=$(figure "$raw27" "$rate")
row "notifications per CPU-second, in process, 27-byte ACL buffers" "$(number "$b")" "$(number "$o")" "$(more "$b" "$o")" "—"
b=$(figure "$bumble251" "$rate") o=$(figure "$rawrt251" "$rate")
row "notifications per CPU-second, 251-byte ACL buffers, default executors (user and system time)" "$(number "$b")" "$(number "$o")" "$(more "$b" "$o")" "—"
b=$(figure "$bumble27" "$rate") o=$(figure "$rawrt27" "$rate")
row "notifications per CPU-second, 27-byte ACL buffers, default executors" "$(number "$b")" "$(number "$o")" "$(more "$b" "$o")" "—"
b=$(figure "$bumblescan" "$reports") o=$(figure "$scan" "$reports")
row "advertising reports per CPU-second (HCI event → AD decode → device list with ageing → consumer)" \
    "$(number "$b")" "$(number "$o")" "$(more "$b" "$o")" "≥ 1,000,000"
row "instructions per advertising report (callgrind)" "$(number "${bumble_per_report:-}")" "$(number "${per_report:-}")" \
    "$(fewer "${bumble_per_report:-}" "${per_report:-}")" "≤ 3,000"
declare -A goals=([cold]="≤ 5" [reconnect]="≤ 2" [bonded]="0")
declare -A what=([cold]="cold" [reconnect]="reconnect, Database Hash unchanged" [bonded]="bonded server that kept the CCCD")
for scenario in cold reconnect bonded; do
    full=$(trip "bumble full" $scenario) targeted=$(trip "bumble targeted" $scenario) ours=$(trip "this stack" $scenario)
    row "ATT requests other than Exchange MTU, connection → first 2A37 notification, ${what[$scenario]}" \
        "$full full, $targeted targeted" "$ours" "$(fewer "$targeted" "$ours" | sed 's/fewer$/fewer than targeted/')" "${goals[$scenario]}"
done
row "S1 framed-stream decoder, bytes per CPU-second (9 MB I frames, 90 MB)" "no Bumble equivalent" \
    "$(number "$(figure "$framing" 's/^9 MB I frames *90000000 .* \([0-9]*\)$/\1/p')")" "—" "—"
row "S1 framed-stream decoder, time for 10× the data" "no Bumble equivalent" \
    "$(sed -n 's/^ *10× the data in \([0-9.]*×\) the time.*/\1/p' <<<"$framing" | head -1)" "—" "≤ 11× (linear)"

#!/usr/bin/env bash
# The one test command of this repository: sets up what the interop tests need, starts Android's
# rootcanal virtual controller on free loopback ports, runs `swift test`, and stops rootcanal.
#
#   scripts/test.sh                         everything
#   scripts/test.sh --filter PeerSelfTests  extra arguments go to `swift test`
#
# Steps (each is skipped when already done, so a second run is fast):
#   1. Debian packages: socat tshark libssl-dev gcc libc6-dev pkg-config chromium (the `ble ui`
#      browser tests) mosquitto mosquitto-clients libmosquitto-dev (`ble gateway`: libmosquitto,
#      and a real broker for its tests) (+ python3-venv if the
#      Debian python3 lacks ensurepip), installed with apt-get as root or through sudo.
#   2. .venv/ with bumble and rootcanal from PyPI (versions below).
#   3. .build-tools/rootcanal-nodelay.so from scripts/rootcanal-nodelay.c, an LD_PRELOAD shim that
#      puts TCP_NODELAY on rootcanal's sockets (without it every HCI round trip takes ~45 ms).
#   4. `swift build --build-tests`; then, on a full run, `swift build -c release` (every product
#      of the package in release: a release-only compiler crash cannot land unseen),
#      scripts/check-doc-comments.sh (every
#      public declaration of the API has a doc comment, also of the CoreBluetooth module),
#      scripts/check-doc-links.sh (every link between the Markdown pages resolves),
#      scripts/check-api-users.sh (BLESystems and ble import nothing below BLE) and scripts/check-ble-product.sh (a
#      package that depends only on the BLE product builds without the virtual radio).
#   5. rootcanal on four free loopback ports, log in .build-tools/logs/, stopped on every exit.
#   6. `swift test "$@"` with BLE_TEST_ROOTCANAL, BLE_TEST_PYTHON, BLE_TEST_PEERS exported;
#      rootcanal's log tail is printed when it fails. BLE_TEST_BUMBLE_CONTROLLERS=spawn is
#      exported too: Google Bumble's own Python LE controller is the third controller the host
#      is tested on (Tests/BLEInteropTests/BumbleControllerInteropTests.swift, besides rootcanal
#      and the in-process virtual radio). Each of those tests starts its own
#      `python -m bumble.apps.controllers tcp-server:127.0.0.1:P1 tcp-server:127.0.0.1:P2` (two
#      controllers on one bumble.link.LocalLink, free ports picked as for rootcanal) and stops
#      it by PID in its teardown (Tests/BLEInteropTests/Support/BumbleControllers.swift), rather
#      than this script starting one for the whole run: a Bumble controller keeps all state from
#      one host to the next (its HCI_Reset does nothing; a host that goes away leaves its
#      connections, scanning and advertising behind), and a tcp-server transport feeds every
#      client into one packet parser.
#      BLE_TEST_MOSQUITTO=/usr/sbin/mosquitto (command -v mosquitto; /usr/sbin is not on every
#      user's PATH) is exported too: each MQTT test starts its own Eclipse Mosquitto on a free
#      loopback port, with its config, certificates and database in a temporary directory, and
#      stops it by PID (Tests/BLEInteropTests/Support/MosquittoBroker.swift).
#   7. On a full run, scripts/avatar.sh --slice: Google's Avatar suite (LeHostTest and a fixed
#      slice of LeSecurityTest) driving `ble pandora`, in .venv-avatar/ (pandora-avatar,
#      bt-test-interfaces, bumble 0.0.233, rootcanal 1.10.0 from PyPI) on a rootcanal of its own.
#      Exit status: swift test's, else the slice's.
#
# Environment knobs:
#   BLE_TEST_COMMAND='...'   run this shell command instead of steps 4 and 6 (dry runs of the
#                            setup/teardown, or another test runner); it sees the exported
#                            variables and gets the script's arguments as "$@".
#   BLE_TEST_NODELAY=0       start rootcanal without the TCP_NODELAY shim.
#   BLE_TEST_MEASURE=1       also time HCI_Reset round trips without and with the shim.
#   BLE_TEST_SKIP_PACKAGES=1 do not check/install Debian packages.
#   BLE_TEST_PRODUCT_CHECK=0 skip scripts/check-ble-product.sh on a full run.
#   BLE_TEST_DOC_CHECK=0     skip scripts/check-doc-comments.sh, check-doc-links.sh and check-api-users.sh on a full run.
#   BLE_TEST_RELEASE=0|1     skip the release build on a full run (0), or do it on a filtered one (1).
#   BLE_TEST_AVATAR=0|1      skip the Avatar slice on a full run (0), or run it on a filtered one (1).
#   BLE_TEST_PYTHON_HOST=... the python3 used to create .venv (default: /usr/bin/python3).
#   BLE_TEST_BUMBLE_CONTROLLERS=spawn|0|tcp:H:P1,tcp:H:P2
#                            spawn (default): the Bumble controller tests start their own
#                            controllers; 0: skip those tests; tcp:…,tcp:…: controllers you
#                            started yourself (`.venv/bin/bumble-controllers tcp-server:…
#                            tcp-server:…`; fresh ones for each test, see above).
#   BLE_TEST_MOSQUITTO=0|PATH
#                            0: skip the MQTT broker tests; PATH: this mosquitto binary
#                            (default: the one found, see step 6).
#   BUMBLE_VERSION / ROOTCANAL_VERSION override the pinned versions.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

BUMBLE_VERSION="${BUMBLE_VERSION:-0.0.236}"      # peers patch Bumble internals: keep it pinned
ROOTCANAL_VERSION="${ROOTCANAL_VERSION:-1.10.0}" # newer wheels need glibc 2.38 (Debian 12: 2.36)
VENV="$ROOT/.venv"
TOOLS="$ROOT/.build-tools"
LIB="$ROOT/scripts/lib"
PEERS="$ROOT/Tests/BLEInteropTests/peers"

if [[ -t 2 ]]; then
    log() { printf '\033[1m[test.sh]\033[0m %s\n' "$*" >&2; }
else
    log() { printf '[test.sh] %s\n' "$*" >&2; }
fi
die() { log "error: $*"; exit 1; }
# timed LABEL COMMAND...: runs COMMAND and logs how long it took (what each step costs CI).
timed() {
    local label="$1" start=$SECONDS
    shift
    log "$label"
    "$@"
    log "$label: $((SECONDS - start)) s"
}

# ----------------------------------------------------------------------------- 1. packages
host_python() {
    if [[ -n "${BLE_TEST_PYTHON_HOST:-}" ]]; then echo "$BLE_TEST_PYTHON_HOST"
    elif [[ -x /usr/bin/python3 ]]; then echo /usr/bin/python3
    else command -v python3 || true
    fi
}

dpkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

ensure_packages() {
    [[ "${BLE_TEST_SKIP_PACKAGES:-0}" == 1 ]] && return 0
    local missing=() pkg py
    py="$(host_python)"
    if command -v dpkg-query >/dev/null 2>&1; then
        for pkg in socat tshark libssl-dev gcc libc6-dev pkg-config chromium \
            mosquitto mosquitto-clients libmosquitto-dev; do
            dpkg_installed "$pkg" || missing+=("$pkg")
        done
        if [[ -z "$py" ]]; then
            missing+=(python3 python3-venv)
        elif [[ "$py" == /usr/bin/python3* ]] && ! "$py" -c 'import ensurepip, venv' 2>/dev/null; then
            missing+=(python3-venv)
        fi
    else
        # Not Debian: only check that the commands exist; we cannot install them for you.
        for pkg in socat tshark gcc; do command -v "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
        [[ -n "$py" ]] || missing+=(python3)
        if ((${#missing[@]})); then die "please install: ${missing[*]} (and OpenSSL's headers)"; fi
        return 0
    fi
    ((${#missing[@]})) || return 0

    local sudo=()
    if [[ $EUID -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            log "missing Debian packages: ${missing[*]}"
            log "run as root (or install sudo), or install them yourself:"
            log "  echo 'wireshark-common wireshark-common/install-setuid boolean false' | debconf-set-selections"
            log "  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
            exit 1
        fi
    fi
    log "installing Debian packages: ${missing[*]}"
    echo 'wireshark-common wireshark-common/install-setuid boolean false' \
        | "${sudo[@]}" debconf-set-selections
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends "${missing[@]}"
}

# ----------------------------------------------------------------------------- 2. venv
venv_versions() {
    "$VENV/bin/python" - <<'EOF' 2>/dev/null
import importlib.metadata as m
print(m.version("bumble"), m.version("rootcanal"))
EOF
}

ensure_venv() {
    local want="$BUMBLE_VERSION $ROOTCANAL_VERSION"
    if [[ -x "$VENV/bin/python" ]] && [[ "$(venv_versions || true)" == "$want" ]]; then
        return 0
    fi
    local py
    py="$(host_python)"
    [[ -n "$py" ]] || die "no python3 found"
    if ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
        log "creating $VENV with $py"
        rm -rf "$VENV"
        "$py" -m venv "$VENV"
    fi
    log "installing bumble==$BUMBLE_VERSION rootcanal==$ROOTCANAL_VERSION into .venv"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
        "bumble==$BUMBLE_VERSION" "rootcanal==$ROOTCANAL_VERSION"
    [[ "$(venv_versions)" == "$want" ]] || die "pip did not give bumble/rootcanal $want"
}

rootcanal_binary() {
    local path
    path="$("$VENV/bin/python" -c \
        'import rootcanal.binaries as b; print(b.get_package_binary_resource_path("rootcanal"))' \
        2>/dev/null || true)"
    if [[ -z "$path" || ! -x "$path" ]]; then
        path="$(find "$VENV" -path '*rootcanal/bin/linux-x86_64/rootcanal' -type f 2>/dev/null | head -n1)"
    fi
    [[ -n "$path" && -x "$path" ]] || die "rootcanal binary not found in $VENV"
    echo "$path"
}

# ----------------------------------------------------------------------------- 3. shim
SHIM="$TOOLS/rootcanal-nodelay.so"
ensure_shim() {
    [[ "${BLE_TEST_NODELAY:-1}" == 0 ]] && return 0
    local src="$ROOT/scripts/rootcanal-nodelay.c"
    [[ -f "$src" ]] || return 0
    if [[ ! -f "$SHIM" || "$src" -nt "$SHIM" ]]; then
        log "building $SHIM"
        mkdir -p "$TOOLS"
        gcc -shared -fPIC -O2 -Wall -o "$SHIM.tmp" "$src" -ldl && mv "$SHIM.tmp" "$SHIM"
    fi
}

# ----------------------------------------------------------------------------- 5. rootcanal
RC_PID=""
RC_LOG=""
MEASURE_PID=""
TEST_PID=""

stop_pid() { # stop_pid PID [TENTHS]: SIGTERM, then SIGKILL after TENTHS/10 s (2 s); never touches anything else
    local pid="$1" tenths="${2:-20}" i
    [[ -n "$pid" ]] || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq "$tenths"); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    # scripts/avatar.sh stops what it started (avatar, ble pandora, its rootcanal) on TERM: give it time.
    stop_pid "$TEST_PID" "$([[ "$TEST_PID" == "${AVATAR_PID:-}" ]] && echo 300 || echo 20)"
    stop_pid "$MEASURE_PID"
    if [[ -n "$RC_PID" ]]; then
        stop_pid "$RC_PID"
        RC_PID=""
    fi
    if [[ -n "${BLE_BONDS:-}" && "$BLE_BONDS" == "$TOOLS"/bonds-* ]]; then rm -rf "$BLE_BONDS"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_rootcanal USE_SHIM(0/1) -> sets STARTED_PID, STARTED_PORT, STARTED_LOG
start_rootcanal() {
    local use_shim="$1" binary attempt ports log pid status
    binary="$(rootcanal_binary)"
    mkdir -p "$TOOLS/logs"
    find "$TOOLS/logs" -name 'rootcanal-*.log' -mtime +1 -delete 2>/dev/null || true
    for attempt in 1 2 3; do
        mapfile -t ports < <("$VENV/bin/python" "$LIB/netutil.py" free-ports 4)
        log="$TOOLS/logs/rootcanal-$$-${ports[1]}.log"
        if [[ "$use_shim" == 1 && -f "$SHIM" ]]; then
            LD_PRELOAD="$SHIM" "$binary" -test_port "${ports[0]}" -hci_port "${ports[1]}" \
                -link_port "${ports[2]}" -link_ble_port "${ports[3]}" >"$log" 2>&1 &
        else
            "$binary" -test_port "${ports[0]}" -hci_port "${ports[1]}" \
                -link_port "${ports[2]}" -link_ble_port "${ports[3]}" >"$log" 2>&1 &
        fi
        pid=$!
        status=0
        "$VENV/bin/python" "$LIB/netutil.py" wait-listen "$pid" "${ports[1]}" 10 || status=$?
        if [[ $status == 0 ]]; then
            STARTED_PID=$pid STARTED_PORT=${ports[1]} STARTED_LOG=$log
            return 0
        fi
        log "rootcanal (pid $pid) is not listening on ${ports[1]} (status $status); log:"
        tail -n 20 "$log" >&2 || true
        stop_pid "$pid"
    done
    die "could not start rootcanal"
}

measure() { # time HCI_Reset round trips without and with the shim (BLE_TEST_MEASURE=1)
    local without with
    start_rootcanal 0
    MEASURE_PID=$STARTED_PID
    without="$("$VENV/bin/python" "$LIB/hci_rtt.py" "$STARTED_PORT" 20)"
    stop_pid "$MEASURE_PID"; MEASURE_PID=""; rm -f "$STARTED_LOG"
    log "HCI_Reset round trip without TCP_NODELAY shim: $without"
    if [[ -f "$SHIM" ]]; then
        start_rootcanal 1
        MEASURE_PID=$STARTED_PID
        with="$("$VENV/bin/python" "$LIB/hci_rtt.py" "$STARTED_PORT" 20)"
        stop_pid "$MEASURE_PID"; MEASURE_PID=""; rm -f "$STARTED_LOG"
        log "HCI_Reset round trip with TCP_NODELAY shim:    $with"
    fi
}

# ----------------------------------------------------------------------------- main
if [[ -z "${BLE_TEST_COMMAND:-}" ]] && ! command -v swift >/dev/null 2>&1; then
    die "swift is not on PATH (install a Swift 6 toolchain from swift.org)"
fi
ensure_packages
ensure_venv
ensure_shim
[[ "${BLE_TEST_MEASURE:-0}" == 1 ]] && measure

if [[ -z "${BLE_TEST_COMMAND:-}" ]]; then
    timed "swift build --build-tests" swift build --build-tests
    # Users build for production: every product in release, so a release-only failure (such as a
    # compiler crash in an optimisation pass) fails the test command. In .build/release, apart
    # from the debug build the tests use.
    if [[ "${BLE_TEST_RELEASE:-$(( $# == 0 ))}" == 1 ]]; then
        timed "swift build -c release" swift build -c release
    fi
    # Every public declaration of the API has a doc comment, and every link between the
    # Markdown pages resolves; seconds, no build.
    if [[ "${BLE_TEST_DOC_CHECK:-1}" == 1 && $# == 0 ]]; then
        log "scripts/check-doc-comments.sh"
        scripts/check-doc-comments.sh
        if [[ -d Sources/CoreBluetooth ]]; then scripts/check-doc-comments.sh CoreBluetooth; fi
        log "scripts/check-doc-links.sh"
        scripts/check-doc-links.sh
        # The seed systems and the tool import no module below BLE; SwiftPM cannot check it.
        log "scripts/check-api-users.sh"
        scripts/check-api-users.sh
    fi
    # The BLE library stands alone: a package that depends only on it builds from the README's
    # examples without compiling the virtual radio.
    if [[ "${BLE_TEST_PRODUCT_CHECK:-1}" == 1 && $# == 0 ]]; then
        timed "scripts/check-ble-product.sh" scripts/check-ble-product.sh
    fi
fi

start_rootcanal "$([[ "${BLE_TEST_NODELAY:-1}" == 0 ]] && echo 0 || echo 1)"
RC_PID=$STARTED_PID
RC_LOG=$STARTED_LOG
if [[ "${BLE_TEST_NODELAY:-1}" != 0 && -f "$SHIM" ]]; then
    shim_note=" with TCP_NODELAY shim"
else
    shim_note=" without TCP_NODELAY shim"
fi
log "rootcanal pid $RC_PID on 127.0.0.1:$STARTED_PORT$shim_note (log: ${RC_LOG#"$ROOT"/})"

export BLE_TEST_ROOTCANAL="tcp:127.0.0.1:$STARTED_PORT"
export BLE_TEST_PYTHON="$VENV/bin/python"
export BLE_TEST_PEERS="$PEERS"
export BLE_TEST_ROOTCANAL_LOG="$RC_LOG"
# Bumble's own controller, the third one the host is tested on (see step 6 in the header).
case "${BLE_TEST_BUMBLE_CONTROLLERS:-spawn}" in
    0) unset BLE_TEST_BUMBLE_CONTROLLERS ;;
    spawn)
        "$VENV/bin/python" -c 'import bumble.apps.controllers' \
            || die "bumble.apps.controllers does not import from $VENV (bumble $BUMBLE_VERSION)"
        export BLE_TEST_BUMBLE_CONTROLLERS=spawn
        log "Bumble controller tests: each starts $VENV/bin/python -m bumble.apps.controllers on free ports" ;;
    *) export BLE_TEST_BUMBLE_CONTROLLERS ;;
esac
# Eclipse Mosquitto for the MQTT tests (see step 6 in the header): each test starts its own broker.
case "${BLE_TEST_MOSQUITTO:-}" in
    0) unset BLE_TEST_MOSQUITTO ;;
    "")
        mosquitto_binary="$(command -v mosquitto || echo /usr/sbin/mosquitto)"
        [[ -x "$mosquitto_binary" ]] \
            || die "mosquitto not found (apt-get install mosquitto mosquitto-clients; BLE_TEST_MOSQUITTO=0 skips the MQTT tests)"
        export BLE_TEST_MOSQUITTO="$mosquitto_binary"
        log "MQTT tests: each starts $BLE_TEST_MOSQUITTO on a free port" ;;
    *) export BLE_TEST_MOSQUITTO ;;
esac
export PYTHONDONTWRITEBYTECODE=1  # peers import peer_common: keep __pycache__ out of Tests/
# Bonds and the local identity of every `ble` the tests run go to a fresh directory of this run,
# never to the user's ~/.local/share/ble/bonds (tests that pair name their own with --bonds).
export BLE_BONDS="$TOOLS/bonds-$$"
rm -rf "$BLE_BONDS"

# Run the tests as a background job and `wait` for it: bash runs the INT/TERM traps only between
# commands, and `wait` is the one command a signal interrupts, so a signalled test.sh stops the
# test run and rootcanal at once instead of after the tests end.
status=0
if [[ -n "${BLE_TEST_COMMAND:-}" ]]; then
    log "BLE_TEST_COMMAND: $BLE_TEST_COMMAND"
    bash -c "$BLE_TEST_COMMAND" test-command "$@" &
else
    swift test "$@" &
fi
TEST_PID=$!
test_start=$SECONDS
wait "$TEST_PID" || status=$?
log "tests: $((SECONDS - test_start)) s"
TEST_PID=""

if [[ $status != 0 ]]; then
    log "tests failed (status $status); last lines of rootcanal's log ($RC_LOG):"
    tail -n 40 "$RC_LOG" >&2 || true
else
    rm -f "$RC_LOG"
fi

# 7. Google's Avatar suite driving `ble pandora` (scripts/avatar.sh --slice: LeHostTest and a
#    fixed slice of LeSecurityTest, against Bumble on a rootcanal of its own).
if [[ -z "${BLE_TEST_COMMAND:-}" && "${BLE_TEST_AVATAR:-$(( $# == 0 ))}" == 1 ]]; then
    avatar_status=0
    avatar_start=$SECONDS
    BLE_AVATAR_BLE="$ROOT/.build/debug/ble" scripts/avatar.sh --slice & TEST_PID=$!
    AVATAR_PID=$TEST_PID
    wait "$TEST_PID" || avatar_status=$?
    TEST_PID=""
    log "avatar slice: $((SECONDS - avatar_start)) s (status $avatar_status)"
    if [[ $status == 0 ]]; then status=$avatar_status; fi
fi
exit "$status"

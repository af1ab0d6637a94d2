#!/usr/bin/env bash
# Coverage-guided fuzzing of the stack's decoders and state machines with libFuzzer
# (docs/FUZZING.md).
#
#   scripts/fuzz.sh TARGET [SECONDS] [libFuzzer options...]   one target (default 60 s)
#   scripts/fuzz.sh all [SECONDS] [libFuzzer options...]      every target in turn
#   scripts/fuzz.sh --list                                    target names
#
# Builds `ble-fuzz` in release mode with -sanitize=fuzzer and -DLIBFUZZER into .build-fuzz/
# (its own scratch path, so the normal .build/ is untouched), seeds .build-fuzz/corpus/TARGET/
# with the target's golden inputs the first time, and runs libFuzzer on that corpus for SECONDS.
# A crash or broken invariant is saved as .build-fuzz/artifacts/TARGET/crash-<sha1>; replay it
# with `.build-fuzz/release/ble-fuzz TARGET FILE` (or in a plain debug build of ble-fuzz, which
# replays files through the same target without libFuzzer).
#
# Needs lld: the default gold linker crashes linking -sanitize=fuzzer (ARCHITECTURE.md). The Swift
# toolchain ships ld.lld next to swift; otherwise `apt-get install lld` (Debian package lld).
#
# Environment knobs:
#   BLE_FUZZ_SANITIZE=fuzzer,address   sanitizers to build with (default: fuzzer)
#   BLE_FUZZ_SKIP_BUILD=1              reuse the last build
# Exit status: 0 when every target ran clean, 1 when any found a crash, 2 on usage/build errors.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SCRATCH="$ROOT/.build-fuzz"
BIN="$SCRATCH/release/ble-fuzz"

usage() {
    sed -n '5,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

[[ $# -ge 1 ]] || usage
TARGET="$1"
shift
SECONDS_PER_TARGET=60
if [[ $# -ge 1 && "$1" =~ ^[0-9]+$ ]]; then
    SECONDS_PER_TARGET="$1"
    shift
fi

# lld: in the Swift toolchain's bin directory or on PATH.
SWIFT_BIN="$(dirname "$(command -v swift || echo /usr/bin/swift)")"
if ! command -v ld.lld >/dev/null 2>&1 && [[ ! -x "$SWIFT_BIN/ld.lld" ]]; then
    echo "fuzz.sh: ld.lld not found. Install it with: apt-get install lld" >&2
    exit 2
fi

if [[ "${BLE_FUZZ_SKIP_BUILD:-0}" != 1 || ! -x "$BIN" ]]; then
    echo "fuzz.sh: building ble-fuzz with -sanitize=${BLE_FUZZ_SANITIZE:-fuzzer} into $SCRATCH" >&2
    (cd "$ROOT" && swift build -c release --product ble-fuzz \
        -Xswiftc "-sanitize=${BLE_FUZZ_SANITIZE:-fuzzer}" -Xswiftc -use-ld=lld -Xswiftc -DLIBFUZZER \
        --scratch-path "$SCRATCH") || { echo "fuzz.sh: build failed" >&2; exit 2; }
fi

if [[ "$TARGET" == --list ]]; then
    "$BIN" --list
    exit 0
fi

if [[ "$TARGET" == all ]]; then
    mapfile -t TARGETS < <("$BIN" --list)
else
    TARGETS=("$TARGET")
fi

failed=()
for t in "${TARGETS[@]}"; do
    corpus="$SCRATCH/corpus/$t"
    artifacts="$SCRATCH/artifacts/$t"
    mkdir -p "$corpus" "$artifacts"
    if [[ -z "$(ls -A "$corpus")" ]]; then
        "$BIN" "$t" --write-seeds "$corpus" >/dev/null || { echo "fuzz.sh: unknown target $t" >&2; exit 2; }
    fi
    echo "=== $t: ${SECONDS_PER_TARGET}s, corpus $corpus" >&2
    # -timeout: an input that takes 10 s is a hang (a loop a peer can trigger), reported as one.
    if ! "$BIN" "$t" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "$@" "$corpus"; then
        failed+=("$t")
        echo "=== $t: FAILED; reproducers in $artifacts/" >&2
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz.sh: crashes in: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz.sh: ${#TARGETS[@]} target(s) ran ${SECONDS_PER_TARGET}s each without a crash" >&2

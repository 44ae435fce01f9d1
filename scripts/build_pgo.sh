#!/usr/bin/env bash
# A profile-guided build of rocelab: for long simulations, sweeps and tuning runs, where the
# simulator's speed decides how much can be tried.
#
# It builds rocelab with LLVM's instrumentation, runs a training set of built-in scenarios
# (web-search, the permutation, incasts, every congestion control, load balancing, a PFC
# storm, ring all-reduce, the HPCC paper's fabric, a replay of the repository's captures),
# merges the profiles, and builds again with them: the compiler then lays out and inlines
# the code by how it actually runs. The result computes exactly what the plain release
# build computes (same reports, byte for byte); only its speed differs. docs/benchmarks.md
# gives the measured gain.
#
# Usage: scripts/build_pgo.sh
#   Prints the path of the optimized binary, target/pgo/release/rocelab, last.
#   Needs llvm-profdata of rustc's own LLVM version: `rustup component add llvm-tools`
#   (or set LLVM_PROFDATA to one). Takes two release builds (some 6 minutes on 2 cores;
#   a second call reuses the instrumented one if the sources did not change) and some
#   10 s of training runs. The normal target/release is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

host=$(rustc -vV | sed -n 's/^host: //p')
profdata=${LLVM_PROFDATA:-$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata}
if [[ ! -x $profdata ]]; then
    echo "build_pgo: no llvm-profdata at $profdata" >&2
    echo "  it must match rustc's LLVM ($(rustc -vV | sed -n 's/^LLVM version: //p')):" \
        "rustup component add llvm-tools, or set LLVM_PROFDATA" >&2
    exit 2
fi

# The profiles' folder keeps its name, so that the flags do, and a second call reuses the
# instrumented build when the sources have not changed.
work=$PWD/target/pgo-profiles
rm -rf "$work"
mkdir -p "$work/out"
flags=${RUSTFLAGS:-}

echo "build_pgo: instrumented build (target/pgo-instrumented)" >&2
RUSTFLAGS="$flags -Cprofile-generate=$work/raw" CARGO_TARGET_DIR=target/pgo-instrumented \
    cargo build --release --quiet
bin=target/pgo-instrumented/release/rocelab

echo "build_pgo: training runs" >&2
train() {
    echo "  rocelab $*" >&2
    if ! "$bin" "$@" >"$work/train.log" 2>&1; then
        cat "$work/train.log" >&2
        echo "build_pgo: that training run failed" >&2
        exit 1
    fi
}
n=0
for run in \
    "web-search --set duration_ms=2" \
    "permutation --set duration_ms=0.5" \
    "incast" \
    "incast-64" \
    "incast-16-cc" \
    "elephants" \
    "pfc-storm" \
    "ring" \
    "hpcc-paper-incast --set duration_ms=0.3"; do
    n=$((n + 1))
    # shellcheck disable=SC2086 # a scenario and its settings, split on purpose
    train sim $run --out "$work/out/$n"
done
train replay --split-by mac pcaps/roce_mixed.pcapng pcaps/roce_streams.pcap --out "$work/replay.pcapng"

"$profdata" merge -o "$work/merged.profdata" "$work/raw"

echo "build_pgo: optimized build (target/pgo)" >&2
RUSTFLAGS="$flags -Cprofile-use=$work/merged.profdata" CARGO_TARGET_DIR=target/pgo \
    cargo build --release --quiet
echo "target/pgo/release/rocelab"

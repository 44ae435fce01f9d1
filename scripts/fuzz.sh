#!/usr/bin/env bash
# Runs every cargo-fuzz target (fuzz/fuzz_targets/) for a fixed time each, starting from
# the corpus kept in fuzz/corpus/<target>/. docs/fuzzing.md says what each target covers.
#
# Usage: scripts/fuzz.sh [TARGET...]        (default: frame capture config replay)
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_TIMEOUT   seconds one input may take before it counts as a hang (default 10)
#   FUZZ_SEED      libFuzzer's seed (default 1: repeatable; 0: a new one each run)
#
# Needs the nightly toolchain (libFuzzer's instrumentation); installs cargo-fuzz if it is
# missing. Without nightly it prints "skipped" and exits 0, except under CI=true, where that
# is a failure. Exits non-zero when any target finds a crash, a hang or a memory blow-up;
# the input is then in fuzz/artifacts/<target>/ (not committed) and the log says which.
#   FUZZ_KEEP_CORPUS  1: new corpus entries found on the way are added to fuzz/corpus/<target>
#                     (for a maintainer to review and commit); by default they go to a
#                     temporary folder, counted in the log, and the checkout is left as it was.
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${FUZZ_SECONDS:-60}
HANG=${FUZZ_TIMEOUT:-10}
# A fixed seed makes a run repeatable (the same mutations in the same order; only how far
# it gets in the time differs): a CI failure can be replayed. FUZZ_SEED=0 picks one.
SEED=${FUZZ_SEED:-1}
if [ "$#" -gt 0 ]; then TARGETS=("$@"); else TARGETS=(frame capture config replay); fi

if ! cargo +nightly --version >/dev/null 2>&1; then
    if [ "${CI:-}" = true ]; then
        echo "fuzz: no nightly toolchain (cargo +nightly); under CI=true that is a failure" >&2
        exit 1
    fi
    echo "fuzz: skipped: no nightly toolchain"
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# The fuzzed code has no `unsafe` (that is only in src/io and src/lab, which no target
# reaches), so AddressSanitizer would only halve the speed: build without a sanitizer.
# cargo-fuzz builds in release mode with debug assertions (and so overflow checks) on.
FUZZ_FLAGS=(--sanitizer none)
echo "fuzz: building the targets ($(cargo +nightly fuzz --version))"
logs=$(mktemp -d)
# The build must not leave the checkout changed: fuzz/Cargo.lock is committed, and a
# stale one (the main crate's dependencies moved on) is put back as it was, with a word.
cp fuzz/Cargo.lock "$logs/Cargo.lock.committed"
restore_lock() {
    if ! cmp -s fuzz/Cargo.lock "$logs/Cargo.lock.committed"; then
        echo "fuzz: warning: fuzz/Cargo.lock is stale (cargo rewrote it); put back as committed: run 'cargo +nightly update -w --manifest-path fuzz/Cargo.toml' and commit it" >&2
        cp "$logs/Cargo.lock.committed" fuzz/Cargo.lock
    fi
    rm -rf "$logs"
}
trap restore_lock EXIT
if ! cargo +nightly fuzz build "${FUZZ_FLAGS[@]}" >"$logs/build.log" 2>&1; then
    tail -n 40 "$logs/build.log"
    echo "fuzz: building the fuzz targets failed" >&2
    exit 1
fi
passed=0
failed=0
for t in "${TARGETS[@]}"; do
    log="$logs/$t.log"
    echo "fuzz: $t for ${SECS}s"
    status=0
    # libFuzzer adds what it finds to the first corpus folder it is given.
    if [ "${FUZZ_KEEP_CORPUS:-0}" = 1 ]; then
        corpora=("fuzz/corpus/$t")
    else
        corpora=("$logs/new-$t" "fuzz/corpus/$t")
        mkdir -p "$logs/new-$t"
    fi
    cargo +nightly fuzz run "${FUZZ_FLAGS[@]}" "$t" "${corpora[@]}" -- \
        -max_total_time="$SECS" -timeout="$HANG" -rss_limit_mb=2048 -seed="$SEED" \
        -print_final_stats=1 >"$log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    corpus="$(find "fuzz/corpus/$t" -type f | wc -l) files"
    if [ "${FUZZ_KEEP_CORPUS:-0}" != 1 ]; then
        corpus="$corpus, and $(find "$logs/new-$t" -type f | wc -l) new inputs not kept (FUZZ_KEEP_CORPUS=1 keeps them)"
    fi
    if [ "$status" -eq 0 ]; then
        grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true
        echo "fuzz: $t: ok: ${runs:-?} runs, ${rate:-?} exec/s, corpus $corpus"
        passed=$((passed + 1))
    else
        # libFuzzer's report: the panic or hang, the stack, the input saved as an artifact.
        grep -E -A 40 'panicked at|ERROR: libFuzzer|==[0-9]+== ERROR|deadly signal' "$log" | head -n 80 || tail -n 60 "$log"
        grep -E 'Test unit written to|artifact_prefix' "$log" || true
        echo "fuzz: $t: FAILED (exit $status) after ${runs:-?} runs"
        failed=$((failed + 1))
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

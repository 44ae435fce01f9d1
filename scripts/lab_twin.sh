#!/usr/bin/env bash
# Runs `rocelab lab` on one scenario several times and prints, per run, how the live fabric
# compares with its simulated twin: each all-reduce size's live/twin busbw (the lowest and
# the highest), PFC frames, CE marks and the deepest queue live against twin, the longest
# stall of either thread, the emulated time's dilation, and the run's verdict. Then the CE
# marks' spread over the runs. With BUSY=N, N busy loops compete for the cores meanwhile.
#
# Usage (as root): scripts/lab_twin.sh SCENARIO [RUNS] [-- extra rocelab lab flags]
#   BUSY       busy loops competing for the cores (default 0)
#   ROCELAB    the binary (default target/release/rocelab)
# Needs jq.
set -euo pipefail
cd "$(dirname "$0")/.."

scenario=${1:?usage: scripts/lab_twin.sh SCENARIO [RUNS] [-- flags]}
runs=${2:-3}
shift $(($# < 2 ? $# : 2))
[ "${1:-}" = "--" ] && shift
bin=${ROCELAB:-target/release/rocelab}
busy=${BUSY:-0}
out=$(mktemp -d)
loops=()
cleanup() {
    for p in "${loops[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$out"
}
trap cleanup EXIT
for ((i = 0; i < busy; i++)); do
    (while :; do :; done) &
    loops+=($!)
done

printf '%-4s %-22s %-12s %-14s %-16s %-9s %-10s %s\n' run "size live/twin" "PFC live/twin" \
    "CE live/twin" "queue live/twin" "stall" "dilation" verdict
ces=()
for ((r = 1; r <= runs; r++)); do
    dir="$out/$r"
    "$bin" lab --scenario "$scenario" --out "$dir" "$@" >"$out/$r.log" 2>&1 || {
        echo "run $r failed:"
        tail -n 20 "$out/$r.log"
        exit 1
    }
    # A story writes a folder per part: its last part is the one under congestion.
    report=$(find "$dir" -name report.json | sort | tail -n 1)
    jq -r --arg r "$r" '
        def ratio(a; b): if b > 0 then (a / b * 100 | round / 100) else "-" end;
        [.twin.allreduce[] | select(.live.time_ns != null and .twin.time_ns != null)
            | .live.busbw_gbytes_per_s / .twin.busbw_gbytes_per_s] as $k
        | [$r,
           "\(($k | min * 100 | round) / 100)-\(($k | max * 100 | round) / 100) (\($k | length))",
           "\(.twin.live.pfc_sent)/\(.twin.twin.pfc_sent)",
           "\(.twin.live.ce_marked)/\(.twin.twin.ce_marked)",
           "\(ratio(.twin.live.queue_watermark_bytes; .twin.twin.queue_watermark_bytes))x",
           "\(([.threads.switch.max_lag_ns, .threads.hosts.max_lag_ns] | max) / 1e4 | round / 100) ms",
           "\(.threads.switch.dilation_ns / 1e4 | round / 100) ms",
           (if .verdict.faithful then "faithful" else "NOT faithful: " + (.verdict.why | join("; ")) end)]
        | @tsv' "$report" | awk -F'\t' '{printf "%-4s %-22s %-12s %-14s %-16s %-9s %-10s %s\n", $1, $2, $3, $4, $5, $6, $7, $8}'
    ces+=("$(jq '.twin.live.ce_marked' "$report")")
done
printf '%s\n' "${ces[@]}" | sort -n | awk '
    { v[NR] = $1 }
    END { if (NR > 1) printf "CE marks over %d runs: %d to %d (the highest %.0f %% above the lowest)\n",
              NR, v[1], v[NR], (v[NR] - v[1]) * 100 / (v[1] > 0 ? v[1] : 1) }'

#!/usr/bin/env bash
# Forwarding speed on veth, side by side: namespace A -- veth -- forwarder -- veth --
# namespace B, addresses in 198.18.0.0/15. A fast sender in A (sendmmsg on AF_PACKET with
# PACKET_QDISC_BYPASS: `rocelab traffic send`) pushes UDP 4791 RoCE frames as fast as it
# can; `rocelab traffic count` counts what arrives in B. The forwarders take turns on the
# same veths, round after round (A B A B ...): the Linux kernel bridge (with
# bridge-nf-call-iptables pinned to 0) and rocelab switch with each backend, doing the
# whole RoCE pipeline (parse, classify, MMU, RED, PFC, scheduling at 100 Gb/s).
#
# Usage (as root): scripts/bench_veth.sh [SECONDS_PER_RUN] [ROUNDS]
# Prints pps per forwarder and frame size (the median over rounds) and the ratio to the
# bridge. Everything it makes is removed on exit, also on Ctrl-C or failure.
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${1:-4}
ROUNDS=${2:-3}
[ "$(id -u)" -eq 0 ] || { echo "bench_veth.sh: run as root (namespaces, raw sockets)" >&2; exit 1; }
command -v ip >/dev/null || { echo "bench_veth.sh: needs iproute2 (apt-get install iproute2)" >&2; exit 1; }

cargo build --release --quiet
BIN=$PWD/target/release/rocelab

P="rlb$$-"                      # a per-run prefix: rl + pid, as rocelab names things
NSA=${P}a NSB=${P}b
SA=${P}sa SB=${P}sb HA=${P}ha HB=${P}hb BR=${P}br
NF=/proc/sys/net/bridge/bridge-nf-call-iptables
NF_OLD=""
SWITCH_PID=""

cleanup() {
    [ -n "$SWITCH_PID" ] && kill "$SWITCH_PID" 2>/dev/null && wait "$SWITCH_PID" 2>/dev/null || true
    ip link del "$BR" 2>/dev/null || true
    ip link del "$SA" 2>/dev/null || true
    ip link del "$SB" 2>/dev/null || true
    ip netns del "$NSA" 2>/dev/null || true
    ip netns del "$NSB" 2>/dev/null || true
    if [ -n "$NF_OLD" ] && [ -w "$NF" ]; then echo "$NF_OLD" > "$NF"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$NSA"
ip netns add "$NSB"
for side in a b; do
    ns=${P}$side root=${P}s$side host=${P}h$side
    ip link add "$root" type veth peer name "$host"
    ip link set "$host" netns "$ns"
    ip -n "$ns" link set "$host" up
    ip -n "$ns" link set lo up
    ip link set "$root" up
done
ip -n "$NSA" addr add 198.18.0.1/24 dev "$HA"
ip -n "$NSB" addr add 198.18.0.2/24 dev "$HB"
MAC_B=$(ip netns exec "$NSB" cat /sys/class/net/"$HB"/address)

if [ -e "$NF" ]; then NF_OLD=$(cat "$NF"); echo 0 > "$NF"; fi

start_forwarder() {
    case $1 in
        bridge)
            ip link add "$BR" type bridge
            ip link set "$SA" master "$BR"
            ip link set "$SB" master "$BR"
            ip link set "$BR" up ;;
        pnet|mmap)
            "$BIN" switch --preset default --port p0="$SA" --port p1="$SB" --io "$1" \
                --interval 0 >/dev/null 2>&1 &
            SWITCH_PID=$!
            sleep 0.5 ;;
    esac
}

stop_forwarder() {
    case $1 in
        bridge) ip link del "$BR" ;;
        *) kill "$SWITCH_PID"; wait "$SWITCH_PID" 2>/dev/null || true; SWITCH_PID="" ;;
    esac
}

# One run: pps arriving in B while A sends for SECS seconds.
run_once() {
    local fwd=$1 size=$2 out sent_s got
    start_forwarder "$fwd"
    out=$(mktemp)
    ip netns exec "$NSB" "$BIN" traffic count --iface "$HB" --duration $((SECS + 2)) > "$out" &
    local counter=$!
    sleep 0.3
    sent_s=$(ip netns exec "$NSA" "$BIN" traffic send --iface "$HA" --dst-mac "$MAC_B" \
        --size "$size" --duration "$SECS" | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')
    wait "$counter"
    got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["roce"])' "$out")
    rm -f "$out"
    stop_forwarder "$fwd"
    python3 -c "print(round($got / $sent_s))"
}

declare -A RESULTS
FORWARDERS=(bridge pnet mmap)
for size in 62 1082; do
    for round in $(seq "$ROUNDS"); do
        for fwd in "${FORWARDERS[@]}"; do
            pps=$(run_once "$fwd" "$size")
            RESULTS[$fwd,$size]="${RESULTS[$fwd,$size]:-} $pps"
            echo "round $round  ${size} B  $fwd: $pps pps" >&2
        done
    done
done

python3 - "$ROUNDS" <<EOF
import statistics
rows = {
$(for size in 62 1082; do for fwd in "${FORWARDERS[@]}"; do echo "    ('$fwd', $size): [$(echo ${RESULTS[$fwd,$size]} | tr ' ' ',')],"; done; done)
}
names = {'bridge': 'Linux kernel bridge', 'pnet': 'rocelab switch --io pnet', 'mmap': 'rocelab switch --io mmap'}
print(f"{'frame':>8}  {'forwarder':<26} {'median pps':>12}  {'ratio to bridge':>15}   runs")
for size in (62, 1082):
    base = statistics.median(x for x in rows[('bridge', size)] if x is not None)
    for fwd in ('bridge', 'pnet', 'mmap'):
        runs = rows[(fwd, size)]
        med = statistics.median(runs)
        label = f"{size} B"
        print(f"{label:>8}  {names[fwd]:<26} {med:>12,.0f}  {med / base:>15.2f}   {runs}")
EOF

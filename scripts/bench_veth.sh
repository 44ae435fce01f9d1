#!/usr/bin/env bash
# Forwarding speed on veth, side by side, with the sender's own limit shown: namespace A --
# veth -- forwarder -- veth -- namespace B, addresses in 198.18.0.0/15. A fast C sender in A
# (scripts/bench_sender.c, built here with `cc -O2`: AF_PACKET, PACKET_QDISC_BYPASS,
# sendmmsg batches of 64, several threads) repeats one valid RoCEv2 RC WRITE frame (DSCP 26)
# captured from `rocelab traffic send`; `rocelab traffic count` counts what arrives in B.
#
# First the sender alone: A straight into B over a direct veth pair, no forwarder (what the
# sender offers, what the sink can take). Then the forwarders take turns on the same veths,
# round after round (A B A B ...): the Linux kernel bridge (bridge-nf-call-iptables pinned to
# 0) and rocelab switch with each backend, doing the whole RoCE pipeline (parse, classify,
# MMU, RED, PFC, scheduling at 100 Gb/s). Frames of 64 B (the 62 B RoCE packet plus 2 B of
# Ethernet padding) and 1082 B (1024 B of payload); sizes without FCS.
#
# Usage (as root): scripts/bench_veth.sh [SECONDS_PER_RUN] [ROUNDS]
#   SENDER_THREADS=N (default 2): sockets/threads of the C sender.
#   FORWARDERS="bridge mmap ..." (default: bridge pnet mmap mmap2): which to run, of bridge,
#   pnet, mmap (rocelab switch, one thread) and mmap2 (rocelab switch --cores 0,1: two
#   threads, one receiving on each port, both forwarding through the one switch core).
#   BIDIR=1: a sender in each namespace, A -> B and B -> A at once (each with
#   SENDER_THREADS threads), and a counter in each; offered and delivered are the sums. Frames
#   then enter the forwarder on both ports, as a switch on several threads needs to show
#   what a second thread adds (on a machine with CPUs to spare for it).
# The frames are addressed to a MAC no interface has: the sink (a counter on B's interface)
# sees every frame, and B's IP stack drops each at its door (PACKET_OTHERHOST) instead of
# answering UDP 4791 with ICMP port unreachable: work that would otherwise land on whoever
# forwards (in the bridge's softirq, in rocelab's sendmmsg), not part of forwarding. Being
# unknown, the address is flooded, by the bridge as by rocelab, to the one other port.
# Prints, per frame size and forwarder, the offered rate (sender) and the delivered rate
# (counter in B), medians over rounds, and delivered / bridge-delivered -- the ratio only
# when the sender offered at least 1.3x what the bridge delivers (else "bounded by the
# sender"). Everything it makes is removed on exit, also on Ctrl-C or failure.
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${1:-4}
ROUNDS=${2:-3}
THREADS=${SENDER_THREADS:-2}
[ "$(id -u)" -eq 0 ] || { echo "bench_veth.sh: run as root (namespaces, raw sockets)" >&2; exit 1; }
command -v ip >/dev/null || { echo "bench_veth.sh: needs iproute2 (apt-get install iproute2)" >&2; exit 1; }
command -v cc >/dev/null || { echo "bench_veth.sh: needs a C compiler for the sender (apt-get install build-essential)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench_veth.sh: needs python3" >&2; exit 1; }

T0=$(date +%s)
cargo build --release --quiet
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/rocelab
TMP=$(mktemp -d /tmp/rocelab-bench.XXXXXX)
cc -O2 -pthread -o "$TMP/bench_sender" scripts/bench_sender.c
SENDER=$TMP/bench_sender

P="rlb$$-"                      # a per-run prefix: rl + pid, as rocelab names things
NSA=${P}a NSB=${P}b
SA=${P}sa SB=${P}sb HA=${P}ha HB=${P}hb BR=${P}br DA=${P}da DB=${P}db
NF=/proc/sys/net/bridge/bridge-nf-call-iptables
NF_OLD=""
SWITCH_PID=""
COUNTER_PID=""
BACK_PID=""
SENDB_PID=""

cleanup() {
    [ -n "$SWITCH_PID" ] && kill "$SWITCH_PID" 2>/dev/null && wait "$SWITCH_PID" 2>/dev/null || true
    [ -n "$COUNTER_PID" ] && kill "$COUNTER_PID" 2>/dev/null && wait "$COUNTER_PID" 2>/dev/null || true
    [ -n "$BACK_PID" ] && kill "$BACK_PID" 2>/dev/null && wait "$BACK_PID" 2>/dev/null || true
    [ -n "$SENDB_PID" ] && kill "$SENDB_PID" 2>/dev/null && wait "$SENDB_PID" 2>/dev/null || true
    ip link del "$BR" 2>/dev/null || true
    ip link del "$SA" 2>/dev/null || true
    ip link del "$SB" 2>/dev/null || true
    ip netns del "$NSA" 2>/dev/null || true
    ip netns del "$NSB" 2>/dev/null || true
    if [ -n "$NF_OLD" ] && [ -w "$NF" ]; then echo "$NF_OLD" > "$NF"; fi
    rm -rf "$TMP"
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
# The direct pair for the sender-alone runs: A and B joined with nothing between.
ip link add "$DA" netns "$NSA" type veth peer name "$DB" netns "$NSB"
ip -n "$NSA" link set "$DA" up
ip -n "$NSB" link set "$DB" up
MAC_A=$(ip netns exec "$NSA" cat /sys/class/net/"$HA"/address)
MAC_B=$(ip netns exec "$NSB" cat /sys/class/net/"$HB"/address)
SINK_MAC=02:00:00:00:00:fe      # no interface has it: see the header

if [ -e "$NF" ]; then NF_OLD=$(cat "$NF"); echo 0 > "$NF"; fi

# The frames: what `rocelab traffic send` builds (MACs of A's and B's forwarded interfaces,
# 198.18.0.1 -> 198.18.0.2, DSCP 26, ICRC valid), captured off the direct pair in B; with
# BIDIR=1 also B's frames to A (198.18.0.2 -> 198.18.0.1), captured in A.
capture_frame() {    # SIZE FILE [reverse]
    local size=$1 file=$2 cap
    local from=$NSA to=$NSB out=$DA in=$DB dst=$MAC_B src=$MAC_A sip=198.18.0.1 dip=198.18.0.2
    if [ "${3:-}" = reverse ]; then
        from=$NSB to=$NSA out=$DB in=$DA dst=$MAC_A src=$MAC_B sip=198.18.0.2 dip=198.18.0.1
    fi
    ip netns exec "$to" python3 - "$in" "$file" "$SINK_MAC" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((sys.argv[1], 0))
s.settimeout(10)
while True:
    f = s.recv(65536)
    # IPv4, no options, UDP to 4791: RoCEv2
    if len(f) >= 58 and f[12:14] == b"\x08\x00" and f[14] == 0x45 and f[23] == 17 \
            and f[36:38] == (4791).to_bytes(2, "big"):
        if f[15] >> 2 != 26:
            sys.exit(f"captured frame has DSCP {f[15] >> 2}, not 26")
        # To a MAC nobody has: the far side's IP stack drops it at once (see the header).
        open(sys.argv[2], "wb").write(bytes.fromhex(sys.argv[3].replace(":", "")) + f[6:])
        break
EOF
    cap=$!
    sleep 0.3
    ip netns exec "$from" "$BIN" traffic send --iface "$out" --dst-mac "$dst" --src-mac "$src" \
        --src-ip "$sip" --dst-ip "$dip" --size "$size" --count 3 --duration 1 >/dev/null
    wait "$cap" || { echo "bench_veth.sh: could not capture a $size B frame from rocelab traffic send" >&2; exit 1; }
}
BIDIR=${BIDIR:-0}
capture_frame 62 "$TMP/frame64"
printf '\0\0' >> "$TMP/frame64"         # 62 B RoCE packet + 2 B Ethernet padding = 64 B
capture_frame 1082 "$TMP/frame1082"
if [ "$BIDIR" = 1 ]; then
    capture_frame 62 "$TMP/back64" reverse
    printf '\0\0' >> "$TMP/back64"
    capture_frame 1082 "$TMP/back1082" reverse
fi

start_forwarder() {
    case $1 in
        direct) ;;
        bridge)
            ip link add "$BR" type bridge
            ip link set "$SA" master "$BR"
            ip link set "$SB" master "$BR"
            ip link set "$BR" up ;;
        pnet|mmap|mmap2)
            local io=$1 cores=()
            [ "$1" = mmap2 ] && io=mmap cores=(--cores 0,1)
            "$BIN" switch --preset default --port p0="$SA" --port p1="$SB" --io "$io" \
                "${cores[@]}" --interval 0 >/dev/null 2>&1 &
            SWITCH_PID=$!
            sleep 0.5 ;;
    esac
}

stop_forwarder() {
    case $1 in
        direct) ;;
        bridge) ip link del "$BR" ;;
        *) kill "$SWITCH_PID"; wait "$SWITCH_PID" 2>/dev/null || true; SWITCH_PID="" ;;
    esac
}

# One run (in this shell, so cleanup sees the PIDs): A sends for SECS seconds (and B too
# with BIDIR=1); appends "SIZE FORWARDER OFFERED DELIVERED" to $RES, in pps (frames the
# senders' sockets took / their seconds, RoCE frames counted at the far ends / the same
# seconds).
RES=$TMP/results
run_once() {
    local fwd=$1 size=$2 round=$3 out back snd sndb tx rx line
    tx=$HA rx=$HB
    [ "$fwd" = direct ] && tx=$DA rx=$DB
    start_forwarder "$fwd"
    out=$(mktemp -p "$TMP") back=$(mktemp -p "$TMP") sndb=$(mktemp -p "$TMP")
    ip netns exec "$NSB" "$BIN" traffic count --iface "$rx" --duration $((SECS + 2)) > "$out" &
    COUNTER_PID=$!
    if [ "$BIDIR" = 1 ]; then
        ip netns exec "$NSA" "$BIN" traffic count --iface "$tx" --duration $((SECS + 2)) > "$back" &
        BACK_PID=$!
    fi
    sleep 0.3
    if [ "$BIDIR" = 1 ]; then
        ip netns exec "$NSB" "$SENDER" "$rx" "$TMP/back$size" "$SECS" "$THREADS" > "$sndb" &
        SENDB_PID=$!
    fi
    snd=$(ip netns exec "$NSA" "$SENDER" "$tx" "$TMP/frame$size" "$SECS" "$THREADS")
    if [ "$BIDIR" = 1 ]; then
        wait "$SENDB_PID"; SENDB_PID=""
        wait "$BACK_PID"; BACK_PID=""
    fi
    wait "$COUNTER_PID"
    COUNTER_PID=""
    stop_forwarder "$fwd"
    line=$(python3 -c '
import json, sys
s = json.loads(sys.argv[1]); c = json.load(open(sys.argv[2]))
sent, got = s["sent"], c["roce"]
if sys.argv[3] == "1":
    sb = json.load(open(sys.argv[4])); cb = json.load(open(sys.argv[5]))
    sent += sb["sent"]; got += cb["roce"]
print(round(sent / s["seconds"]), round(got / s["seconds"]))' "$snd" "$out" "$BIDIR" "$sndb" "$back")
    rm -f "$out" "$back" "$sndb"
    echo "$size $fwd $line" >> "$RES"
    echo "round $round  $size B  $fwd: offered/delivered pps $line" >&2
}

read -r -a CHOSEN <<< "${FORWARDERS:-bridge pnet mmap mmap2}"
for f in "${CHOSEN[@]}"; do
    case $f in bridge|pnet|mmap|mmap2) ;; *) echo "bench_veth.sh: unknown forwarder $f" >&2; exit 1 ;; esac
done
[ "$(nproc)" -ge 2 ] || CHOSEN=("${CHOSEN[@]/mmap2}")
FORWARDERS=(direct bridge)
for f in "${CHOSEN[@]}"; do [ -n "$f" ] && [ "$f" != bridge ] && FORWARDERS+=("$f"); done
SIZES=(64 1082)
for size in "${SIZES[@]}"; do
    for round in $(seq "$ROUNDS"); do
        for fwd in "${FORWARDERS[@]}"; do
            run_once "$fwd" "$size" "$round"
        done
    done
done

python3 - "$RES" "$(nproc)" "$THREADS" "$SECS" "$ROUNDS" "$(( $(date +%s) - T0 ))" "$BIDIR" <<'EOF'
import statistics, sys
res, cpus, threads, secs, rounds, took, bidir = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
runs = {}
for line in open(res):
    size, fwd, off, dl = line.split()
    runs.setdefault((int(size), fwd), []).append((int(off), int(dl)))
med = {k: (statistics.median(o for o, _ in v), statistics.median(d for _, d in v), [d for _, d in v])
       for k, v in runs.items()}
sizes = sorted({s for s, _ in runs})
names = {'bridge': 'Linux kernel bridge', 'pnet': 'rocelab switch --io pnet',
         'mmap': 'rocelab switch --io mmap', 'mmap2': '... --io mmap --cores 0,1'}
print(f"\nveth forwarding, {secs} s per run, {rounds} rounds (medians); sender: C, "
      f"{threads} AF_PACKET sockets, sendmmsg x64, qdisc bypass; sizes without FCS")
if bidir == "1":
    print("both ways at once (BIDIR=1): a sender and a counter in each namespace; rates are sums")
print("\nsender alone (A -> direct veth pair -> B, no forwarder):" if bidir != "1"
      else "\nsenders alone (A <-> direct veth pair <-> B, no forwarder):")
for size in sizes:
    o, d, _ = med[(size, 'direct')]
    b = med[(size, 'bridge')][1]
    verdict = ("fast enough" if o >= 1.3 * b else "NOT fast enough") + " to measure the bridge"
    print(f"  {size:>5} B: offered {o:>11,.0f} pps, sink received {d:>11,.0f} pps; "
          f"offered / bridge delivered = {o / b:.2f} ({verdict}, needs >= 1.30)")
print()
print(f"{'frame':>7}  {'forwarder':<26} {'offered pps':>12} {'delivered pps':>14} {'lost':>6}  "
      f"{'delivered/bridge':<22} delivered per round")
bridge_short = []
for size in sizes:
    base = med[(size, 'bridge')][1]
    for fwd in [f for f in ('bridge', 'pnet', 'mmap', 'mmap2') if (size, f) in med]:
        o, d, per = med[(size, fwd)]
        if o >= 1.3 * base:
            ratio = f"{d / base:.2f}"
        elif fwd != 'bridge' and d < 0.9 * o and med[(size, 'bridge')][0] < 1.3 * base:
            # This forwarder lost frames (it set its own rate) but the bridge's rate is only
            # a lower bound of its capacity: the ratio is an upper bound.
            ratio = f"<= {d / base:.2f}"
        else:
            ratio = "bounded by the sender"
        if fwd == 'bridge' and o < 1.3 * base:
            bridge_short.append(size)
        lost = f"{max(0.0, 1 - d / o):.0%}" if o else "-"
        print(f"{size:>5} B  {names[fwd]:<26} {o:>12,.0f} {d:>14,.0f} {lost:>6}  {ratio:<22} {per}")
if bridge_short:
    print(f"""
The bridge rows ({', '.join(f'{s} B' for s in bridge_short)}) are bounded by the sender: on veth the bridge
forwards in the sender's own softirq (veth xmit -> netif_rx -> bridge -> veth), so it slows
the sender down rather than dropping, and was offered about what it delivered although the
sender alone offers far more (above). Its delivered rate is a lower bound of what the bridge
can do on this machine, and the rocelab ratios, taken against it, upper bounds. A ratio is
printed for a row only when that row's offered rate was at least 1.3x the bridge's delivered
rate: then the sender outran the bridge's rate and the forwarder, not the sender, set the
delivered rate (see "lost"). A row that lost frames at a lower offered rate set its own
rate too, but against a bridge figure that is only a lower bound: its ratio reads "<=".""")
print(f"""
Bounded by the machine: this machine has {cpus} CPU(s), shared by the sender ({threads} threads),
the forwarder (softirq for the bridge, a process for rocelab switch) and the counter.
Every figure above is therefore what each gets of {cpus} shared CPU(s), not its capacity on
its own cores: the offered rates fall below the sender-alone rate because the forwarder and
counter take CPU from the sender, and the delivered rates are bounded by the CPU left to the
forwarder and by the counter (the sink alone takes the "sink received" rate above at most).""")
if cpus >= 2 + int(threads):
    print("(There are enough CPUs for one per thread here, but they still share caches and softirqs.)")
print(f"\nbench_veth.sh took {took} s in all.")
EOF

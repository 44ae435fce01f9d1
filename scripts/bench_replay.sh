#!/usr/bin/env bash
# rocelab replay against tcpdump on the same capture, in turns: one million RoCEv2 RC WRITE
# frames of 1082 B (1024 B of payload, DSCP 26, ECT(0)) from port p0's peer, 1 µs apart,
# through a default switch to port p1, written as pcapng (`rocelab replay --in p0=BIG
# --in p1=EMPTY --out OUT`), against `tcpdump -r BIG -w OUT` copying the same file. The
# frames go to a MAC no port has learned, so the switch floods each to the one other port:
# the whole pipeline (parse, classify, MMU, RED, scheduling at the port's speed) runs per
# frame. The capture is made here with Python's struct (no scapy), ICRC zero (replay
# forwards it as a switch does, without checking).
#
# Usage: scripts/bench_replay.sh [ROUNDS] (default 5). Needs tcpdump and python3; builds
# rocelab in release. Prints each command's wall, user and system seconds per round and
# their medians, and the median of the per-round ratios rocelab / tcpdump (wall). Both read
# the same file from the page cache (one warm-up round of each is not counted).
set -euo pipefail
rounds=${1:-5}
cd "$(dirname "$0")/.."
command -v tcpdump >/dev/null || { echo "tcpdump is not installed (apt-get install tcpdump)" >&2; exit 2; }
cargo build --release --quiet
bin=target/release/rocelab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work" <<'PY'
import struct, sys
work = sys.argv[1]
def frame(psn):
    eth = bytes.fromhex("020000000002" "020000000001") + b"\x08\x00"
    total = 1082 - 14
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, (26 << 2) | 2, total, 0, 0x4000, 64, 17, 0,
                     bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2]))
    udp = struct.pack("!HHHH", 49152, 4791, total - 20, 0)
    bth = struct.pack("!BBHII", 0x07, 0x40, 0xFFFF, 0x11, psn & 0xFFFFFF)
    return eth + ip + udp + bth + bytes(1082 - 14 - 20 - 8 - 12 - 4) + b"\0\0\0\0"
header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
open(f"{work}/empty.pcap", "wb").write(header)
template = frame(0)
with open(f"{work}/big.pcap", "wb") as out:
    out.write(header)
    for i in range(1_000_000):
        f = template[:50] + struct.pack("!I", i & 0xFFFFFF) + template[54:]
        out.write(struct.pack("<IIII", i // 1_000_000, i % 1_000_000, len(f), len(f)) + f)
PY
replay=("$bin" replay --in "p0=$work/big.pcap" --in "p1=$work/empty.pcap" --out "$work/out-r.pcapng")
dump=(tcpdump -r "$work/big.pcap" -w "$work/out-t.pcap")
# wall user sys of one run, seconds
timed() {
    /usr/bin/time -o "$work/time" -f "%e %U %S" "$@" >/dev/null 2>&1
    cat "$work/time"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
timed "${replay[@]}" >/dev/null; timed "${dump[@]}" >/dev/null
printf "%-6s %-24s %-24s %s\n" round "rocelab wall/user/sys" "tcpdump wall/user/sys" ratio
: >"$work/r"; : >"$work/t"; : >"$work/q"
for i in $(seq 1 "$rounds"); do
    r=$(timed "${replay[@]}"); t=$(timed "${dump[@]}")
    echo "$r" >>"$work/r"; echo "$t" >>"$work/t"
    q=$(awk -v a="${r%% *}" -v b="${t%% *}" 'BEGIN {printf "%.3f", a / b}')
    echo "$q" >>"$work/q"
    printf "%-6s %-24s %-24s %s\n" "$i" "$r" "$t" "$q"
done
for col in 1 2 3; do
    rm_=$(cut -d' ' -f$col "$work/r" | median); tm=$(cut -d' ' -f$col "$work/t" | median)
    printf "median %-6s rocelab %s s, tcpdump %s s\n" "$(echo wall user sys | cut -d' ' -f$col)" "$rm_" "$tm"
done
echo "median of per-round ratios rocelab / tcpdump (wall): $(median <"$work/q")"

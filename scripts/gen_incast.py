#!/usr/bin/env python3
"""Write an N:1 RoCEv2 incast capture for `rocelab replay`.

Usage: python3 scripts/gen_incast.py OUT.pcap [--senders 2] [--frames 3000]
                                          [--gbps 100] [--lossy-frames 0] [--dscp 26]

Hosts 198.18.1.1 .. 198.18.1.N each send --frames RC RDMA WRITE Middle frames
(1 KiB payload, 1082 bytes, DSCP 26 by default, ECT(0): the lossless class of
rocelab's default and nexus-ai configurations; SONiC's maps make DSCP 3 and 4
lossless, so give --dscp 3 for the sonic preset) back to back at --gbps to
198.18.1.100, all starting
at the same instant: N times what the receiver's port can carry. With
--lossy-frames, each sender also sends that many DSCP 0 (lossy class) frames
interleaved. The receiver sends one frame first, so that a switch knows where
it is. ICRCs are computed by scapy. Replay it split by MAC:

    rocelab replay --split-by mac OUT.pcap --pcap out.pcapng
"""

import argparse
import os
import sys
from decimal import Decimal

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402
from scapy.packet import Raw  # noqa: E402
from scapy.utils import PcapWriter  # noqa: E402

from roce_layers import BTH  # noqa: E402

WRITE_MIDDLE = 0x07
ROCEV2_PORT = 4791
T0 = Decimal(1_700_001_000)
# Ethernet wire overhead per frame: FCS 4, preamble and SFD 8, inter-frame gap 12.
WIRE_OVERHEAD = 24


def host(i):
    return "02:00:c6:12:01:%02x" % i, "198.18.1.%d" % i


def write_frame(dqp, psn, src, dst, dscp, ecn, payload):
    (smac, sip), (dmac, dip) = src, dst
    return (Ether(src=smac, dst=dmac)
            / IP(src=sip, dst=dip, tos=(dscp << 2) | ecn, flags="DF", id=psn & 0xFFFF)
            / UDP(sport=0xC000 + dqp, dport=ROCEV2_PORT, chksum=0)
            / BTH(opcode=WRITE_MIDDLE, pkey=0xFFFF, dqpn=dqp, psn=psn)
            / Raw(payload))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--senders", type=int, default=2)
    ap.add_argument("--frames", type=int, default=3000)
    ap.add_argument("--gbps", type=float, default=100.0)
    ap.add_argument("--lossy-frames", type=int, default=0)
    ap.add_argument("--dscp", type=int, default=26)
    args = ap.parse_args()
    if args.senders < 1 or args.frames < 1:
        ap.error("--senders and --frames must be at least 1")
    if not 0 <= args.dscp <= 63:
        ap.error("--dscp must be 0 to 63")

    receiver = host(100)
    payload = bytes(range(256)) * 4
    frame_len = 14 + 20 + 8 + 12 + len(payload) + 4
    gap_ns = Decimal((frame_len + WIRE_OVERHEAD) * 8) / Decimal(args.gbps)
    writer = PcapWriter(args.out, nano=True, linktype=1, sync=False)
    hello = write_frame(0x64, 0, receiver, host(1), args.dscp, 2, payload[:16])
    hello.time = T0
    writer.write(hello)
    events = []
    for s in range(1, args.senders + 1):
        lossy_every = args.frames // args.lossy_frames if args.lossy_frames else 0
        t = T0 + Decimal("0.000001")
        for i in range(args.frames + args.lossy_frames):
            lossy = lossy_every and i % (lossy_every + 1) == lossy_every
            dscp, ecn = (0, 0) if lossy else (args.dscp, 2)
            pkt = write_frame(0x10 + s, i, host(s), receiver, dscp, ecn, payload)
            pkt.time = t
            events.append((t, s, pkt))
            t += gap_ns / Decimal(10 ** 9)
    events.sort(key=lambda e: (e[0], e[1]))
    for _, _, pkt in events:
        writer.write(pkt)
    writer.close()
    print("%s: %d senders x %d frames of %d bytes at %g Gb/s into %s"
          % (args.out, args.senders, args.frames, frame_len, args.gbps, receiver[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

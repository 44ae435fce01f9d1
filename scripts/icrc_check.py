#!/usr/bin/env python3
"""Print the stored and the scapy-computed RoCEv2 ICRC of every RoCE frame.

Usage: python3 scripts/icrc_check.py FILE.pcap|FILE.pcapng

For every frame that scapy dissects as UDP destination port 4791 carrying a
BTH, one JSON line is printed:

    {"index": N, "icrc_stored": "0x%08x", "icrc_scapy": "0x%08x"}

index is 1-based.  icrc_stored is the 32-bit value scapy dissected into
BTH.icrc (the last four frame bytes read big-endian; the CRC itself is stored
least-significant byte first, so this is the byte-swapped CRC, as in tshark's
infiniband.invariant.crc).  icrc_scapy is the same field after copying the
packet, setting BTH.icrc = None, rebuilding it with raw() and dissecting the
result again.

Frames that are not RoCE print nothing.  IPv4 fragments (MF set or fragment
offset != 0) are not RoCE either: scapy still dissects a first fragment
(offset 0, MF set) as UDP/BTH, but its "ICRC" is just the last four bytes of
the fragment, so such frames are skipped as well.

Exit status: 0 on success, 2 if the file cannot be read.
"""

import json
import os
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from scapy.error import Scapy_Exception  # noqa: E402
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.utils import PcapReader  # noqa: E402

from roce_layers import BTH  # noqa: E402

ROCEV2_PORT = 4791


def roce_bth(pkt):
    """The BTH layer if pkt is a RoCEv2 frame (UDP dport 4791, BTH, not an
    IPv4 fragment), else None."""
    udp = pkt.getlayer(UDP)
    if udp is None or udp.dport != ROCEV2_PORT:
        return None
    if not isinstance(udp.payload, BTH):
        return None
    ip = udp.underlayer
    if isinstance(ip, IP) and (ip.flags.MF or ip.frag != 0):
        return None
    return udp.payload


def icrc_pair(pkt):
    """(stored, computed-by-scapy) ICRC of a RoCE frame, or None if not RoCE."""
    bth = roce_bth(pkt)
    if bth is None:
        return None
    stored = bth.icrc
    copy = pkt.copy()
    copy[BTH].icrc = None
    rebuilt = copy.__class__(bytes(copy))
    return stored, rebuilt[BTH].icrc


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: icrc_check.py FILE.pcap|FILE.pcapng\n")
        return 2
    path = argv[1]
    out = sys.stdout
    try:
        reader = PcapReader(path)
    except (OSError, Scapy_Exception, EOFError, ValueError) as exc:
        sys.stderr.write("icrc_check.py: cannot read %s: %s\n" % (path, exc))
        return 2
    try:
        with reader:
            index = 0
            while True:
                try:
                    pkt = reader.read_packet()
                except EOFError:
                    break
                index += 1
                pair = icrc_pair(pkt)
                if pair is None:
                    continue
                out.write(json.dumps({
                    "index": index,
                    "icrc_stored": "0x%08x" % pair[0],
                    "icrc_scapy": "0x%08x" % pair[1],
                }) + "\n")
    except (OSError, Scapy_Exception, ValueError, struct.error) as exc:
        sys.stderr.write("icrc_check.py: error reading %s: %s\n" % (path, exc))
        return 2
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Generate rocelab's reference captures and their expected values.

Usage: python3 scripts/gen_pcaps.py [--out DIR]   (from anywhere; needs scapy==2.8.0)

--out DIR writes somewhere else than pcaps/ (the tests use it to check that the
committed captures are what this script makes).

Writes into <repo>/pcaps/ (resolved from this file's location):

    roce_rc_ipv4.pcap     every RC opcode + UD SEND Only (w/Imm) + CNP, IPv4
    roce_rc_ipv6.pcap     the same opcode set over IPv6
    roce_vlan.pcap        802.1Q-tagged RoCE (IPv4 and IPv6), PCP 0..7, DEI
    roce_dscp_ecn.pcap    RDMA WRITE Only with DSCP x ECN combinations, v4 and v6
    mac_control.pcap      802.1Qbb PFC and 802.3x PAUSE frames
    non_roce.pcap         frames that must not be taken for RoCE
    roce_streams.pcap     three QPs with gaps, go-back-N, CNPs, CE marks, PFC
    roce_mixed.pcapng     a handful of the above kinds in pcapng

and beside each X.pcap / X.pcapng an X.json with the expected field values.

Every value in the JSON files is read back from the packets scapy dissects
when it reads the written capture file again (it is checked that the bytes
and timestamps read back are the ones built), never typed in twice.  The
roce_streams summary is computed in Python from those per-frame values.

Output is deterministic: fixed timestamps (integer nanoseconds), payload bytes
and UDP source ports from seeded random.Random instances, no clock reads.
Running the script twice gives byte-identical files.
"""

import ipaddress
import json
import os
import random
import struct
import sys
from decimal import Decimal

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import scapy  # noqa: E402
from scapy.compat import raw  # noqa: E402
from scapy.layers.dns import DNS, DNSQR  # noqa: E402
from scapy.layers.inet import ICMP, IP, TCP, UDP, fragment  # noqa: E402
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6  # noqa: E402
from scapy.layers.l2 import ARP, Dot1Q, Ether  # noqa: E402
from scapy.layers.vxlan import VXLAN  # noqa: E402
from scapy.packet import Padding, Raw  # noqa: E402
from scapy.utils import EDecimal, PcapNgWriter, PcapWriter, rdpcap  # noqa: E402
from scapy.contrib.mac_control import (  # noqa: E402
    MACControlClassBasedFlowControl, MACControlPause)
from scapy.contrib.roce import BTH, AETH, cnp  # noqa: E402

from roce_layers import DETH, RETH, ImmDt, TRANSPORT_HEADERS  # noqa: E402
from icrc_check import icrc_pair, roce_bth  # noqa: E402

REPO = os.path.dirname(HERE)
OUT_DIR = os.path.join(REPO, "pcaps")
GENERATOR = "scripts/gen_pcaps.py"

ROCEV2_PORT = 4791
NS = 10 ** 9

# ECN codepoints (low two bits of TOS / traffic class).
NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3

# BTH opcodes used here (IBA Table 38; 0x81 is the RoCEv2 CNP).
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_LAST_IMM = 0x00, 0x01, 0x02, 0x03
SEND_ONLY, SEND_ONLY_IMM = 0x04, 0x05
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_LAST_IMM = 0x06, 0x07, 0x08, 0x09
WRITE_ONLY, WRITE_ONLY_IMM, READ_REQ = 0x0A, 0x0B, 0x0C
READ_RESP_FIRST, READ_RESP_MIDDLE = 0x0D, 0x0E
READ_RESP_LAST, READ_RESP_ONLY, ACK = 0x0F, 0x10, 0x11
ATOMIC_ACK = 0x12
UD_SEND_ONLY, UD_SEND_ONLY_IMM = 0x64, 0x65
CNP = 0x81

# AETH syndromes.
SYN_ACK = 0x1F          # ACK, credit count 31 (invalid credits)
SYN_NAK_PSN = 0x60      # NAK, PSN sequence error
SYN_RNR = 0x20          # RNR NAK, timer field 0

# Addresses: 198.18.0.0/15 (RFC 2544 benchmarking) and documentation IPv6.
H1_V4, H2_V4, H3_V4 = "198.18.0.1", "198.18.0.2", "198.18.0.3"
H1_V6, H2_V6, H3_V6 = "2001:db8::1", "2001:db8::2", "fd00:198:18::3"
H1_MAC, H2_MAC, H3_MAC = "02:00:c6:12:00:01", "02:00:c6:12:00:02", "02:00:c6:12:00:03"
SW_MAC = "02:00:5e:10:00:fe"
PAUSE_DST = "01:80:c2:00:00:01"
BCAST = "ff:ff:ff:ff:ff:ff"


# --------------------------------------------------------------------------
# Frame builders
# --------------------------------------------------------------------------

class Flow:
    """Per-file source of deterministic payload bytes, UDP source ports and
    IPv4 identification values."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.ip_id = 0x1000

    def payload(self, n):
        return self.rng.randbytes(n)

    def sport(self):
        # RoCEv2 recommends the source port for ECMP entropy, 0xC000-0xFFFF.
        return self.rng.randrange(0xC000, 0x10000)

    def next_id(self):
        self.ip_id = (self.ip_id + 1) & 0xFFFF
        return self.ip_id


def l2(mac_src, mac_dst, vlan=None):
    """Ether, optionally with one 802.1Q tag given as (pcp, vid, dei)."""
    frame = Ether(src=mac_src, dst=mac_dst)
    if vlan is not None:
        pcp, vid, dei = vlan
        frame = frame / Dot1Q(prio=pcp, vlan=vid, dei=int(dei))
    return frame


def l3(flow, ipv, src, dst, dscp, ecn, fl=0, ttl=64, df=True, ip_id=None):
    tos = (dscp << 2) | ecn
    if ipv == 4:
        return IP(src=src, dst=dst, tos=tos, ttl=ttl, flags="DF" if df else 0,
                  id=flow.next_id() if ip_id is None else ip_id)
    return IPv6(src=src, dst=dst, tc=tos, fl=fl, hlim=ttl)


def rocev2(flow, *, ipv=4, src=H1_V4, dst=H2_V4, mac_src=H1_MAC, mac_dst=H2_MAC,
           opcode, dqp, psn, hdrs=(), payload_len=0, dscp=26, ecn=ECT0,
           ack_req=False, se=False, fecn=False, becn=False, pkey=0xFFFF,
           fl=0, vlan=None, udp_chksum=0, bad_icrc=False, sport=None,
           payload=None):
    """Ether[/Dot1Q]/IP|IPv6/UDP 4791/BTH/headers/payload+pad, ICRC by scapy.

    The pad count is (4 - payload_len % 4) % 4 and that many zero bytes follow
    the payload, before the ICRC.  udp_chksum=None lets scapy compute it.
    With bad_icrc the stored ICRC is scapy's value with one bit flipped.
    payload (bytes) replaces the seeded random payload of payload_len bytes.
    """
    if payload is not None:
        payload_len = len(payload)
    else:
        payload = flow.payload(payload_len)
    pad = (4 - payload_len % 4) % 4
    bth = BTH(opcode=opcode, solicited=int(se), padcount=pad, pkey=pkey,
              fecn=int(fecn), becn=int(becn), dqpn=dqp, ackreq=int(ack_req),
              psn=psn)
    pkt = (l2(mac_src, mac_dst, vlan) / l3(flow, ipv, src, dst, dscp, ecn, fl)
           / UDP(sport=flow.sport() if sport is None else sport,
                 dport=ROCEV2_PORT, chksum=udp_chksum)
           / bth)
    for hdr in hdrs:
        pkt = pkt / hdr
    if payload_len or pad:
        pkt = pkt / Raw(payload + b"\x00" * pad)
    if bad_icrc:
        good = Ether(raw(pkt))[BTH].icrc
        pkt[BTH].icrc = good ^ 0x00010000
    return pkt


def cm_rtu_mad(flow):
    """256-byte payload for UD SEND Only to QP1: an IB CM ReadyToUse MAD
    (base version 1, class 0x07 CM, class version 2, method Send), so that
    tshark's MAD dissector (which takes everything to QP1) decodes it."""
    tid = flow.rng.getrandbits(64)
    header = struct.pack("!BBBBHHQHHI", 1, 0x07, 2, 0x03, 0, 0, tid,
                         0x0014, 0, 0)
    comm_ids = struct.pack("!II", flow.rng.getrandbits(32),
                           flow.rng.getrandbits(32))
    return header + comm_ids + b"\x00" * (256 - len(header) - len(comm_ids))


def cnp_frame(flow, *, ipv=4, src=H2_V4, dst=H1_V4, mac_src=H2_MAC,
              mac_dst=H1_MAC, dqp, dscp=48, ecn=ECT0, fl=0, vlan=None,
              udp_chksum=0):
    """A CNP built with scapy's own cnp(): BTH 0x81, BECN=1, PSN 0, 16 zero
    bytes (CNPPadding)."""
    return (l2(mac_src, mac_dst, vlan) / l3(flow, ipv, src, dst, dscp, ecn, fl)
            / UDP(sport=flow.sport(), dport=ROCEV2_PORT, chksum=udp_chksum)
            / cnp(dqp))


def pfc(mac_src, enable, times):
    """802.1Qbb PFC: enable is the 8-bit class-enable vector (bit n =
    priority n), times the eight pause times c0..c7."""
    fields = {"c%d_enabled" % p: (enable >> p) & 1 for p in range(8)}
    fields.update({"c%d_pause_time" % p: times[p] for p in range(8)})
    return (Ether(src=mac_src, dst=PAUSE_DST)
            / MACControlClassBasedFlowControl(**fields))


def pause(mac_src, quanta):
    return Ether(src=mac_src, dst=PAUSE_DST) / MACControlPause(pause_time=quanta)


# --------------------------------------------------------------------------
# Reading the expected values back from scapy
# --------------------------------------------------------------------------

def ts_ns_of(pkt):
    value = Decimal(pkt.time) * NS
    ns = int(value)
    assert value == ns, "timestamp %r is not a whole number of ns" % pkt.time
    return ns


def ip_str(addr):
    return str(ipaddress.ip_address(addr))


def payload_len_of(bth):
    """Bytes between the last transport header and the pad bytes."""
    layer = bth.payload
    while isinstance(layer, TRANSPORT_HEADERS):
        layer = layer.payload
    n = 0
    while layer is not None and layer.__class__.__name__ != "NoPayload":
        if isinstance(layer, Padding):  # Ethernet padding, not RoCE payload
            break
        n += len(layer.self_build())
        layer = layer.payload
    return n - bth.padcount


def describe(pkt, index):
    """The expected-values object of one frame, read from scapy's fields."""
    d = {"index": index, "ts_ns": ts_ns_of(pkt), "len": len(raw(pkt))}
    eth = pkt[Ether]
    d["eth_src"] = eth.src.lower()
    d["eth_dst"] = eth.dst.lower()
    net = eth.payload
    if isinstance(net, Dot1Q):
        d["ethertype"] = net.type
        d["vlan_pcp"] = net.prio
        d["vlan_id"] = net.vlan
        d["vlan_dei"] = bool(net.dei)
        net = net.payload
    else:
        d["ethertype"] = eth.type

    transport = None
    if isinstance(net, IP):
        d["ip_version"] = 4
        d["ip_src"], d["ip_dst"] = ip_str(net.src), ip_str(net.dst)
        d["dscp"], d["ecn"] = net.tos >> 2, net.tos & 3
        transport = net.payload
    elif isinstance(net, IPv6):
        d["ip_version"] = 6
        d["ip_src"], d["ip_dst"] = ip_str(net.src), ip_str(net.dst)
        d["dscp"], d["ecn"] = net.tc >> 2, net.tc & 3
        transport = net.payload
    if isinstance(transport, UDP):
        d["udp_sport"], d["udp_dport"] = transport.sport, transport.dport

    bth = roce_bth(pkt)
    if bth is not None:
        stored, computed = icrc_pair(pkt)
        d.update({
            "bth_opcode": bth.opcode,
            "dest_qp": bth.dqpn,
            "psn": bth.psn,
            "ack_req": bool(bth.ackreq),
            "becn": bool(bth.becn),
            "fecn": bool(bth.fecn),
            "solicited": bool(bth.solicited),
            "pad_count": bth.padcount,
            "pkey": bth.pkey,
            "icrc_ok": stored == computed,
            "payload_len": payload_len_of(bth),
        })
        if RETH in pkt:
            d["reth_va"] = pkt[RETH].va
            d["reth_rkey"] = pkt[RETH].rkey
            d["reth_dma_len"] = pkt[RETH].dmalen
        if AETH in pkt:
            d["aeth_syndrome"] = pkt[AETH].syndrome
            d["aeth_msn"] = pkt[AETH].msn
        if DETH in pkt:
            d["deth_qkey"] = pkt[DETH].qkey
            d["deth_src_qp"] = pkt[DETH].srcqp
        if ImmDt in pkt:
            d["imm_data"] = pkt[ImmDt].imm

    if MACControlClassBasedFlowControl in pkt:
        cbfc = pkt[MACControlClassBasedFlowControl]
        enable = cbfc._reserved << 8
        for p in range(8):
            enable |= getattr(cbfc, "c%d_enabled" % p) << p
        d["pfc_enable"] = enable
        d["pfc_quanta"] = [getattr(cbfc, "c%d_pause_time" % p) for p in range(8)]
    if MACControlPause in pkt:
        d["pause_quanta"] = pkt[MACControlPause].pause_time
    return d


# --------------------------------------------------------------------------
# roce_streams summary
# --------------------------------------------------------------------------

UNSEQUENCED = {ACK, ATOMIC_ACK, CNP}


def summarize(frames):
    qps = {}
    for f in frames:
        if "bth_opcode" not in f:
            continue
        key = (f["ip_dst"], f["dest_qp"])
        q = qps.setdefault(key, {
            "ip_dst": f["ip_dst"], "dest_qp": f["dest_qp"], "frames": 0,
            "bytes": 0, "psn_gaps": 0, "retransmissions": 0, "cnps": 0,
            "ce_marked": 0, "_highest": None})
        q["frames"] += 1
        q["bytes"] += f["len"]
        if f["bth_opcode"] == CNP:
            q["cnps"] += 1
        if f["ecn"] == CE:
            q["ce_marked"] += 1
        if f["bth_opcode"] in UNSEQUENCED:
            continue
        if q["_highest"] is None:
            q["_highest"] = f["psn"]
            continue
        d = (f["psn"] - q["_highest"]) % (1 << 24)
        if d > (1 << 23):
            d -= 1 << 24
        if d == 1:
            q["_highest"] = f["psn"]
        elif d > 1:
            q["psn_gaps"] += 1
            q["_highest"] = f["psn"]
        else:
            q["retransmissions"] += 1

    def qp_order(q):
        a = ipaddress.ip_address(q["ip_dst"])
        return (a.version, int(a), q["dest_qp"])

    qp_list = []
    for q in sorted(qps.values(), key=qp_order):
        del q["_highest"]
        qp_list.append(q)

    priorities = []
    for p in range(8):
        pfc_frames = [f for f in frames
                      if "pfc_enable" in f and (f["pfc_enable"] >> p) & 1]
        priorities.append({
            "priority": p,
            "pfc_frames": len(pfc_frames),
            "xon_frames": sum(1 for f in pfc_frames if f["pfc_quanta"][p] == 0),
            "pause_quanta": sum(f["pfc_quanta"][p] for f in pfc_frames),
        })
    pauses = [f for f in frames if "pause_quanta" in f]
    return {
        "qps": qp_list,
        "priorities": priorities,
        "pause_frames": len(pauses),
        "pause_quanta_total": sum(f["pause_quanta"] for f in pauses),
        "icrc_failures": sum(1 for f in frames
                             if "icrc_ok" in f and not f["icrc_ok"]),
    }


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------

def timeline(base_s, gaps_ns):
    """Absolute ns timestamps: base_s seconds, then cumulative gaps."""
    t = base_s * NS
    out = []
    for g in gaps_ns:
        t += g
        out.append(t)
    return out


def out_dir():
    """pcaps/ in the repository, or the directory given with --out."""
    if "--out" in sys.argv:
        return sys.argv[sys.argv.index("--out") + 1]
    return OUT_DIR


def write_capture(name, pkts, base_s, seed, pcapng=False, summary=False):
    """Write pkts with deterministic timestamps, read the file back with
    scapy, check it, and write the JSON of expected values."""
    rng = random.Random(seed ^ 0x5EED)
    # Gaps: whole microseconds plus (classic pcap only) a ns remainder, so
    # that ns resolution matters.
    if pcapng:
        gaps = [rng.randrange(1, 50) * 1000 for _ in pkts]
    else:
        gaps = [rng.randrange(1, 50) * 1000 + rng.randrange(0, 1000)
                for _ in pkts]
    stamps = timeline(base_s, gaps)
    path = os.path.join(out_dir(), name)
    built = []
    if pcapng:
        # scapy's PcapNgWriter writes no if_tsresol option, so the file has
        # the default microsecond resolution: every timestamp here is a whole
        # number of microseconds.  sec is passed as an exact Decimal because
        # the writer computes int(sec * 1000000), which a float can get wrong.
        writer = PcapNgWriter(path)
    else:
        writer = PcapWriter(path, nano=True, linktype=1, sync=True)
    with writer:
        for pkt, ts in zip(pkts, stamps):
            pkt.time = EDecimal(ts) / NS
            data = raw(pkt)
            built.append((data, ts))
            if not writer.header_present:
                writer.write_header(pkt)
            if pcapng:
                writer.write_packet(pkt, sec=EDecimal(ts) / NS)
            else:
                writer.write_packet(pkt, sec=ts // NS, usec=ts % NS)

    back = rdpcap(path)
    assert len(back) == len(built), name
    frames = []
    for i, (pkt, (data, ts)) in enumerate(zip(back, built), start=1):
        assert raw(pkt) == data, "%s frame %d: bytes differ on read-back" % (name, i)
        frame = describe(pkt, i)
        assert frame["ts_ns"] == ts, "%s frame %d: time differs" % (name, i)
        frames.append(frame)

    doc = {"generator": GENERATOR, "scapy": scapy.__version__,
           "frames": frames}
    if summary:
        doc["summary"] = summarize(frames)
    json_path = os.path.splitext(path)[0] + ".json"
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    return frames


# --------------------------------------------------------------------------
# The captures
# --------------------------------------------------------------------------

def opcode_set(flow, ipv, addr1, addr2, tcs, fls, udp_chksums, bad_icrc_at=None):
    """One frame of every RC opcode (plus UD 0x64/0x65 and CNP).

    addr1 is the requester, addr2 the responder.  tcs is a list of
    (dscp, ecn) cycled over the data frames; fls the same for flow labels;
    udp_chksums the same for the UDP checksum (0, or None = computed).
    """
    n = [0]

    def nxt(seq):
        return seq[n[0] % len(seq)]

    def frame(src, dst, mac_src, mac_dst, **kw):
        dscp, ecn = nxt(tcs)
        kw.setdefault("dscp", dscp)
        kw.setdefault("ecn", ecn)
        kw.setdefault("fl", nxt(fls))
        kw.setdefault("udp_chksum", nxt(udp_chksums))
        n[0] += 1
        return rocev2(flow, ipv=ipv, src=src, dst=dst,
                      mac_src=mac_src, mac_dst=mac_dst, **kw)

    def fwd(**kw):
        return frame(addr1, addr2, H1_MAC, H2_MAC, **kw)

    def rev(**kw):
        return frame(addr2, addr1, H2_MAC, H1_MAC, **kw)

    qp_a, qp_b = 0x000012, 0x000034      # requester's QP at the responder, and back
    va = 0x00007F3A5C200000
    pkts = [
        # SEND First/Middle/Last: PMTU-sized first and middle (pad 0), last pad 3
        fwd(opcode=SEND_FIRST, dqp=qp_a, psn=0, payload_len=256),
        fwd(opcode=SEND_MIDDLE, dqp=qp_a, psn=1, payload_len=256),
        fwd(opcode=SEND_LAST, dqp=qp_a, psn=2, payload_len=13, ack_req=True, se=True),
        fwd(opcode=SEND_LAST_IMM, dqp=qp_a, psn=3, payload_len=10,
            hdrs=[ImmDt(imm=0xDEADBEEF)], ack_req=True, se=True),
        # (payloads under 8 bytes on SEND make tshark 4.0's RPC-over-RDMA
        # heuristic throw "Malformed Packet"; 71 bytes still gives pad 1)
        fwd(opcode=SEND_ONLY, dqp=0xFFFFFF, psn=0xFFFFFF, payload_len=71,
            pkey=0x8001),
        fwd(opcode=SEND_ONLY_IMM, dqp=qp_a, psn=4, payload_len=64,
            hdrs=[ImmDt(imm=0x00000001)], se=True),
        # RDMA WRITE First/Middle/Last (600 bytes)
        fwd(opcode=WRITE_FIRST, dqp=qp_a, psn=5, payload_len=256,
            hdrs=[RETH(va=va, rkey=0x00001234, dmalen=600)]),
        fwd(opcode=WRITE_MIDDLE, dqp=qp_a, psn=6, payload_len=256),
        fwd(opcode=WRITE_LAST, dqp=qp_a, psn=7, payload_len=88, ack_req=True),
        fwd(opcode=WRITE_LAST_IMM, dqp=qp_a, psn=8, payload_len=5,
            hdrs=[ImmDt(imm=0x80000000)], ack_req=True),
        fwd(opcode=WRITE_ONLY, dqp=0x000FED, psn=9, payload_len=18, fecn=True,
            hdrs=[RETH(va=0xFFFFFFFFFFFFF000, rkey=0xFFFFFFFF, dmalen=18)],
            ack_req=True),
        fwd(opcode=WRITE_ONLY_IMM, dqp=0x800000, psn=0x7FFFFF, payload_len=33,
            hdrs=[RETH(va=0x1000, rkey=0x000002D5, dmalen=33),
                  ImmDt(imm=0x0000CAFE)], ack_req=True, se=True),
        # RDMA READ: request 600 bytes, responses First/Middle/Last; and an Only
        fwd(opcode=READ_REQ, dqp=qp_a, psn=10, ack_req=True,
            hdrs=[RETH(va=va + 0x1000, rkey=0x00001234, dmalen=600)]),
        rev(opcode=READ_RESP_FIRST, dqp=qp_b, psn=10, payload_len=256,
            hdrs=[AETH(syndrome=SYN_ACK, msn=3)]),
        rev(opcode=READ_RESP_MIDDLE, dqp=qp_b, psn=11, payload_len=256),
        rev(opcode=READ_RESP_LAST, dqp=qp_b, psn=12, payload_len=88,
            hdrs=[AETH(syndrome=SYN_ACK, msn=4)]),
        rev(opcode=READ_RESP_ONLY, dqp=qp_b, psn=13, payload_len=3,
            hdrs=[AETH(syndrome=SYN_ACK, msn=5)], pkey=0x7FFF),
        # ACK, PSN-sequence-error NAK, RNR NAK
        rev(opcode=ACK, dqp=qp_b, psn=9, hdrs=[AETH(syndrome=SYN_ACK, msn=2)]),
        rev(opcode=ACK, dqp=qp_b, psn=14, hdrs=[AETH(syndrome=SYN_NAK_PSN, msn=5)]),
        rev(opcode=ACK, dqp=qp_b, psn=0xFFFFFE,
            hdrs=[AETH(syndrome=SYN_RNR, msn=0xFFFFFF)]),
        # UD SEND Only (RDMA-CM MAD to QP1) and UD SEND Only w/Imm
        fwd(opcode=UD_SEND_ONLY, dqp=0x000001, psn=0x00ABCD,
            payload=cm_rtu_mad(flow),
            hdrs=[DETH(qkey=0x80010000, srcqp=0x000001)]),
        fwd(opcode=UD_SEND_ONLY_IMM, dqp=0x000ABC, psn=0x00ABCE, payload_len=11,
            hdrs=[DETH(qkey=0x8001ABCD, srcqp=0x000DEF), ImmDt(imm=0x12345678)],
            se=True),
    ]
    # CNP from the responder's NP to the requester's QP: DSCP 48, BECN, PSN 0
    pkts.append(cnp_frame(flow, ipv=ipv, src=addr2, dst=addr1, dqp=qp_b,
                          fl=nxt(fls), udp_chksum=nxt(udp_chksums)))
    if bad_icrc_at is not None:
        # A copy of a WRITE Only whose stored ICRC is wrong by one bit.
        pkts.insert(bad_icrc_at, fwd(
            opcode=WRITE_ONLY, dqp=qp_a, psn=0x000100, payload_len=30,
            hdrs=[RETH(va=va + 0x2000, rkey=0x00001234, dmalen=30)],
            bad_icrc=True))
    return pkts


def gen_rc_ipv4():
    flow = Flow(0x4791_0004)
    tcs = [(26, ECT0)]
    pkts = opcode_set(flow, 4, H1_V4, H2_V4, tcs, fls=[0], udp_chksums=[0],
                      bad_icrc_at=11)
    return write_capture("roce_rc_ipv4.pcap", pkts, 1_700_000_000, 4)


def gen_rc_ipv6():
    flow = Flow(0x4791_0006)
    tcs = [(26, ECT0), (24, ECT0), (26, ECT1), (0, NOT_ECT), (46, ECT0),
           (26, CE), (63, ECT0)]
    fls = [0x00000, 0x12345, 0xFFFFF, 0x00001, 0xABCDE]
    # Mostly UDP checksum 0 as RoCE NICs send; every third frame carries a
    # valid checksum computed by scapy.
    chksums = [0, 0, None]
    pkts = opcode_set(flow, 6, H1_V6, H2_V6, tcs, fls=fls, udp_chksums=chksums)
    return write_capture("roce_rc_ipv6.pcap", pkts, 1_700_000_100, 6)


def gen_vlan():
    flow = Flow(0x4791_8021)
    va = 0x0000560000000000
    pkts = [
        rocev2(flow, vlan=(0, 1, False), opcode=SEND_ONLY, dqp=0x000101,
               psn=100, payload_len=40, dscp=0, ecn=NOT_ECT),
        rocev2(flow, ipv=6, src=H1_V6, dst=H2_V6, vlan=(1, 10, False),
               opcode=WRITE_ONLY, dqp=0x000102, psn=200, payload_len=41,
               dscp=8, ecn=ECT0, fl=0x00011,
               hdrs=[RETH(va=va, rkey=0x42, dmalen=41)]),
        rocev2(flow, vlan=(2, 100, False), opcode=READ_REQ, dqp=0x000103,
               psn=300, dscp=16, ecn=ECT0, ack_req=True,
               hdrs=[RETH(va=va + 0x100, rkey=0x43, dmalen=4096)]),
        rocev2(flow, vlan=(3, 200, False), opcode=WRITE_ONLY_IMM, dqp=0x000104,
               psn=400, payload_len=42, dscp=26, ecn=ECT0, ack_req=True,
               hdrs=[RETH(va=va + 0x200, rkey=0x44, dmalen=42),
                     ImmDt(imm=0x0BADF00D)]),
        rocev2(flow, ipv=6, src=H2_V6, dst=H1_V6, mac_src=H2_MAC,
               mac_dst=H1_MAC, vlan=(4, 1000, False), opcode=ACK,
               dqp=0x000201, psn=400, dscp=32, ecn=ECT0, fl=0x54321,
               hdrs=[AETH(syndrome=SYN_ACK, msn=7)]),
        rocev2(flow, src=H2_V4, dst=H1_V4, mac_src=H2_MAC, mac_dst=H1_MAC,
               vlan=(5, 2000, False), opcode=READ_RESP_ONLY, dqp=0x000201,
               psn=300, payload_len=43, dscp=40, ecn=ECT0,
               hdrs=[AETH(syndrome=SYN_ACK, msn=8)]),
        cnp_frame(flow, ipv=6, src=H2_V6, dst=H1_V6, vlan=(6, 3000, False),
                  dqp=0x000201, fl=0xFFFFF),
        rocev2(flow, vlan=(7, 4094, False), opcode=UD_SEND_ONLY, dqp=0x000001,
               psn=500, payload=cm_rtu_mad(flow), dscp=56, ecn=NOT_ECT,
               hdrs=[DETH(qkey=0x80010000, srcqp=0x000001)]),
        # DEI set
        rocev2(flow, ipv=6, src=H1_V6, dst=H3_V6, mac_dst=H3_MAC,
               vlan=(3, 300, True), opcode=WRITE_ONLY, dqp=0x000301, psn=600,
               payload_len=64, dscp=26, ecn=CE, fl=0x00300,
               hdrs=[RETH(va=va + 0x300, rkey=0x45, dmalen=64)]),
        # Priority-tagged frame (VID 0)
        rocev2(flow, vlan=(3, 0, False), opcode=SEND_ONLY_IMM, dqp=0x000105,
               psn=700, payload_len=17, dscp=24, ecn=ECT1,
               hdrs=[ImmDt(imm=0xFFFFFFFF)], se=True),
    ]
    return write_capture("roce_vlan.pcap", pkts, 1_700_000_200, 8021)


def gen_dscp_ecn():
    flow = Flow(0x4791_00EC)
    pkts = []
    for ipv, src, dst in ((4, H1_V4, H2_V4), (6, H1_V6, H2_V6)):
        psn = 0x000F00
        for dscp in (0, 24, 26, 46, 48, 63):
            for ecn in (NOT_ECT, ECT1, ECT0, CE):
                pkts.append(rocev2(
                    flow, ipv=ipv, src=src, dst=dst, opcode=WRITE_ONLY,
                    dqp=0x000012, psn=psn, payload_len=64, dscp=dscp, ecn=ecn,
                    fl=0x01000 + psn if ipv == 6 else 0,
                    hdrs=[RETH(va=0x7F0000000000 + psn * 64, rkey=0x1234,
                               dmalen=64)],
                    ack_req=(ecn == CE)))
                psn += 1
    return write_capture("roce_dscp_ecn.pcap", pkts, 1_700_000_300, 0xEC)


def gen_mac_control():
    sw = SW_MAC
    pkts = [
        pfc(sw, 0x08, [0, 0, 0, 0xFFFF, 0, 0, 0, 0]),          # XOFF prio 3
        pfc(sw, 0x08, [0, 0, 0, 0, 0, 0, 0, 0]),               # XON prio 3
        pfc(sw, 0x00, [0, 0, 0, 0, 0, 0, 0, 0]),               # nothing enabled
        pfc(H1_MAC, 0x01, [1, 0, 0, 0, 0, 0, 0, 0]),           # 1 quantum
        pfc(sw, 0x18, [0, 0, 0, 0x00FF, 0xFFFF, 0, 0, 0]),
        # prio 7 only; a stale non-zero time in disabled class 0 must be ignored
        pfc(H2_MAC, 0x80, [0x1234, 0, 0, 0, 0, 0, 0, 0x1000]),
        pfc(sw, 0xFF, [0, 1, 0x00FF, 0xFFFF, 0x0100, 0x7FFF, 0x8000, 0xABCD]),
        pfc(sw, 0xFF, [0, 0, 0, 0, 0, 0, 0, 0]),               # XON all
        pause(sw, 0),
        pause(H1_MAC, 100),
        pause(sw, 0xFFFF),
    ]
    return write_capture("mac_control.pcap", pkts, 1_700_000_400, 0x8808)


def gen_non_roce():
    flow = Flow(0x4791_0000)
    arp_req = (Ether(src=H1_MAC, dst=BCAST)
               / ARP(op=1, hwsrc=H1_MAC, psrc=H1_V4, pdst=H2_V4))
    arp_req = arp_req / Padding(load=b"\x00" * (60 - len(arp_req)))
    arp_rep = (Ether(src=H2_MAC, dst=H1_MAC)
               / ARP(op=2, hwsrc=H2_MAC, psrc=H2_V4, hwdst=H1_MAC, pdst=H1_V4))
    icmp_payload = bytes(range(32))
    # A RoCE datagram too big for the MTU, fragmented by IP: neither fragment
    # is RoCE (the first one still starts with UDP 4791 and a BTH).
    big = rocev2(flow, opcode=WRITE_ONLY, dqp=0x000012, psn=77, payload_len=1600,
                 hdrs=[RETH(va=0x2000, rkey=0x1234, dmalen=1600)])
    big[IP].flags = 0
    big_ip = IP(raw(big[IP]))
    frags = [Ether(src=H1_MAC, dst=H2_MAC) / f for f in fragment(big_ip, 1480)]
    assert len(frags) == 2
    bth_lookalike = raw(BTH(opcode=WRITE_ONLY, dqpn=0x12, psn=5, icrc=0))
    pkts = [
        arp_req,
        arp_rep,
        Ether(src=H1_MAC, dst=H2_MAC)
        / IP(src=H1_V4, dst=H2_V4, id=flow.next_id())
        / ICMP(type=8, id=0x0101, seq=1) / Raw(icmp_payload),
        Ether(src=H2_MAC, dst=H1_MAC)
        / IP(src=H2_V4, dst=H1_V4, id=flow.next_id())
        / ICMP(type=0, id=0x0101, seq=1) / Raw(icmp_payload),
        # TCP to port 4791 with DSCP 26: not RoCE (RoCEv2 is UDP only)
        Ether(src=H1_MAC, dst=H2_MAC)
        / IP(src=H1_V4, dst=H2_V4, tos=(26 << 2) | ECT0, flags="DF",
             id=flow.next_id())
        / TCP(sport=40000, dport=ROCEV2_PORT, flags="S", seq=1000, window=64240),
        Ether(src=H1_MAC, dst=H2_MAC)
        / IP(src=H1_V4, dst=H2_V4, id=flow.next_id())
        / UDP(sport=53000, dport=53) / DNS(id=0x1234, rd=1,
                                           qd=DNSQR(qname="rocelab.example.")),
        # VXLAN (UDP 4789) carrying an ICMP echo
        Ether(src=H1_MAC, dst=H2_MAC)
        / IP(src=H1_V4, dst=H2_V4, id=flow.next_id(), flags="DF")
        / UDP(sport=49152, dport=4789, chksum=0) / VXLAN(vni=5000)
        / Ether(src="02:00:00:00:0a:01", dst="02:00:00:00:0a:02")
        / IP(src="10.0.0.1", dst="10.0.0.2", id=1) / ICMP(type=8, id=7, seq=7),
        # Source port 4791, destination 5000, payload that looks like a BTH
        Ether(src=H2_MAC, dst=H1_MAC)
        / IP(src=H2_V4, dst=H1_V4, tos=(26 << 2) | ECT0, id=flow.next_id())
        / UDP(sport=ROCEV2_PORT, dport=5000, chksum=0) / Raw(bth_lookalike),
        # IPv6 UDP to 4790 (one below RoCEv2)
        Ether(src=H1_MAC, dst=H2_MAC)
        / IPv6(src=H1_V6, dst=H2_V6, tc=(26 << 2) | ECT0, fl=0x4790)
        / UDP(sport=50000, dport=4790) / Raw(bth_lookalike),
        Ether(src=H1_MAC, dst=H2_MAC)
        / IPv6(src=H1_V6, dst=H2_V6) / ICMPv6EchoRequest(id=0x0202, seq=1,
                                                         data=icmp_payload),
        frags[0],
        frags[1],
    ]
    return write_capture("non_roce.pcap", pkts, 1_700_000_500, 0)


def gen_streams():
    flow = Flow(0x4791_5EA5)
    qp_a, qp_b, qp_c = 0x000012, 0x000034, 0x000056
    sport_a, sport_b, sport_c = 0xC012, 0xC034, 0xC056
    dma = 10 * 1024
    va = 0x00007F0012340000

    def a_data(psn, ce=False):
        """QP A: one 1 KiB segment of a 10-segment RDMA WRITE, PSN 1000..1009."""
        seg = psn - 1000
        kw = dict(opcode=WRITE_MIDDLE, payload_len=1024)
        if seg == 0:
            kw.update(opcode=WRITE_FIRST, hdrs=[RETH(va=va, rkey=0x1234, dmalen=dma)])
        elif seg == 9:
            kw.update(opcode=WRITE_LAST, ack_req=True)
        return rocev2(flow, src=H1_V4, dst=H2_V4, mac_src=H1_MAC,
                      mac_dst=H2_MAC, dqp=qp_a, psn=psn, sport=sport_a,
                      ecn=CE if ce else ECT0, **kw)

    def b_ack(psn, syndrome, msn):
        return rocev2(flow, src=H2_V4, dst=H1_V4, mac_src=H2_MAC,
                      mac_dst=H1_MAC, opcode=ACK, dqp=qp_b, psn=psn,
                      sport=sport_b, hdrs=[AETH(syndrome=syndrome, msn=msn)])

    def b_cnp():
        return cnp_frame(flow, src=H2_V4, dst=H1_V4, dqp=qp_b)

    def c_send(psn, opcode, n, **kw):
        return rocev2(flow, src=H1_V4, dst=H3_V4, mac_src=H1_MAC,
                      mac_dst=H3_MAC, opcode=opcode, dqp=qp_c, psn=psn,
                      sport=sport_c, payload_len=n, **kw)

    pkts = [
        a_data(1000),
        c_send(0xFFFFFD, SEND_FIRST, 512),
        a_data(1001),
        a_data(1002, ce=True),
        b_cnp(),
        c_send(0xFFFFFE, SEND_MIDDLE, 512),
        a_data(1003, ce=True),
        b_ack(1003, SYN_ACK, 0),
        # 1004 lost
        a_data(1005),
        b_ack(1004, SYN_NAK_PSN, 0),
        c_send(0xFFFFFF, SEND_LAST, 100, ack_req=True),
        a_data(1006, ce=True),
        b_cnp(),
        pfc(SW_MAC, 0x08, [0, 0, 0, 0xFFFF, 0, 0, 0, 0]),
        # 1007 lost
        a_data(1008),
        a_data(1009),
        c_send(0x000000, SEND_ONLY, 64),
        # go-back-N from the NAK'd PSN
        a_data(1004),
        a_data(1005),
        pfc(SW_MAC, 0x08, [0, 0, 0, 0, 0, 0, 0, 0]),
        a_data(1006, ce=True),
        b_cnp(),
        c_send(0x000001, SEND_ONLY_IMM, 62, hdrs=[ImmDt(imm=0x00000101)]),
        a_data(1007),
        a_data(1008),
        pause(SW_MAC, 500),
        a_data(1009),
        c_send(0x000002, SEND_ONLY, 63, ack_req=True),
        b_ack(1009, SYN_ACK, 1),
    ]
    return write_capture("roce_streams.pcap", pkts, 1_700_000_600, 0x5EA5,
                         summary=True)


def gen_mixed_pcapng():
    flow = Flow(0x4791_0A09)
    pkts = [
        rocev2(flow, opcode=WRITE_ONLY, dqp=0x000012, psn=42, payload_len=21,
               ack_req=True, hdrs=[RETH(va=0x10000, rkey=0x1234, dmalen=21)]),
        rocev2(flow, src=H2_V4, dst=H1_V4, mac_src=H2_MAC, mac_dst=H1_MAC,
               opcode=ACK, dqp=0x000034, psn=42,
               hdrs=[AETH(syndrome=SYN_ACK, msn=1)]),
        rocev2(flow, ipv=6, src=H1_V6, dst=H2_V6, opcode=SEND_ONLY_IMM,
               dqp=0x000012, psn=43, payload_len=6, fl=0x0ABCD, dscp=24,
               hdrs=[ImmDt(imm=0x01020304)], se=True),
        cnp_frame(flow, vlan=(6, 100, False), dqp=0x000034),
        rocev2(flow, opcode=UD_SEND_ONLY, dqp=0x000001, psn=7,
               payload=cm_rtu_mad(flow),
               dscp=0, ecn=NOT_ECT, hdrs=[DETH(qkey=0x80010000, srcqp=1)]),
        pfc(SW_MAC, 0x08, [0, 0, 0, 0x0400, 0, 0, 0, 0]),
        pause(SW_MAC, 0x0100),
        Ether(src=H1_MAC, dst=BCAST)
        / ARP(op=1, hwsrc=H1_MAC, psrc=H1_V4, pdst=H2_V4),
    ]
    return write_capture("roce_mixed.pcapng", pkts, 1_700_000_700, 0x0A09,
                         pcapng=True)


def main():
    os.makedirs(out_dir(), exist_ok=True)
    gens = [
        ("roce_rc_ipv4.pcap", gen_rc_ipv4),
        ("roce_rc_ipv6.pcap", gen_rc_ipv6),
        ("roce_vlan.pcap", gen_vlan),
        ("roce_dscp_ecn.pcap", gen_dscp_ecn),
        ("mac_control.pcap", gen_mac_control),
        ("non_roce.pcap", gen_non_roce),
        ("roce_streams.pcap", gen_streams),
        ("roce_mixed.pcapng", gen_mixed_pcapng),
    ]
    for name, gen in gens:
        frames = gen()
        roce = sum(1 for f in frames if "bth_opcode" in f)
        bad = sum(1 for f in frames if f.get("icrc_ok") is False)
        print("%-20s %3d frames (%d RoCE, %d bad ICRC)"
              % (name, len(frames), roce, bad))
    return 0


if __name__ == "__main__":
    sys.exit(main())

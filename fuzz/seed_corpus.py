#!/usr/bin/env python3
"""Seeds fuzz/corpus/<target>/ from the project's own files (run from anywhere).

frame:   every frame of pcaps/*.pcap*
capture: every file of pcaps/*.pcap*
config:  the switch presets, the built-in scenarios, and a few endpoint configurations
replay:  each capture's first 8 frames in the replay target's input layout, in each mode

Files are named by their SHA-1, as libFuzzer names what it adds. Only the project's own
captures are used: third-party captures must not be committed.
"""
import hashlib
import pathlib
import struct

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"


def put(target, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def frames(data):
    """(timestamp ns, frame) of a little- or big-endian pcap, or a little-endian pcapng."""
    out = []
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        at = 0
        while at + 12 <= len(data):
            btype, blen = struct.unpack_from("<II", data, at)
            if blen < 12:
                break
            if btype == 6:  # Enhanced Packet Block
                _, hi, lo, cap, _ = struct.unpack_from("<IIIII", data, at + 8)
                out.append((((hi << 32) | lo) * 1000, data[at + 28 : at + 28 + cap]))
            at += blen
        return out
    magic = data[:4]
    endian = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<"}.get(magic, ">")
    nanos = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    at = 24
    while at + 16 <= len(data):
        secs, frac, incl, _ = struct.unpack_from(endian + "IIII", data, at)
        ts = secs * 10**9 + (frac if nanos else frac * 1000)
        out.append((ts, data[at + 16 : at + 16 + incl]))
        at += 16 + incl
    return out


def replay_input(opts, fs):
    out = bytearray([opts])
    last = fs[0][0] if fs else 0
    for i, (ts, f) in enumerate(fs[:8]):
        dt = min(max(ts - last, 0) // 16, 0xFFFF)
        last = ts
        out += struct.pack("<BHH", i, dt, len(f)) + f
    return bytes(out)


def main():
    for pcap in sorted((ROOT / "pcaps").glob("*.pcap*")):
        data = pcap.read_bytes()
        put("capture", data)
        fs = frames(data)
        for _, f in fs:
            put("frame", f)
        for opts in (0x00, 0x01, 0x02, 0x03, 0x05, 0x49, 0x91):
            put("replay", replay_input(opts, fs))
    for toml in sorted((ROOT / "src" / "config" / "presets").glob("*.toml")):
        put("config", toml.read_bytes())
    for toml in sorted((ROOT / "src" / "sim" / "scenarios").glob("*.toml")):
        put("config", toml.read_bytes())
    for text in (
        'mtu = 1024\ndscp = 26\necn = "ect0"\n',
        "mtu = 4096\nlink_gbps = 100\n[dcqcn]\ng = 0.00390625\n",
    ):
        put("config", text.encode())


if __name__ == "__main__":
    main()

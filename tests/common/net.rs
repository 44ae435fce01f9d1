//! Frames, configurations and a direct driver for switch tests in virtual time.
#![allow(dead_code)]

use rocelab::config::SwitchConfig;
use rocelab::switch::{RxOutcome, Switch};
use rocelab::time::Nanos;
use rocelab::wire::bth::{BthRepr, Opcode};
use rocelab::wire::ethernet::MIN_FRAME_LEN;
use rocelab::wire::pfc::{MacControl, PfcRepr, PrioritySet};
use rocelab::wire::xth::ExtHeaders;
use rocelab::wire::{Ecn, IpRepr, Ipv4Repr, MacAddr, RoceRepr};
use std::net::Ipv4Addr;

/// The MAC of test host `i`.
pub(crate) fn host(i: usize) -> MacAddr {
    MacAddr([0x02, 0x00, 0xc6, 0x12, 0x00, i as u8])
}

/// A RoCE WRITE Middle frame from host `src` to host `dst`: 58 bytes of headers and ICRC,
/// and `len - 58` of payload. Exactly `len` bytes, but for a frame without payload, which
/// Ethernet pads to its minimum.
pub(crate) fn roce(src: usize, dst: usize, dscp: u8, ecn: Ecn, len: usize, psn: u32) -> Vec<u8> {
    assert!(
        len >= 58 && (len - 58).is_multiple_of(4),
        "no BTH pad: len - 58 must be a multiple of 4"
    );
    let payload = vec![0xab; len - 58];
    let repr = RoceRepr {
        eth_dst: host(dst),
        eth_src: host(src),
        vlan: None,
        ip: IpRepr::V4(Ipv4Repr {
            src: Ipv4Addr::new(198, 18, 0, src as u8 + 1),
            dst: Ipv4Addr::new(198, 18, 0, dst as u8 + 1),
            dscp,
            ecn,
            ident: 0,
            dont_frag: true,
            ttl: 64,
        }),
        udp_src_port: 0xc000 + src as u16,
        bth: BthRepr {
            opcode: Opcode::RC_WRITE_MIDDLE,
            pkey: 0xffff,
            dest_qp: 0x100 + dst as u32,
            psn,
            ..BthRepr::default()
        },
        ext: ExtHeaders::default(),
        payload: &payload,
    };
    let mut buf = vec![0u8; repr.frame_len()];
    let n = repr.emit(&mut buf).unwrap();
    assert_eq!(n, len.max(MIN_FRAME_LEN));
    buf
}

/// A broadcast frame from host `src` (class 0), for MAC learning.
pub(crate) fn hello(src: usize) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&MacAddr::BROADCAST.0);
    f[6..12].copy_from_slice(&host(src).0);
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    f
}

/// A PFC frame from host `src` pausing `priorities` for `quanta`.
pub(crate) fn pfc(src: usize, priorities: PrioritySet, quanta: u16) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    MacControl::Pfc(PfcRepr::new(priorities, quanta))
        .emit(&mut f, host(src))
        .unwrap();
    f
}

/// The configuration `body` with `ports` ports named p0, p1, ...
pub(crate) fn config(body: &str, ports: usize) -> SwitchConfig {
    let mut text = body.to_owned();
    for i in 0..ports {
        text.push_str(&format!("\n[[ports]]\nname = \"p{i}\"\n"));
    }
    SwitchConfig::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// A frame the switch sent.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    pub port: usize,
    pub time: Nanos,
    pub frame: Vec<u8>,
    pub note: Option<String>,
}

impl Sent {
    /// The PFC content, if this is a PFC frame.
    pub(crate) fn pfc(&self) -> Option<PfcRepr> {
        let meta = rocelab::wire::parse(&self.frame).ok()?;
        match MacControl::parse_frame(&self.frame, &meta) {
            Ok(MacControl::Pfc(p)) => Some(p),
            _ => None,
        }
    }

    /// The ECN bits, for IP frames.
    pub(crate) fn ecn(&self) -> Option<Ecn> {
        let meta = rocelab::wire::parse(&self.frame).ok()?;
        meta.is_ip().then(|| meta.ecn())
    }
}

/// Drives a switch directly: frames are handed in at chosen times, and every deadline up
/// to a chosen time is run.
pub(crate) struct Driver {
    pub sw: Switch,
    pub now: Nanos,
    pub sent: Vec<Sent>,
}

impl Driver {
    pub(crate) fn new(cfg: &SwitchConfig) -> Driver {
        let mut sw = Switch::new(cfg);
        sw.set_explain(true);
        Driver {
            sw,
            now: Nanos(1_000_000),
            sent: Vec::new(),
        }
    }

    /// Every host sends a broadcast so that the switch learns it (host i on port i), and
    /// the floods are sent and forgotten.
    pub(crate) fn learn_hosts(&mut self) {
        for p in 0..self.sw.port_count() {
            self.rx(p, &hello(p));
        }
        self.run_for(Nanos(100_000));
        self.sent.clear();
    }

    /// Hands `frame` to the switch on `port` now, then sends what can go now.
    pub(crate) fn rx(&mut self, port: usize, frame: &[u8]) -> RxOutcome {
        let r = self.sw.handle_frame(self.now, port, frame);
        self.run_until(self.now);
        r
    }

    /// Runs every deadline up to `t`, in order, then sets the time to `t`.
    pub(crate) fn run_until(&mut self, t: Nanos) {
        let Driver { sw, now, sent } = self;
        let moved = rocelab::conformance::bench::drive(sw, now, t, |tx| {
            sent.push(Sent {
                port: tx.port,
                time: tx.time,
                frame: tx.frame.to_vec(),
                note: tx.note.map(|n| n.to_string()),
            })
        });
        assert!(moved, "the switch is stuck at {:?}", self.now);
    }

    pub(crate) fn run_for(&mut self, d: Nanos) {
        let t = self.now + d;
        self.run_until(t);
    }

    /// The PFC frames sent on `port`, with their times.
    pub(crate) fn pfc_sent(&self, port: usize) -> Vec<(Nanos, PfcRepr)> {
        self.sent
            .iter()
            .filter(|s| s.port == port)
            .filter_map(|s| s.pfc().map(|p| (s.time, p)))
            .collect()
    }

    /// The data (non-PFC) frames sent on `port`.
    pub(crate) fn data_sent(&self, port: usize) -> Vec<&Sent> {
        self.sent
            .iter()
            .filter(|s| s.port == port && s.pfc().is_none())
            .collect()
    }
}

/// Bits a frame of `len` bytes occupies on the wire: frame + FCS + preamble + IFG, padded
/// to the 64-byte minimum (IEEE 802.3).
pub(crate) fn wire_bits(len: usize) -> u64 {
    (len.max(60) as u64 + 4 + 8 + 12) * 8
}

/// ceil(bits × 1e9 / rate), ns.
pub(crate) fn bits_to_ns(bits: u64, bits_per_sec: u64) -> u64 {
    (u128::from(bits) * 1_000_000_000).div_ceil(u128::from(bits_per_sec)) as u64
}

/// IEEE 802.1Qbb: a pause of `quanta` lasts quanta × 512 bit times (rounded up to ns).
pub(crate) fn pause_ns(quanta: u16, bits_per_sec: u64) -> u64 {
    bits_to_ns(u64::from(quanta) * 512, bits_per_sec)
}

/// `frame`, an IPv6 frame whose fixed header starts at `l3`, with extension headers
/// inserted after that header: each `(next header value, body)` of the chain, its body
/// (what follows the next-header byte) padded to a multiple of 8 with the next-header
/// byte in front, and the lengths set as RFC 8200 section 4 says (Hdr Ext Len in 8-octet
/// units beyond the first 8; the fragment header has none, its body must be 7 bytes).
pub(crate) fn with_ipv6_extensions(frame: &[u8], l3: usize, chain: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let fixed_end = l3 + 40;
    let mut next_after = frame[l3 + 6];
    let mut headers = Vec::new();
    for (kind, body) in chain.iter().rev() {
        let mut h = vec![next_after];
        h.extend(body);
        h.resize(h.len().div_ceil(8).max(1) * 8, 0);
        if *kind != 44 {
            h[1] = (h.len() / 8 - 1) as u8;
        } else {
            assert_eq!(h.len(), 8, "a fragment header is 8 bytes");
        }
        headers.insert(0, h);
        next_after = *kind;
    }
    let added: usize = headers.iter().map(Vec::len).sum();
    let mut out = frame[..fixed_end].to_vec();
    out[l3 + 6] = next_after;
    let payload_len = u16::from_be_bytes([out[l3 + 4], out[l3 + 5]]) as usize + added;
    out[l3 + 4..l3 + 6].copy_from_slice(&(payload_len as u16).to_be_bytes());
    for h in headers {
        out.extend(h);
    }
    out.extend(&frame[fixed_end..]);
    out
}

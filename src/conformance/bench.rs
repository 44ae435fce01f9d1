//! The test bench of the conformance procedures: one switch in virtual time, test hosts
//! behind its ports, the frames they send, and a log of what the switch sent back.

use crate::config::{PortConfig, SwitchConfig, Trust};
use crate::switch::{RxOutcome, Switch};
use crate::time::Nanos;
use crate::wire::bth::{BthRepr, Opcode};
use crate::wire::ethernet::VlanTag;
use crate::wire::pfc::{MacControl, PfcRepr, PrioritySet};
use crate::wire::xth::ExtHeaders;
use crate::wire::{Ecn, IpRepr, Ipv4Repr, MacAddr, RoceRepr};
use std::net::Ipv4Addr;

/// The MAC of the test host behind port `i`.
pub fn host(i: usize) -> MacAddr {
    MacAddr([0x02, 0x00, 0xc6, 0x12, (i >> 8) as u8, i as u8])
}

/// How a test frame selects its traffic class: the DSCP (untagged) or the 802.1Q PCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marking {
    /// DSCP, for a switch that trusts DSCP.
    Dscp(u8),
    /// PCP in a VLAN 1 tag (DSCP 0), for a switch that trusts PCP.
    Pcp(u8),
}

impl Marking {
    /// The markings that select class `tc` under `cfg`'s classification, lowest first.
    pub fn for_class(cfg: &SwitchConfig, tc: u8) -> Vec<Marking> {
        match cfg.trust {
            Trust::Dscp => (0..64u8)
                .filter(|&d| cfg.dscp_to_tc[usize::from(d)] == tc)
                .map(Marking::Dscp)
                .collect(),
            Trust::Pcp => (0..8u8)
                .filter(|&p| cfg.pcp_to_tc[usize::from(p)] == tc)
                .map(Marking::Pcp)
                .collect(),
        }
    }

    /// The class `cfg` gives this marking.
    pub fn class(self, cfg: &SwitchConfig) -> u8 {
        match self {
            Marking::Dscp(d) => cfg.dscp_to_tc[usize::from(d & 63)],
            Marking::Pcp(p) => cfg.pcp_to_tc[usize::from(p & 7)],
        }
    }
}

impl std::fmt::Display for Marking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Marking::Dscp(d) => write!(f, "DSCP {d}"),
            Marking::Pcp(p) => write!(f, "PCP {p}"),
        }
    }
}

/// Bytes of a RoCE frame besides its payload: Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4.
const ROCE_OVERHEAD: usize = 58;

/// The largest RoCE test frame at most `limit` bytes long (without FCS) whose payload is a
/// whole number of 4-byte words, as the builder needs.
pub fn roce_len_at_most(limit: usize) -> usize {
    ROCE_OVERHEAD + (limit.saturating_sub(ROCE_OVERHEAD) / 4) * 4
}

/// A RoCE RC WRITE Middle frame of `len` bytes (a multiple of 4 beyond 58, as from
/// [`roce_len_at_most`]) from the host behind `src` to the one behind `dst`, ECT(0).
pub fn roce(src: usize, dst: usize, marking: Marking, len: usize, psn: u32) -> Vec<u8> {
    let (dscp, vlan, tag) = match marking {
        Marking::Dscp(d) => (d, None, 0),
        Marking::Pcp(p) => (
            0,
            Some(VlanTag {
                pcp: p,
                dei: false,
                vid: 1,
            }),
            4,
        ),
    };
    let payload = vec![0xab; len.saturating_sub(ROCE_OVERHEAD + tag)];
    let repr = RoceRepr {
        eth_dst: host(dst),
        eth_src: host(src),
        vlan,
        ip: IpRepr::V4(Ipv4Repr {
            src: Ipv4Addr::new(198, 18, (src >> 8) as u8, src as u8),
            dst: Ipv4Addr::new(198, 18, (dst >> 8) as u8, dst as u8),
            dscp,
            ecn: Ecn::Ect0,
            ident: 0,
            dont_frag: true,
            ttl: 64,
        }),
        udp_src_port: 0xc000 | src as u16,
        bth: BthRepr {
            opcode: Opcode::RC_WRITE_MIDDLE,
            pkey: 0xffff,
            dest_qp: 0x100 + dst as u32,
            psn: psn & 0x00ff_ffff,
            ..BthRepr::default()
        },
        ext: ExtHeaders::default(),
        payload: &payload,
    };
    let mut buf = vec![0u8; repr.frame_len()];
    let n = repr
        .emit(&mut buf)
        .expect("a buffer of frame_len bytes holds the frame");
    buf.truncate(n);
    buf
}

/// A PFC frame from the host behind `src` pausing `priority` for `quanta`.
pub fn pfc(src: usize, priority: u8, quanta: u16) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    MacControl::Pfc(PfcRepr::new(PrioritySet::single(priority), quanta))
        .emit(&mut f, host(src))
        .expect("60 bytes hold a PFC frame");
    f
}

/// A frame the switch sent.
#[derive(Debug, Clone, Copy)]
pub struct Sent {
    /// Egress port.
    pub port: usize,
    /// When its first bit left.
    pub time: Nanos,
    /// Its length, bytes, without FCS.
    pub len: usize,
    /// PFC content, for PFC frames.
    pub pfc: Option<PfcRepr>,
    /// The BTH PSN, for RoCE frames (the procedures tag frames by it).
    pub psn: Option<u32>,
}

/// One switch in virtual time with a host behind each port.
pub struct Bench {
    /// The switch under test.
    pub sw: Switch,
    /// Virtual time now.
    pub now: Nanos,
    /// Everything the switch sent, in order.
    pub sent: Vec<Sent>,
    cfg: SwitchConfig,
}

/// Drives `sw` from `*now` to `t` in virtual time: hands every frame that can leave to
/// `sent`, runs every timer when it is due, in order, and leaves `*now` at `t`. Returns
/// false if the switch asked for the same instant 10 000 times in a row (it never does;
/// the loop ends rather than spin).
pub fn drive(
    sw: &mut Switch,
    now: &mut Nanos,
    t: Nanos,
    mut sent: impl FnMut(crate::switch::Transmit<'_>),
) -> bool {
    let mut rounds_at_same_time = 0;
    loop {
        while let Some(tx) = sw.poll_transmit(*now) {
            sent(tx);
        }
        let Some(next) = sw.poll_timeout().filter(|&n| n <= t) else {
            break;
        };
        let next = next.max(*now);
        rounds_at_same_time = if next == *now {
            rounds_at_same_time + 1
        } else {
            0
        };
        if rounds_at_same_time > 10_000 {
            return false;
        }
        *now = next;
        sw.handle_timeout(next);
    }
    *now = (*now).max(t);
    true
}

/// `cfg` with `n` ports like `template`, named c0, c1, …
pub fn with_ports(cfg: &SwitchConfig, template: &PortConfig, n: usize) -> SwitchConfig {
    let mut cfg = cfg.clone();
    cfg.ports = (0..n)
        .map(|i| PortConfig {
            name: format!("c{i}"),
            ..template.clone()
        })
        .collect();
    cfg
}

impl Bench {
    /// A switch for `cfg` (whose ports are the bench's), every host's MAC known, at 1 ms.
    pub fn new(cfg: &SwitchConfig) -> Bench {
        let mut sw = Switch::new(cfg);
        for i in 0..cfg.ports.len() {
            sw.add_route(host(i), &[i]);
        }
        Bench {
            sw,
            now: Nanos::from_millis(1),
            sent: Vec::new(),
            cfg: cfg.clone(),
        }
    }

    /// The port `i`'s rate, bit/s.
    pub fn rate(&self, port: usize) -> u64 {
        self.cfg.ports[port].bits_per_sec
    }

    /// Hands `frame` to the switch on `port` now, then sends what can go now.
    pub fn rx(&mut self, port: usize, frame: &[u8]) -> RxOutcome {
        let r = self.sw.handle_frame(self.now, port, frame);
        self.run_until(self.now);
        r
    }

    /// Runs every deadline up to `t`, in order, recording what the switch sends, then
    /// sets the time to `t`.
    pub fn run_until(&mut self, t: Nanos) {
        let Bench { sw, now, sent, .. } = self;
        drive(sw, now, t, |tx| {
            let meta = crate::wire::parse(tx.frame).ok();
            let pfc = meta
                .as_ref()
                .and_then(|m| match MacControl::parse_frame(tx.frame, m) {
                    Ok(MacControl::Pfc(p)) => Some(p),
                    _ => None,
                });
            sent.push(Sent {
                port: tx.port,
                time: tx.time,
                len: tx.frame.len(),
                pfc,
                psn: meta.as_ref().filter(|m| m.is_roce()).map(|m| m.psn()),
            });
        });
    }

    /// PFC frames sent on `port`, with their times.
    pub fn pfc_sent(&self, port: usize) -> impl Iterator<Item = (Nanos, PfcRepr)> + '_ {
        self.pfc_sent_from(port, 0)
    }

    /// [`pfc_sent`](Self::pfc_sent) among the frames sent from the `from`-th on (of
    /// [`sent_count`](Self::sent_count)): a caller that looks after every step reads each
    /// frame once, not the whole list each time.
    pub fn pfc_sent_from(
        &self,
        port: usize,
        from: usize,
    ) -> impl Iterator<Item = (Nanos, PfcRepr)> + '_ {
        self.sent
            .get(from..)
            .unwrap_or_default()
            .iter()
            .filter(move |s| s.port == port)
            .filter_map(|s| s.pfc.map(|p| (s.time, p)))
    }

    /// Frames sent so far, on every port.
    pub fn sent_count(&self) -> usize {
        self.sent.len()
    }

    /// Data frames sent on `port`.
    pub fn data_sent(&self, port: usize) -> impl Iterator<Item = &Sent> + '_ {
        self.sent
            .iter()
            .filter(move |s| s.port == port && s.pfc.is_none())
    }
}

//! How a scenario's fabric carries RDMA: RoCEv2 on Ethernet (PFC, ECN and DCQCN as the
//! switch configuration says), InfiniBand (credit-based link-level flow control per VL,
//! [`crate::credit`]) or iWARP (RDMA over TCP on Ethernet, lossy by default). The same
//! topology, endpoints and workloads run on each, so that `rocelab compare` can set them
//! side by side.

use super::topology::{Network, Topology};
use crate::config::{CLASSES, ConfigError, SwitchConfig, Trust};
use crate::credit::{BLOCK_BYTES, CreditConfig, MAX_WINDOW_BLOCKS};
use crate::endpoint::ibcc::{CctEntry, IbCcConfig};
use crate::endpoint::{DEFAULT_INTERFACE_MTU, IwarpConfig, TcpCc};
use crate::link::Framing;
use crate::switch::Switch;
use crate::switch::sched::VlArbConfig;
use crate::time::Nanos;
use serde::Deserialize;

/// The fabric a scenario runs on (`fabric`, with the `[ib]` table).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Fabric {
    /// RoCEv2 over Ethernet, lossless (or not) by the switch configuration.
    #[default]
    Roce,
    /// InfiniBand: credit flow control, no PFC, no ECN.
    Ib(IbFabric),
    /// iWARP: RDMA over TCP on Ethernet; PFC off unless asked for.
    Iwarp(IwarpFabric),
}

/// iWARP, as a scenario's `[iwarp]` table sets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IwarpFabric {
    /// How every NIC runs its connections.
    pub nic: IwarpConfig,
    /// PFC stays on as the switch configuration has it (a lossless class); off by
    /// default, since TCP recovers what is lost.
    pub lossless: bool,
}

impl IwarpFabric {
    /// The switch configuration on this fabric: PFC off unless lossless, ECN as
    /// configured (DCTCP needs it).
    pub fn switch_config(&self, mut cfg: SwitchConfig) -> SwitchConfig {
        if !self.lossless {
            cfg.disable_pfc();
        }
        cfg
    }
}

/// The `[iwarp]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct IwarpSpec {
    cc: Option<String>,
    mtu: Option<u32>,
    initial_window: Option<u32>,
    rto_min_us: Option<u64>,
    ecn: Option<bool>,
    crc: Option<bool>,
    ack_every: Option<u32>,
    lossless: Option<bool>,
}

impl IwarpSpec {
    fn resolve(self) -> Result<IwarpFabric, ConfigError> {
        let cc = match self.cc.as_deref() {
            None => TcpCc::default(),
            Some(name) => TcpCc::ALL
                .into_iter()
                .find(|c| c.name() == name)
                .ok_or_else(|| {
                    err(
                        "iwarp.cc",
                        format!("'{name}' is not a congestion control: give dctcp, reno or cubic"),
                    )
                })?,
        };
        let nic = IwarpConfig {
            cc,
            interface_mtu: self.mtu.unwrap_or(DEFAULT_INTERFACE_MTU),
            initial_window_segments: self.initial_window.unwrap_or(10),
            rto_min: self
                .rto_min_us
                .map_or(IwarpConfig::default().rto_min, Nanos::from_micros),
            // ECN capable by default only under DCTCP, which reads the marks.
            ecn: self.ecn.unwrap_or(cc == TcpCc::Dctcp),
            crc: self.crc.unwrap_or(true),
            ack_every: self.ack_every.unwrap_or(2),
        };
        if !(1..=64).contains(&nic.ack_every) {
            return Err(err("iwarp.ack_every", "give 1 to 64 segments"));
        }
        if !(576..=9000).contains(&nic.interface_mtu) {
            return Err(err(
                "iwarp.mtu",
                format!(
                    "{}: give an interface MTU of 576 to 9000 bytes",
                    nic.interface_mtu
                ),
            ));
        }
        if !(1..=1000).contains(&nic.initial_window_segments) {
            return Err(err("iwarp.initial_window", "give 1 to 1000 segments"));
        }
        if !(1..=10_000_000).contains(&nic.rto_min.0.div_ceil(1000)) {
            return Err(err("iwarp.rto_min_us", "give 1 µs to 10 s"));
        }
        Ok(IwarpFabric {
            nic,
            lossless: self.lossless.unwrap_or(false),
        })
    }
}

/// The InfiniBand link layer, as a scenario's `[ib]` table sets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbFabric {
    /// Receive buffer per VL on every port, switch or NIC, bytes.
    pub buffer_per_vl_bytes: u64,
    /// The least time between two flow-control packets that change a VL's limit;
    /// `None`: the time the link takes to carry 4096 bytes ([`IbFabric::update_at`]).
    pub update: Option<Nanos>,
    /// The longest a VL with something to tell goes without one; `None`: the IBA's
    /// 65,536 symbol times on one lane of a 4x link ([`IbFabric::refresh_at`]).
    pub refresh: Option<Nanos>,
    /// VL of each service level (the switches' traffic class).
    pub sl_to_vl: [u8; CLASSES],
    /// Each switch's forwarding latency: from the LRH in (cut-through) or the last bit in
    /// (store-and-forward) to the earliest the first bit may go out.
    pub switch_latency: Nanos,
    /// Whether switches forward once the LRH is in rather than the whole packet.
    pub cut_through: bool,
    /// The switches' VL arbitration.
    pub vl_arb: VlArbConfig,
    /// InfiniBand congestion control (annex A10), if on.
    pub cc: Option<IbCc>,
}

/// InfiniBand congestion control: switches mark FECN above a threshold, destinations
/// answer each mark with a BECN (a CNP), sources slow down by their table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbCc {
    /// An egress VL queue deeper than this marks FECN on the packets it takes in, unless
    /// the port is a victim (it waits for credit itself).
    pub threshold_bytes: u64,
    /// Packets above the threshold left unmarked between two marks (the IBA's
    /// `Marking_Rate`, "the mean number of packets between markings"; 0: every one).
    pub marking_rate: u16,
    /// The sources' congestion control agent.
    pub agent: IbCcConfig,
}

/// Default FECN threshold of an egress VL queue: eight 4 KiB packets.
pub const DEFAULT_CC_THRESHOLD_BYTES: u64 = 32 * 1024;
/// Default CCTI timer, in the IBA's units of 1.024 µs.
pub const DEFAULT_CCTI_TIMER_UNITS: u16 = 16;

/// Default receive buffer per VL: the most the 12-bit credit counters can advertise.
pub const DEFAULT_BUFFER_PER_VL_BYTES: u64 = MAX_WINDOW_BLOCKS as u64 * BLOCK_BYTES;
/// Default forwarding latency of an InfiniBand switch: NVIDIA Quantum (HDR)'s published
/// port-to-port figure.
pub const DEFAULT_SWITCH_LATENCY: Nanos = Nanos(130);
/// Bytes a cut-through switch needs before it forwards: the LRH, which holds the DLID.
pub const CUT_THROUGH_HEADER_BYTES: u64 = 8;

/// Bytes whose wire time is the default least time between two updates of a VL's
/// limit: one 4096-byte MTU, so that flow control costs at most 8 bytes in 4096 (0.2 %)
/// of a link however small the packets it answers.
pub const DEFAULT_UPDATE_BYTES: u64 = 4096;

impl IbFabric {
    /// The refresh interval on links of `bits_per_sec`: as given, or 65,536 symbol
    /// times, a symbol being one byte on one of a 4x link's four lanes.
    pub fn refresh_at(&self, bits_per_sec: u64) -> Nanos {
        self.refresh.unwrap_or_else(|| {
            Nanos(
                (65_536u128 * 8 * 4 * 1_000_000_000).div_ceil(u128::from(bits_per_sec.max(1)))
                    as u64,
            )
        })
    }

    /// The least time between two updates on links of `bits_per_sec`: as given, or the
    /// time 4096 bytes take.
    pub fn update_at(&self, bits_per_sec: u64) -> Nanos {
        self.update.unwrap_or_else(|| {
            Nanos(
                (u128::from(DEFAULT_UPDATE_BYTES * 8) * 1_000_000_000)
                    .div_ceil(u128::from(bits_per_sec.max(1))) as u64,
            )
        })
    }

    /// The per-port credit configuration on links of `bits_per_sec`.
    pub fn credit(&self, bits_per_sec: u64) -> CreditConfig {
        CreditConfig {
            buffer_bytes: self.buffer_per_vl_bytes,
            update: self.update_at(bits_per_sec),
            refresh: self.refresh_at(bits_per_sec),
            vls: self.sl_to_vl.iter().fold(0, |m, &vl| m | 1 << vl),
        }
    }

    /// The switch configuration on this fabric: VLs as egress queues, no PFC, no ECN.
    pub fn switch_config(&self, mut cfg: SwitchConfig) -> SwitchConfig {
        cfg.tc_to_queue = self.sl_to_vl;
        cfg.disable_pfc();
        cfg.disable_ecn();
        if let Some(cc) = &self.cc {
            // FECN (carried as CE in the simulator) on the packets a queue deeper than
            // the threshold takes in: every one, or one in `marking_rate + 1`.
            for q in &mut cfg.queues {
                q.ecn = Some(crate::config::RedProfile {
                    kmin_bytes: cc.threshold_bytes,
                    kmax_bytes: cc.threshold_bytes,
                    pmax: 1.0,
                    gentle: false,
                });
                q.mark_at = crate::config::MarkAt::Enqueue;
                q.marking_rate = cc.marking_rate;
            }
        }
        cfg
    }

    /// The VL of each DSCP, as `cfg`'s switches classify it.
    pub fn dscp_to_vl(&self, cfg: &SwitchConfig) -> [u8; 64] {
        std::array::from_fn(|d| {
            let tc = match cfg.trust {
                Trust::Dscp => cfg.dscp_to_tc[d],
                // The simulator's frames are untagged: PCP 0.
                Trust::Pcp => cfg.pcp_to_tc[0],
            };
            self.sl_to_vl[usize::from(tc & 7)]
        })
    }
}

/// The `[ib]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct IbSpec {
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    buffer_per_vl_bytes: Option<u64>,
    update_ns: Option<u64>,
    refresh_ns: Option<u64>,
    sl_to_vl: Option<Vec<u8>>,
    switch_latency_ns: Option<u64>,
    cut_through: Option<bool>,
    vl_arb_high: Option<Vec<(u8, u8)>>,
    vl_arb_low: Option<Vec<(u8, u8)>>,
    vl_high_limit: Option<u8>,
    cc: Option<IbCcSpec>,
}

/// The `[ib.cc]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct IbCcSpec {
    #[serde(default)]
    enabled: bool,
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    threshold_bytes: Option<u64>,
    marking_rate: Option<u16>,
    ccti_increase: Option<u16>,
    ccti_limit: Option<u16>,
    ccti_min: Option<u16>,
    ccti_timer: Option<u16>,
    table: Option<Vec<(u8, u16)>>,
}

impl IbCcSpec {
    fn resolve(self) -> Result<Option<IbCc>, ConfigError> {
        if !self.enabled {
            return Ok(None);
        }
        let table: Vec<CctEntry> = match self.table {
            None => IbCcConfig::default_table(),
            Some(t) => t
                .into_iter()
                .map(|(shift, multiplier)| CctEntry { shift, multiplier })
                .collect(),
        };
        if table.is_empty() || table.len() > 16_384 {
            return Err(err(
                "ib.cc.table",
                "give 1 to 16384 [shift, multiplier] entries",
            ));
        }
        if let Some(e) = table.iter().find(|e| e.shift > 3 || e.multiplier > 0x3fff) {
            return Err(err(
                "ib.cc.table",
                format!(
                    "[{}, {}]: shift is 0-3 and multiplier 0-16383 (a 16-bit entry)",
                    e.shift, e.multiplier
                ),
            ));
        }
        let last = (table.len() - 1) as u16;
        let ccti_limit = self.ccti_limit.unwrap_or(last);
        if ccti_limit > last {
            return Err(err(
                "ib.cc.ccti_limit",
                format!("{ccti_limit} is past the table's last index, {last}"),
            ));
        }
        let ccti_min = self.ccti_min.unwrap_or(0);
        if ccti_min > ccti_limit {
            return Err(err("ib.cc.ccti_min", "above ccti_limit"));
        }
        let timer = self.ccti_timer.unwrap_or(DEFAULT_CCTI_TIMER_UNITS);
        if timer == 0 {
            return Err(err(
                "ib.cc.ccti_timer",
                "give at least 1 (units of 1.024 µs)",
            ));
        }
        let threshold_bytes = self.threshold_bytes.unwrap_or(DEFAULT_CC_THRESHOLD_BYTES);
        if threshold_bytes == 0 {
            return Err(err("ib.cc.threshold_bytes", "give at least 1 byte"));
        }
        Ok(Some(IbCc {
            threshold_bytes,
            marking_rate: self.marking_rate.unwrap_or(0),
            agent: IbCcConfig {
                ccti_increase: self.ccti_increase.unwrap_or(1),
                ccti_limit,
                ccti_min,
                ccti_timer: Nanos(u64::from(timer) * 1024),
                table,
            },
        }))
    }
}

fn err(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.to_owned(),
        message: message.into(),
    }
}

/// The fabric of a scenario: `fabric` (`"roce"` by default, `"ib"` or `"iwarp"`) and its
/// `[ib]` or `[iwarp]` table; `largest_frame` is the largest frame an endpoint sends,
/// which one VL's buffer must hold.
pub(super) fn resolve(
    fabric: Option<&str>,
    ib: Option<IbSpec>,
    iwarp: Option<IwarpSpec>,
    largest_frame: usize,
) -> Result<Fabric, ConfigError> {
    let name = fabric.unwrap_or("roce");
    if ib.is_some() && name != "ib" {
        return Err(err(
            "ib",
            "the [ib] table sets an InfiniBand fabric: give fabric = \"ib\" too",
        ));
    }
    if iwarp.is_some() && name != "iwarp" {
        return Err(err(
            "iwarp",
            "the [iwarp] table sets an iWARP fabric: give fabric = \"iwarp\" too",
        ));
    }
    match name {
        "roce" => Ok(Fabric::Roce),
        "iwarp" => Ok(Fabric::Iwarp(iwarp.unwrap_or_default().resolve()?)),
        "ib" => {
            let spec = ib.unwrap_or_default();
            let buffer = spec
                .buffer_per_vl_bytes
                .unwrap_or(DEFAULT_BUFFER_PER_VL_BYTES);
            let packet = crate::credit::blocks(crate::link::ib_packet_bytes_ipv4(largest_frame))
                as u64
                * BLOCK_BYTES;
            if buffer / BLOCK_BYTES * BLOCK_BYTES < packet {
                return Err(err(
                    "ib.buffer_per_vl_bytes",
                    format!(
                        "{buffer} bytes hold less than one full-size packet ({packet} bytes \
                         in 64-byte credit blocks): nothing could ever be sent"
                    ),
                ));
            }
            if buffer > DEFAULT_BUFFER_PER_VL_BYTES {
                return Err(err(
                    "ib.buffer_per_vl_bytes",
                    format!(
                        "{buffer} bytes is more than the 12-bit credit counters can \
                         advertise: give at most {DEFAULT_BUFFER_PER_VL_BYTES} (2048 blocks)"
                    ),
                ));
            }
            if spec.switch_latency_ns.is_some_and(|l| l > 1_000_000) {
                return Err(err("ib.switch_latency_ns", "at most 1 ms"));
            }
            if spec.refresh_ns == Some(0) {
                return Err(err("ib.refresh_ns", "give at least 1 ns"));
            }
            let sl_to_vl = match spec.sl_to_vl {
                None => std::array::from_fn(|i| i as u8),
                Some(v) => {
                    let table: [u8; CLASSES] = v.as_slice().try_into().map_err(|_| {
                        err(
                            "ib.sl_to_vl",
                            format!("give 8 VLs, one per service level; got {}", v.len()),
                        )
                    })?;
                    if let Some(bad) = table.iter().find(|&&vl| vl >= CLASSES as u8) {
                        return Err(err(
                            "ib.sl_to_vl",
                            format!("VL {bad} is not a data VL: give 0-7"),
                        ));
                    }
                    table
                }
            };
            let defaults = VlArbConfig::default();
            let vl_arb = VlArbConfig {
                high: spec.vl_arb_high.unwrap_or(defaults.high),
                low: spec.vl_arb_low.unwrap_or(defaults.low),
                high_limit: spec.vl_high_limit.unwrap_or(defaults.high_limit),
            };
            for (key, table) in [
                ("ib.vl_arb_high", &vl_arb.high),
                ("ib.vl_arb_low", &vl_arb.low),
            ] {
                if table.len() > 64 {
                    return Err(err(
                        key,
                        format!("{} entries; a table holds at most 64", table.len()),
                    ));
                }
                if let Some((vl, _)) = table.iter().find(|e| usize::from(e.0) >= CLASSES) {
                    return Err(err(
                        key,
                        format!("VL {vl}: the simulator's data VLs are 0-7"),
                    ));
                }
            }
            for &vl in &sl_to_vl {
                let weighted = |t: &[(u8, u8)]| t.iter().any(|e| e.0 == vl && e.1 > 0);
                if !weighted(&vl_arb.high) && !weighted(&vl_arb.low) {
                    return Err(err(
                        "ib.vl_arb_low",
                        format!(
                            "VL {vl} (in ib.sl_to_vl) has no entry of nonzero weight in either \
                             arbitration table: it would never be sent"
                        ),
                    ));
                }
            }
            Ok(Fabric::Ib(IbFabric {
                buffer_per_vl_bytes: buffer,
                update: spec.update_ns.map(Nanos),
                refresh: spec.refresh_ns.map(Nanos),
                sl_to_vl,
                switch_latency: spec.switch_latency_ns.map_or(DEFAULT_SWITCH_LATENCY, Nanos),
                cut_through: spec.cut_through.unwrap_or(true),
                vl_arb,
                cc: spec.cc.unwrap_or_default().resolve()?,
            }))
        }
        other => Err(err(
            "fabric",
            format!("'{other}' is not a fabric: give \"roce\", \"ib\" or \"iwarp\""),
        )),
    }
}

impl Fabric {
    /// A short description: `RoCEv2` or `InfiniBand (128 KiB per VL, ...)`.
    pub fn describe(&self) -> String {
        match self {
            Fabric::Roce => "RoCEv2".to_owned(),
            Fabric::Iwarp(iw) => format!(
                "iWARP: RDMA over TCP ({}{}), one FPDU per segment at an MTU of {}, RTO_min {}; {}",
                iw.nic.cc.name(),
                if iw.nic.ecn { ", ECN" } else { "" },
                iw.nic.interface_mtu,
                iw.nic.rto_min.human(),
                if iw.lossless { "PFC on" } else { "PFC off" }
            ),
            Fabric::Ib(ib) => format!(
                "InfiniBand: credit flow control, {} per VL; {}switches {}, {} latency",
                crate::bytes::human(ib.buffer_per_vl_bytes),
                match &ib.cc {
                    Some(cc) => format!(
                        "congestion control (FECN above {}{}, CCTI +{} per BECN, -1 per {}); ",
                        crate::bytes::human(cc.threshold_bytes),
                        match cc.marking_rate {
                            0 => String::new(),
                            n => format!(" on one packet in {}", u32::from(n) + 1),
                        },
                        cc.agent.ccti_increase,
                        cc.agent.ccti_timer.human()
                    ),
                    None => String::new(),
                },
                if ib.cut_through {
                    "cut-through"
                } else {
                    "store-and-forward"
                },
                ib.switch_latency.human()
            ),
        }
    }

    /// How its links put frames on the wire.
    pub fn framing(&self) -> Framing {
        match self {
            Fabric::Roce | Fabric::Iwarp(_) => Framing::Ethernet,
            Fabric::Ib(_) => Framing::InfiniBand,
        }
    }
}

impl Network {
    /// Runs the network on `fabric`: the switches' forwarding latency (and, on
    /// InfiniBand, cut-through), and for InfiniBand every link with its framing and every
    /// port, switch or NIC, with credit flow control.
    pub fn use_fabric(&mut self, fabric: &Fabric, switch: &SwitchConfig, topology: &Topology) {
        let ib = match fabric {
            Fabric::Roce | Fabric::Iwarp(_) => {
                for &n in &self.switches {
                    if let super::Node::Switch(s) = self.engine.node_mut(n) {
                        s.set_forwarding_latency(topology.switch_latency);
                    }
                }
                if let Fabric::Iwarp(iw) = fabric {
                    for &n in &self.hosts {
                        if let super::Node::Host(h) = self.engine.node_mut(n) {
                            // The MTU was checked when the scenario was read.
                            let _ = h.endpoint.set_iwarp(iw.nic);
                        }
                    }
                }
                return;
            }
            Fabric::Ib(ib) => ib,
        };
        let credit = ib.credit(topology.bits_per_sec);
        let dscp_to_vl = ib.dscp_to_vl(switch);
        self.engine.set_framing(Framing::InfiniBand);
        for &n in &self.switches {
            if let super::Node::Switch(s) = self.engine.node_mut(n) {
                Switch::set_credit(s, credit);
                s.set_forwarding_latency(ib.switch_latency);
                s.set_vl_arbitration(&ib.vl_arb);
            }
            if ib.cut_through {
                self.engine
                    .set_cut_through(n, Some(CUT_THROUGH_HEADER_BYTES * 8));
            }
        }
        for &n in &self.hosts {
            if let super::Node::Host(h) = self.engine.node_mut(n) {
                h.endpoint.set_credit(credit, dscp_to_vl);
                if let Some(cc) = &ib.cc {
                    h.endpoint.set_ib_cc(cc.agent.clone());
                }
            }
        }
    }
}

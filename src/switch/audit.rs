//! Warnings about RoCE traffic a configuration puts in the wrong place, found in the
//! traffic itself: RoCE data (UDP 4791, not a CNP) in a lossy class, CNPs in a queue that
//! is neither strict priority nor lossless, and CNPs sharing a queue with RoCE data. Each
//! kind is recorded once, with the frame's path (DSCP or PCP → traffic class → queue) and
//! the fix. The check costs a bit test per RoCE frame once a queue has been seen.

use crate::config::{CLASSES, Schedule, SwitchConfig, Trust};
use crate::wire::FrameMeta;

/// What is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Misclassification {
    /// RoCE data lands in a lossy class: PFC does not protect it.
    RoceDataLossy,
    /// CNPs land in a lossy queue that is not strict priority: they wait behind other
    /// traffic, or drop, and DCQCN reacts late.
    CnpNotPrioritised,
    /// CNPs share a queue with RoCE data: they wait behind the data they report on.
    CnpSharesDataQueue,
}

/// One warning, once per kind.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Warning {
    /// What is wrong.
    pub kind: Misclassification,
    /// The path of the first frame that showed it and the fix, in words.
    pub message: String,
}

/// The state of the audit: which queues carried RoCE data and CNPs, and what was said.
#[derive(Debug, Clone, Default)]
pub struct Audit {
    data_queues: u8,
    cnp_queues: u8,
    said: u8,
    warnings: Vec<Warning>,
}

fn bit(kind: Misclassification) -> u8 {
    1 << kind as u8
}

impl Audit {
    /// The warnings so far, in the order they arose.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Looks at a RoCE frame of class `tc` going to queue `q`.
    #[inline]
    pub fn check(&mut self, meta: &FrameMeta, tc: u8, q: usize, cfg: &SwitchConfig) {
        let qbit = 1u8 << (q & 7);
        if meta.bth_opcode().is_cnp() {
            if self.cnp_queues & qbit == 0 {
                self.cnp_queues |= qbit;
                self.first_cnp(meta, tc, q, cfg);
            }
        } else if self.data_queues & qbit == 0 {
            self.data_queues |= qbit;
            self.first_data(meta, tc, q, cfg);
        }
    }

    fn say(&mut self, kind: Misclassification, message: String) {
        if self.said & bit(kind) == 0 {
            self.said |= bit(kind);
            self.warnings.push(Warning { kind, message });
        }
    }

    #[cold]
    fn first_data(&mut self, meta: &FrameMeta, tc: u8, q: usize, cfg: &SwitchConfig) {
        // With PFC off on every class (`--no-pfc`, `lossless = []`) lossy RoCE is the
        // choice made, not a mistake to warn of.
        if !cfg.lossless.contains(tc) && !cfg.lossless.is_empty() {
            let (mark, key) = marking(meta, cfg);
            let lossless: Vec<String> = cfg.lossless.iter().map(|p| p.to_string()).collect();
            let good = lossless_codes(cfg);
            self.say(
                Misclassification::RoceDataLossy,
                format!(
                    "RoCE data (UDP 4791) arrives with {mark} and goes {mark} -> traffic class {tc} -> queue {q}, a lossy class (PFC is on for {}): nothing pauses its senders, and a full queue drops it. Fix: map it to a lossless class ({key}), or send RoCE with {}",
                    if lossless.is_empty() {
                        "no class".to_owned()
                    } else {
                        lossless.join(", ")
                    },
                    good
                ),
            );
        }
        if self.cnp_queues & (1 << q) != 0 {
            self.shared(q);
        }
    }

    #[cold]
    fn first_cnp(&mut self, meta: &FrameMeta, tc: u8, q: usize, cfg: &SwitchConfig) {
        let strict = cfg.queues[q].schedule == Schedule::Strict;
        if !strict && !cfg.lossless.contains(tc) {
            let (mark, _) = marking(meta, cfg);
            self.say(
                Misclassification::CnpNotPrioritised,
                format!(
                    "CNPs arrive with {mark} and go {mark} -> traffic class {tc} -> queue {q}, lossy and scheduled by DWRR: under load they wait behind that queue's traffic or are dropped, and DCQCN slows its senders late. Fix: give queue {q} strict priority (queue.{q}.schedule = \"strict\"), as Nexus's AI/ML blueprint does (priority level 1)"
                ),
            );
        }
        if self.data_queues & (1 << q) != 0 {
            self.shared(q);
        }
    }

    fn shared(&mut self, q: usize) {
        self.say(
            Misclassification::CnpSharesDataQueue,
            format!(
                "CNPs and RoCE data share queue {q}: a CNP waits behind the very data whose congestion it reports. Fix: map the CNPs' DSCP (48 on most NICs) to a class of its own, on a strict-priority queue"
            ),
        );
    }
}

/// The frame's marking as the switch reads it, and the key that maps it.
fn marking(meta: &FrameMeta, cfg: &SwitchConfig) -> (String, &'static str) {
    match cfg.trust {
        Trust::Dscp => (format!("DSCP {}", meta.dscp()), "classify.dscp_to_tc"),
        Trust::Pcp => (
            format!("PCP {}", meta.vlan_pcp().unwrap_or(0)),
            "classify.pcp_to_tc",
        ),
    }
}

/// The DSCPs (or PCPs) a configuration makes lossless, in words.
fn lossless_codes(cfg: &SwitchConfig) -> String {
    let codes: Vec<String> = match cfg.trust {
        Trust::Dscp => (0..64u8)
            .filter(|&d| cfg.lossless.contains(cfg.dscp_to_tc[usize::from(d)]))
            .map(|d| d.to_string())
            .collect(),
        Trust::Pcp => (0..CLASSES as u8)
            .filter(|&p| cfg.lossless.contains(cfg.pcp_to_tc[usize::from(p)]))
            .map(|p| p.to_string())
            .collect(),
    };
    let what = match cfg.trust {
        Trust::Dscp => "DSCP",
        Trust::Pcp => "PCP",
    };
    if codes.is_empty() {
        format!(
            "a {what} that maps to a lossless class (none does in this configuration: map one first)"
        )
    } else {
        format!(
            "{what} {} (those that map to lossless classes)",
            codes.join(" or ")
        )
    }
}

/// The first drop of its kind (port, class, cause), with the inputs of the rule that
/// made it, to explain it in words ([`DropRecord::explain`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropRecord {
    /// When.
    pub at: crate::time::Nanos,
    /// The port whose counter took it: the ingress port for an ingress overflow, the
    /// egress port otherwise.
    pub port: usize,
    /// The port it came in on.
    pub ingress: usize,
    /// Its class (ingress PG) and egress queue.
    pub class: u8,
    /// Its egress queue.
    pub queue: usize,
    /// Why.
    pub cause: crate::switch::DropCause,
    /// The frame's length, bytes.
    pub bytes: u64,
    /// The ingress PG's shared use and headroom use then, bytes.
    pub pg_shared: u64,
    /// Headroom in use.
    pub pg_headroom: u64,
    /// The PG's headroom, bytes.
    pub headroom_size: u64,
    /// The PG's XOFF point then, bytes, and whether it held its peer in XOFF.
    pub xoff_threshold: u64,
    /// Whether XOFF was in force.
    pub xoff: bool,
    /// Whether the PG generated no PFC then: the watchdog (action drop) held the queue
    /// its priority goes to on the ingress port as stormed.
    pub pfc_stopped: bool,
    /// The shared pool's use and size, bytes.
    pub pool_used: u64,
    /// The shared pool's size.
    pub pool_size: u64,
    /// The egress queue's depth, and the lossy queue limit then, bytes.
    pub queue_bytes: u64,
    /// The lossy queue limit.
    pub queue_limit: u64,
    /// The frame, kept only when the switch explains what it does
    /// ([`set_explain`](crate::switch::Switch::set_explain)), as replay does.
    pub frame: Option<Vec<u8>>,
}

/// The most drops kept in [`crate::switch::Switch::drops`].
pub const MAX_DROP_RECORDS: usize = 256;

impl DropRecord {
    /// The drop in words: the rule, its inputs, and what would have prevented it. `cfg`
    /// is the switch's configuration (for the headroom formula's inputs); times are given
    /// from `origin` (a replay's first frame; zero in virtual time).
    pub fn explain(&self, cfg: &SwitchConfig, origin: crate::time::Nanos) -> String {
        use crate::switch::DropCause;
        let port = &cfg.ports[self.port];
        let pg = usize::from(self.class);
        let lossless = cfg.lossless.contains(self.class);
        let at = self.at.saturating_sub(origin).human();
        match self.cause {
            DropCause::IngressOverflow if lossless => {
                let formula = match cfg.pgs[pg].headroom_bytes {
                    Some(b) => format!("{b} B as configured (pg.{pg}.headroom_bytes)"),
                    None => cfg.headroom_model.describe(port),
                };
                if self.pfc_stopped {
                    let q = cfg.tc_to_queue[pg];
                    format!(
                        "{}: lossless PG {pg} dropped a {} B frame at {at}: the PFC watchdog (action drop) held queue {q} of {} as stormed, so the PG sent its peer no PFC and its headroom of {} B filled ({} B used, shared {} B, XOFF point {} B). Frames from a stormed port are not protected until the storm is restored: find what keeps pausing {} (a stuck NIC, a deadlock)",
                        port.name,
                        self.bytes,
                        port.name,
                        self.headroom_size,
                        self.pg_headroom,
                        self.pg_shared,
                        self.xoff_threshold,
                        port.name
                    )
                } else if self.xoff {
                    format!(
                        "{}: lossless PG {pg} dropped a {} B frame at {at}: XOFF was in force (shared {} B at XOFF point {} B) and its headroom of {} B was full ({} B used); headroom = {formula}. Frames kept coming after the pause: a peer that ignores PFC or answers slower than the formula assumes, or a longer cable. Prevented by a peer that honours pause, or more headroom (pg.{pg}.headroom_bytes, or the real cable_m)",
                        port.name,
                        self.bytes,
                        self.pg_shared,
                        self.xoff_threshold,
                        self.headroom_size,
                        self.pg_headroom
                    )
                } else {
                    format!(
                        "{}: lossless PG {pg} dropped a {} B frame at {at} before it reached its XOFF point: the shared pool was full ({} of {} B used) with the PG at {} B of an XOFF point of {} B. Other PGs or lossy queues took the pool. Prevented by a lower pg_alpha (XOFF earlier), a larger buffer.shared_bytes, or limits on the lossy queues (queue_alpha)",
                        port.name,
                        self.bytes,
                        self.pool_used,
                        self.pool_size,
                        self.pg_shared,
                        self.xoff_threshold
                    )
                }
            }
            DropCause::IngressOverflow => format!(
                "{}: lossy class {} dropped a {} B frame at {at} at ingress: the shared pool was full ({} of {} B used)",
                port.name, self.class, self.bytes, self.pool_used, self.pool_size
            ),
            DropCause::Tail => format!(
                "{}: lossy queue {} dropped a {} B frame at {at}: {} B queued, its limit then {} B (queue_alpha x free buffer). Lossy classes drop by design; if this is RoCE, map its DSCP to a lossless class",
                port.name, self.queue, self.bytes, self.queue_bytes, self.queue_limit
            ),
            DropCause::Wred => format!(
                "{}: queue {} dropped a Not-ECT {} B frame at {at} by WRED at {} B queued: a lossy queue with a RED profile drops what it cannot mark. Send ECT, or give the queue no ecn profile",
                port.name, self.queue, self.bytes, self.queue_bytes
            ),
            DropCause::Watchdog => format!(
                "{}: the PFC watchdog dropped a {} B frame of queue {} at {at}: the queue was stormed (paused with no progress for the detection time; action drop). Find what keeps pausing {} (a stuck NIC, a deadlock), or use action forward",
                port.name, self.bytes, self.queue, port.name
            ),
            DropCause::Mtu => format!(
                "{}: a {} B frame for queue {} at {at} exceeds the port's MTU {} (+18 B of headers): raise port mtu or lower the senders' path MTU",
                port.name, self.bytes, self.queue, port.mtu
            ),
        }
    }
}

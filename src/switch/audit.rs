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

    fn first_data(&mut self, meta: &FrameMeta, tc: u8, q: usize, cfg: &SwitchConfig) {
        if !cfg.lossless.contains(tc) {
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
        format!("... no {what} maps to a lossless class in this configuration")
    } else {
        format!(
            "{what} {} (those that map to lossless classes)",
            codes.join(" or ")
        )
    }
}

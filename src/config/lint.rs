//! What a configuration most often gets wrong, found in the configuration alone: RoCE's
//! usual DSCPs in lossy classes, the CNP DSCP in a queue that neither is strict nor
//! lossless, a headroom below what a port's cable and speed need, and ECN thresholds
//! above the lossless XOFF point (PFC fires before ECN can act). Each is a warning with
//! the key that shows it; the configuration still loads, as a switch would take it.

use super::{CLASSES, Schedule, SwitchConfig, Trust, XoffRule, min_headroom_bytes};

/// One warning about a configuration.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConfigWarning {
    /// The key that shows it, dotted (`pg.3.headroom_bytes`).
    pub key: String,
    /// What is wrong and what it does, in words.
    pub message: String,
}

/// The DSCPs RoCEv2 traffic usually carries: 26 (the NVIDIA/Mellanox NIC default), 24
/// (Cisco's AI/ML blueprint), 3 and 4 (SONiC's AZURE maps).
pub const ROCE_DSCPS: [u8; 4] = [26, 24, 3, 4];

/// The DSCP NICs give CNPs by default (NVIDIA `cnp_dscp` 48).
pub const CNP_DSCP: u8 = 48;

/// The PCP RoCE NICs use by default (priority 3).
const ROCE_PCP: u8 = 3;

impl SwitchConfig {
    /// The warnings, each once, in a fixed order.
    pub fn lint(&self) -> Vec<ConfigWarning> {
        let mut out = Vec::new();
        match self.trust {
            Trust::Dscp => self.lint_dscp_classes(&mut out),
            Trust::Pcp => self.lint_pcp_classes(&mut out),
        }
        self.lint_headroom_model(&mut out);
        self.lint_pg_headroom(&mut out);
        self.lint_ecn_against_xoff(&mut out);
        debug_assert!(out.len() <= 4 * CLASSES + 4);
        out
    }

    /// The lossless priorities, as a warning lists them (`3,4`).
    fn lossless_list(&self) -> String {
        let lossless: Vec<String> = self.lossless.iter().map(|p| p.to_string()).collect();
        lossless.join(",")
    }

    /// Under DSCP trust: no lossless class, RoCE's usual DSCPs all lossy, and CNPs in a
    /// queue that is neither strict nor lossless.
    fn lint_dscp_classes(&self, out: &mut Vec<ConfigWarning>) {
        if self.lossless.is_empty() {
            warn(
                out,
                "pfc.lossless",
                "no priority is lossless: RoCE traffic is dropped, not paused, when a queue fills"
                    .into(),
            );
        } else if ROCE_DSCPS
            .iter()
            .all(|&d| !self.lossless.contains(self.dscp_to_tc[usize::from(d)]))
        {
            let path: Vec<String> = ROCE_DSCPS
                .iter()
                .map(|&d| format!("DSCP {d} -> TC {}", self.dscp_to_tc[usize::from(d)]))
                .collect();
            warn(
                out,
                "classify.dscp_to_tc",
                format!(
                    "none of RoCE's usual DSCPs (26 NIC default, 24 Nexus, 3 and 4 SONiC) lands in a lossless class ({}; lossless: {}): make sure your NICs' DSCP does",
                    path.join(", "),
                    self.lossless_list()
                ),
            );
        }
        let tc = self.dscp_to_tc[usize::from(CNP_DSCP)];
        let q = usize::from(self.tc_to_queue[usize::from(tc)]);
        if self.queues[q].schedule != Schedule::Strict && !self.lossless.contains(tc) {
            warn(
                out,
                "classify.dscp_to_tc",
                format!(
                    "CNPs (DSCP {CNP_DSCP}, the NIC default) land in TC {tc}, queue {q}, which is neither strict priority nor lossless: they wait behind other traffic, or drop, and DCQCN reacts late"
                ),
            );
        }
    }

    /// Under PCP trust: RoCE's usual priority in a lossy class.
    fn lint_pcp_classes(&self, out: &mut Vec<ConfigWarning>) {
        if !self
            .lossless
            .contains(self.pcp_to_tc[usize::from(ROCE_PCP)])
        {
            warn(
                out,
                "classify.pcp_to_tc",
                format!(
                    "PCP {ROCE_PCP} (RoCE NICs' default priority) lands in TC {}, which is not lossless (lossless: {})",
                    self.pcp_to_tc[usize::from(ROCE_PCP)],
                    self.lossless_list()
                ),
            );
        }
    }

    /// Ports whose computed headroom is short of the IEEE minimum, when a lossless PG
    /// takes its headroom from the model.
    fn lint_headroom_model(&self, out: &mut Vec<ConfigWarning>) {
        if self
            .lossless
            .iter()
            .any(|pg| self.pgs[usize::from(pg)].headroom_bytes.is_none())
        {
            // Ports short of the IEEE minimum, grouped by (computed, needed).
            let mut short: Vec<((u64, u64), Vec<&str>)> = Vec::new();
            let ports: Vec<_> = if self.ports.is_empty() {
                vec![&self.port_defaults]
            } else {
                self.ports.iter().collect()
            };
            for port in ports {
                let key = (self.headroom_model.bytes(port), min_headroom_bytes(port));
                if key.0 < key.1 {
                    match short.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, names)) => names.push(&port.name),
                        None => short.push((key, vec![&port.name])),
                    }
                }
            }
            if !short.is_empty() {
                let list: Vec<String> = short
                    .iter()
                    .map(|((got, need), names)| {
                        format!("{}: {got} B of {need} B", names.join(", "))
                    })
                    .collect();
                warn(
                    out,
                    "buffer.headroom_model",
                    format!(
                        "\"{}\" gives less headroom than MTU-sized frames need when the peer answers as late as IEEE 802.3 allows (2 x MTU + 2 x cable delay x rate + the PFC frame + response): {}",
                        self.headroom_model.name(),
                        list.join("; ")
                    ),
                );
            }
        }
    }

    /// A lossless PG's configured headroom below what a port needs.
    fn lint_pg_headroom(&self, out: &mut Vec<ConfigWarning>) {
        for pg in self.lossless.iter().map(usize::from) {
            if let Some(h) = self.pgs[pg].headroom_bytes {
                for port in self.ports.iter().chain([&self.port_defaults]) {
                    let need = min_headroom_bytes(port);
                    if h < need {
                        warn(
                            out,
                            &format!("pg.{pg}.headroom_bytes"),
                            format!(
                                "{h} B is below the {need} B port '{}' needs ({} Gb/s, {} ns cable, MTU {}: 2 x MTU + 2 x cable delay x rate + the PFC frame + the peer's response): frames still in flight after XOFF are dropped",
                                port.name,
                                port.bits_per_sec as f64 / 1e9,
                                port.cable.0,
                                port.mtu
                            ),
                        );
                        break;
                    }
                }
            }
        }
    }

    /// ECN thresholds above the point where a lossless PG sends XOFF (PFC fires first).
    fn lint_ecn_against_xoff(&self, out: &mut Vec<ConfigWarning>) {
        for pg in self.lossless.iter().map(usize::from) {
            let q = usize::from(self.tc_to_queue[pg]);
            let Some(red) = self.queues[q].ecn else {
                continue;
            };
            let pgc = &self.pgs[pg];
            // The queue depth at which a lone lossless flow makes its PG send XOFF.
            let xoff_depth = pgc.reserve_bytes
                + match pgc.xoff {
                    XoffRule::Static { xoff_bytes, .. } => xoff_bytes,
                    XoffRule::Dynamic { alpha, .. } => {
                        (alpha * self.shared_bytes as f64 / (1.0 + alpha)) as u64
                    }
                };
            let shared = self.shared_bytes;
            if red.kmin_bytes > shared {
                warn(
                    out,
                    &format!("queue.{q}.ecn.kmin_bytes"),
                    format!(
                        "ECN starts at {} B, above the {shared} B shared buffer: the queue never holds that much, so ECN never marks and PFC alone slows the senders (PG {pg} sends XOFF at {xoff_depth} B for a lone flow)",
                        red.kmin_bytes
                    ),
                );
            } else if red.kmin_bytes >= xoff_depth {
                warn(
                    out,
                    &format!("queue.{q}.ecn.kmin_bytes"),
                    format!(
                        "ECN starts at {} B, at or above the {xoff_depth} B at which PG {pg} sends XOFF for a lone flow: PFC fires before ECN can act, so DCQCN never slows the senders first",
                        red.kmin_bytes
                    ),
                );
            } else if red.kmax_bytes > xoff_depth {
                // RED's line: the marking probability where PFC takes over.
                let at_xoff = red.pmax * (xoff_depth - red.kmin_bytes) as f64
                    / (red.kmax_bytes - red.kmin_bytes) as f64;
                let beyond = if red.kmax_bytes > shared {
                    format!(", and above the {shared} B shared buffer")
                } else {
                    String::new()
                };
                warn(
                    out,
                    &format!("queue.{q}.ecn.kmax_bytes"),
                    format!(
                        "ECN's Kmax {} B is above the {xoff_depth} B at which PG {pg} sends XOFF for a lone flow{beyond}: PFC pauses the senders before marking reaches pmax {2}; at the XOFF point ECN marks with probability {1:.4} of the {2} configured, and PFC does the rest",
                        red.kmax_bytes, at_xoff, red.pmax
                    ),
                );
            }
        }
    }
}

fn warn(out: &mut Vec<ConfigWarning>, key: &str, message: String) {
    out.push(ConfigWarning {
        key: key.to_owned(),
        message,
    });
}

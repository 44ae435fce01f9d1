//! Scenarios for `rocelab sim`: a TOML file (or a built-in one) that names a topology, the
//! switch configuration (a preset or a file, with keys laid over it), the endpoint
//! configuration, bulk flows and a ring all-reduce sweep. Errors name the key and say
//! what is allowed, as the switch configuration's do.
//!
//! The file's schema is in `schema`; `load` finds and reads a scenario (built-in, file,
//! switch preset or file, variants); `validate` checks it into a [`Scenario`], and
//! `budget` bounds what it may cost to run.

mod budget;
mod load;
mod schema;
mod validate;

pub use super::topology::{LoadBalancing, Shape, Topology};
pub use budget::{DEFAULT_MAX_FRAMES, DEFAULT_MEMORY_BUDGET_MIB};
pub use load::{
    COMPARABLE, SCENARIOS, ScenarioError, digest, names, pfc_flag_as_table, scenario_text,
    set_seed, table_seed,
};
pub use schema::MAX_SEED;
pub use validate::MAX_HOSTS;

use super::fabric::{CUT_THROUGH_HEADER_BYTES, Fabric};
use super::faults::{HostFault, LinkFault};
use super::topology::{self, Network};
use super::workloads::{WorkloadFlow, WorkloadPlan};
use crate::config::endpoint::EndpointConfig;
use crate::config::{ConfigError, SwitchConfig};
use crate::endpoint::app::flow::Flow;
use crate::endpoint::app::flows::FlowSet;
use crate::time::Nanos;

fn err(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.into(),
        message: message.into(),
    }
}

/// A bulk flow, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowPlan {
    /// Sending host, 0 to hosts − 1.
    pub from: usize,
    /// Receiving host, another than `from`.
    pub to: usize,
    /// When it starts.
    pub start: Nanos,
    /// Bytes to send (`None`: until the run ends).
    pub bytes: Option<u64>,
    /// Bytes per WRITE message, 1 B to 1 GiB.
    pub message_bytes: usize,
}

/// A ring all-reduce sweep, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct AllReducePlan {
    /// The hosts that are ranks, in ring order.
    pub ranks: Vec<usize>,
    /// Sizes in bytes per rank, smallest first.
    pub sizes: Vec<u64>,
    /// The size whose run is recorded as the time series.
    pub series_bytes: u64,
    /// When the ranks start (the background flows from their own start).
    pub start: Nanos,
    /// Bytes of an untimed all-reduce before the timed sizes (nccl-tests' `-w`), if any.
    pub warm_up: Option<u64>,
    /// Every size one after the other on one network, the flows running throughout, as
    /// nccl-tests runs them in one process and as the live lab does; otherwise (the
    /// default) each size on a fresh network.
    pub back_to_back: bool,
}

impl AllReducePlan {
    /// The sizes each rank runs, in order: the warm-up first, then the timed sizes.
    pub fn runs(&self) -> Vec<u64> {
        self.warm_up
            .into_iter()
            .chain(self.sizes.iter().copied())
            .collect()
    }
}

/// A validated scenario: topology, configurations and workload, ready to [`build`](Self::build).
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Its name (the built-in name or the file name).
    pub name: String,
    /// A digest of the TOML text it was read from, edits included ([`digest`]); empty
    /// for one built in code. A sweep's merge checks a result by it.
    pub digest: String,
    /// What it shows.
    pub description: String,
    /// Seed of every random draw (RED, link loss, the workloads' flows).
    pub seed: u64,
    /// How long flows run; with an all-reduce, the limit of each size's run.
    pub duration: Nanos,
    /// Flow rates are averaged from here to the end (warm-up left out).
    pub measure_from: Nanos,
    /// Time-series step (`sample_us`).
    pub sample: Nanos,
    /// Shape, link rate, delay and loss of the network.
    pub topology: Topology,
    /// What keeps the fabric lossless: RoCEv2 (the switch configuration's PFC and ECN)
    /// or InfiniBand credits.
    pub fabric: Fabric,
    /// Every switch's configuration (ports come from the topology); on InfiniBand, its
    /// queues are the VLs and PFC and ECN are off.
    pub switch: SwitchConfig,
    /// Where it came from, in words: the preset or file, PFC or ECN off, and the keys the
    /// scenario changes (`preset sonic; ECN off; changed buffer.shared_bytes = 2097152`).
    pub switch_source: String,
    /// Every endpoint's configuration.
    pub endpoint: EndpointConfig,
    /// Bulk flows, in file order; they run beside any all-reduce.
    pub flows: Vec<FlowPlan>,
    /// The all-reduce sweep, if any.
    pub allreduce: Option<AllReducePlan>,
    /// The `[[workload]]` entries, resolved.
    pub workloads: Vec<WorkloadPlan>,
    /// Their flows, in arrival order (each flow's index is its id in the report).
    pub jobs: Vec<WorkloadFlow>,
    /// NIC faults of some hosts (`[[fault]]`).
    pub faults: Vec<HostFault>,
    /// Links between a leaf and a spine that run slower for a while (`slow-link` faults).
    pub link_faults: Vec<LinkFault>,
    /// Leaves that balance with a mode of their own (`topology.switch_load_balancing`),
    /// by index, over `topology.load_balancing`.
    pub switch_load_balancing: Vec<(usize, LoadBalancing)>,
    /// Threads one run uses ([`Engine::set_threads`](super::Engine::set_threads)): a
    /// way to run, not part of the scenario (no TOML key; the output is the same).
    pub threads: usize,
    /// Carries every frame's payload in full ([`Engine::set_elide`](super::Engine::set_elide)
    /// off): a way to run, not part of the scenario (no TOML key; the output is the same,
    /// which is what it is for).
    pub whole_frames: bool,
    /// The variant's name, for one of [`variants`](Self::variants).
    pub variant: Option<String>,
    /// The same scenario with some keys changed (`[[variant]]`), run one after the other
    /// and compared; empty when the scenario has none.
    pub variants: Vec<Scenario>,
}

/// Bytes a data frame adds to its payload at most: Ethernet 14, IPv4 20, UDP 8, BTH 12,
/// RETH 16, ImmDt 4, ICRC 4.
const LARGEST_FRAME_OVERHEAD: usize = 78;

/// Bytes per WRITE message of a workload's flows (the last one of a flow shorter).
pub const WORKLOAD_MESSAGE_BYTES: usize = 16384;

impl Scenario {
    /// The load balancing in words, each leaf with a mode of its own after it (`None` when
    /// the scenario names none).
    pub fn describe_load_balancing(&self) -> Option<String> {
        let mut text = self.topology.load_balancing?.describe();
        for (leaf, mode) in &self.switch_load_balancing {
            text.push_str(&format!("; leaf{leaf}: {}", mode.describe()));
        }
        Some(text)
    }

    /// Per host, whether anything in the scenario uses it: a `[[flow]]`, a workload flow
    /// or an all-reduce rank (sending or receiving), or a `[[fault]]`. The time series
    /// records these hosts and their ports only.
    pub fn active_hosts(&self) -> Vec<bool> {
        let mut on = vec![false; self.topology.hosts()];
        let mut mark = |h: usize| {
            if let Some(x) = on.get_mut(h) {
                *x = true;
            }
        };
        for f in &self.flows {
            mark(f.from);
            mark(f.to);
        }
        for j in &self.jobs {
            mark(j.from);
            mark(j.to);
        }
        for &r in self.allreduce.iter().flat_map(|a| &a.ranks) {
            mark(r);
        }
        for f in &self.faults {
            mark(f.host);
        }
        on
    }

    /// Each switch's forwarding latency on the scenario's fabric.
    pub fn switch_latency(&self) -> Nanos {
        match &self.fabric {
            Fabric::Roce | Fabric::Iwarp(_) => self.topology.switch_latency,
            Fabric::Ib(ib) => ib.switch_latency,
        }
    }

    /// The header bits after which switches forward, if they cut through.
    pub fn cut_through_bits(&self) -> Option<u64> {
        match &self.fabric {
            Fabric::Ib(ib) if ib.cut_through => Some(CUT_THROUGH_HEADER_BYTES * 8),
            _ => None,
        }
    }

    /// Builds the network with its flows (the all-reduce ranks get theirs from
    /// [`super::allreduce`]), seeded with `seed`.
    pub fn build(&self, seed: u64) -> Network {
        let t = &self.topology;
        let mut ep = self.endpoint.clone();
        ep.link_gbps = t.bits_per_sec as f64 / 1e9;
        if ep.selective_repeat.bdp_cap_packets == 0 {
            ep.selective_repeat.bdp_cap_packets = t.bdp_packets(ep.mtu);
        }
        if ep.base_rtt_us == 0.0 {
            ep.base_rtt_us = t.base_rtt(ep.mtu).0 as f64 / 1000.0;
        }
        if ep.swift.hops == 0 {
            ep.swift.hops = t.longest_hops().saturating_sub(1).max(1) as u32;
        }
        if ep.selective_repeat.reorder_packets == 0 {
            // Spraying reorders by up to the difference of the paths' queues, bounded by
            // what is in flight; half the cap leaves the other half to find real losses.
            let sprays = t
                .load_balancing
                .iter()
                .chain(self.switch_load_balancing.iter().map(|(_, m)| m))
                .any(|m| matches!(m, LoadBalancing::PerPacket { .. } | LoadBalancing::Adaptive));
            ep.selective_repeat.reorder_packets = if sprays {
                (ep.selective_repeat.bdp_cap_packets / 2).max(1)
            } else {
                1
            };
        }
        let mut net = match t.shape {
            Shape::Star { hosts } => {
                topology::star(&self.switch, &ep, hosts, t.delay, t.loss, seed)
            }
            Shape::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
            } => topology::leaf_spine(
                &self.switch,
                &ep,
                leaves,
                spines,
                hosts_per_leaf,
                t.delay,
                seed,
            ),
            Shape::Ring {
                switches,
                hosts_per_switch,
            } => topology::ring(&self.switch, &ep, switches, hosts_per_switch, t.delay, seed),
            Shape::FatTree(f) => {
                topology::fat_tree(&self.switch, &ep, f, t.fabric_bits_per_sec, t.delay, seed)
            }
        };
        net.use_fabric(&self.fabric, &self.switch, t);
        net.set_load_balancing(t.load_balancing.unwrap_or_default(), seed);
        for &(leaf, mode) in &self.switch_load_balancing {
            net.set_switch_load_balancing(leaf, mode, seed);
        }
        // Flows of one message size share its buffer (the bytes are the same): a
        for f in &self.flows {
            Flow::prepare_receiver(net.endpoint_mut(f.to), f.message_bytes);
            let (q, _) = net.connect_qp(f.from, f.to);
            let message = Flow::message(f.message_bytes);
            net.host_mut(f.from).app =
                Some(Flow::with_message(q, f.bytes, message, f.start).into());
        }
        self.build_workloads(&mut net);
        for f in &self.faults {
            net.endpoint_mut(f.host).set_faults(f.faults);
        }
        for f in &self.link_faults {
            net.set_uplink_rate_at(f.start, f.leaf, f.spine, f.bits_per_sec);
            if let Some(stop) = f.stop {
                net.set_uplink_rate_at(stop, f.leaf, f.spine, t.bits_per_sec);
            }
        }
        net.engine.set_threads(self.threads);
        net.engine.set_elide(!self.whole_frames);
        net
    }

    /// Gives each host that sends workload flows a [`FlowSet`] with its QPs: to each
    /// peer, as many as it has flows to that peer, at most the endpoint's
    /// `max_qps_per_peer`.
    fn build_workloads(&self, net: &mut Network) {
        if self.jobs.is_empty() {
            return;
        }
        let hosts = self.topology.hosts();
        let mut per_host: Vec<Vec<(usize, &WorkloadFlow)>> = vec![Vec::new(); hosts];
        for (id, j) in self.jobs.iter().enumerate() {
            per_host[j.from].push((id, j));
        }
        let mut receivers = vec![false; hosts];
        let limit = self.endpoint.max_qps_per_peer.max(1) as usize;
        for (from, mine) in per_host.into_iter().enumerate() {
            if mine.is_empty() {
                continue;
            }
            // Peers in the order first met; per peer, its flow count.
            let mut slot = vec![usize::MAX; hosts];
            let mut peers: Vec<(usize, usize)> = Vec::new();
            for (_, j) in &mine {
                if slot[j.to] == usize::MAX {
                    slot[j.to] = peers.len();
                    peers.push((j.to, 0));
                }
                peers[slot[j.to]].1 += 1;
            }
            let qps: Vec<Vec<usize>> = peers
                .iter()
                .map(|&(to, n)| {
                    (0..n.min(limit))
                        .map(|_| {
                            let (qa, qb) = net.connect_qp(from, to);
                            net.workload_receive_qps.push((to, qb));
                            qa
                        })
                        .collect()
                })
                .collect();
            for &(to, _) in &peers {
                if !std::mem::replace(&mut receivers[to], true) {
                    Flow::prepare_receiver(net.endpoint_mut(to), WORKLOAD_MESSAGE_BYTES);
                }
            }
            let jobs = mine
                .iter()
                .map(|&(id, j)| crate::endpoint::app::flows::FlowJob {
                    id,
                    peer: slot[j.to],
                    arrival: j.arrival,
                    bytes: j.bytes,
                })
                .collect();
            net.host_mut(from).app = Some(FlowSet::new(jobs, qps, WORKLOAD_MESSAGE_BYTES).into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_take_suffixes_as_on_the_command_line() {
        let base = scenario_text("ring").expect("the built-in ring");
        let with = |min: &str, max: &str| {
            let text: String = base
                .lines()
                .map(|l| {
                    if l.starts_with("min_bytes") {
                        format!("min_bytes = {min}")
                    } else if l.starts_with("max_bytes") {
                        format!("max_bytes = {max}")
                    } else {
                        l.to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
            Scenario::from_toml("t", &text, None)
        };
        let s = with("\"8K\"", "\"1M\"").expect("suffixed sizes");
        let plan = s.allreduce.expect("an all-reduce");
        assert_eq!(plan.sizes.first(), Some(&8192));
        assert_eq!(plan.sizes.last(), Some(&(1 << 20)));
        let n = with("8192", "1048576").unwrap().allreduce.unwrap();
        assert_eq!(n.sizes, plan.sizes, "the same as plain integers");
        let err = with("\"8Q\"", "\"1M\"").unwrap_err().to_string();
        assert!(err.contains("'8Q'") && err.contains("line"), "{err}");
    }

    #[test]
    fn the_digest_is_fnv1a_of_the_text() {
        // FNV-1a 64's published test vectors (Fowler, Noll, Vo).
        assert_eq!(digest(""), "fnv1a64:cbf29ce484222325");
        assert_eq!(digest("a"), "fnv1a64:af63dc4c8601ec8c");
        assert_eq!(digest("foobar"), "fnv1a64:85944171f73967e8");
        let s = Scenario::from_toml("t", scenario_text("incast").unwrap(), None).unwrap();
        assert_eq!(s.digest, digest(scenario_text("incast").unwrap()));
    }
}

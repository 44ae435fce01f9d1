//! A scenario file as written: the serde structures of its TOML and their defaults.
//! `validate` turns them into a [`Scenario`](super::Scenario).

use crate::sim::fabric::{IbSpec, IwarpSpec};
use crate::sim::faults::FaultSpec;
use crate::sim::sweep::SweepTable;
use crate::sim::workloads::WorkloadSpec;
use serde::Deserialize;

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ScenarioFile {
    #[serde(default)]
    pub(super) description: String,
    #[serde(default = "one", deserialize_with = "seed_value")]
    pub(super) seed: u64,
    pub(super) duration_ms: Option<f64>,
    #[serde(default)]
    pub(super) measure_from_ms: f64,
    #[serde(default = "ten")]
    pub(super) sample_us: f64,
    pub(super) topology: TopologySpec,
    #[serde(default)]
    pub(super) switch: toml::Table,
    #[serde(default)]
    pub(super) endpoint: toml::Table,
    #[serde(default, rename = "flow")]
    pub(super) flows: Vec<FlowSpec>,
    pub(super) allreduce: Option<AllReduceSpec>,
    pub(super) memory_budget_mib: Option<u64>,
    pub(super) max_frames: Option<u64>,
    #[serde(default, rename = "fault")]
    pub(super) faults: Vec<FaultSpec>,
    #[serde(default, rename = "workload")]
    pub(super) workloads: Vec<WorkloadSpec>,
    pub(super) fabric: Option<String>,
    pub(super) ib: Option<IbSpec>,
    /// The `[iwarp]` table: iWARP's TCP, with `fabric = "iwarp"`.
    pub(super) iwarp: Option<IwarpSpec>,
    /// `rocelab sweep`'s grid and seeds; `sim` runs the scenario as written (its keys are
    /// checked: a misspelt one would be lost on the sweep).
    #[serde(default)]
    #[allow(dead_code)]
    pub(super) sweep: Option<SweepTable>,
    /// Checked and applied by [`Scenario::from_toml`](super::Scenario::from_toml), before this struct is resolved.
    #[serde(default, rename = "variant")]
    pub(super) variants: Vec<toml::Table>,
}

fn one() -> u64 {
    1
}

/// The largest seed: a scenario's `seed` is a TOML integer, and TOML's are 64-bit signed.
pub const MAX_SEED: u64 = i64::MAX as u64;

/// `seed`: a whole number from 0 to [`MAX_SEED`].
fn seed_value<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match toml::Value::deserialize(d)? {
        toml::Value::Integer(n) if n >= 0 => Ok(n.unsigned_abs()),
        other => Err(serde::de::Error::custom(format!(
            "{other} is not a seed; give a whole number from 0 to {MAX_SEED}"
        ))),
    }
}

fn ten() -> f64 {
    10.0
}

/// The `[topology]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TopologySpec {
    pub(super) kind: String,
    pub(super) hosts: Option<usize>,
    pub(super) leaves: Option<usize>,
    pub(super) spines: Option<usize>,
    pub(super) hosts_per_leaf: Option<usize>,
    pub(super) switches: Option<usize>,
    pub(super) hosts_per_switch: Option<usize>,
    pub(super) pods: Option<usize>,
    pub(super) tors_per_pod: Option<usize>,
    pub(super) aggs_per_pod: Option<usize>,
    pub(super) cores: Option<usize>,
    pub(super) hosts_per_tor: Option<usize>,
    pub(super) link_gbps: f64,
    /// The links between switches' rate (a fat tree's; `link_gbps` if absent).
    pub(super) fabric_gbps: Option<f64>,
    #[serde(default = "thousand")]
    pub(super) delay_ns: u64,
    #[serde(default)]
    pub(super) loss: f64,
    #[serde(default)]
    pub(super) switch_latency_ns: u64,
    pub(super) load_balancing: Option<String>,
    pub(super) flowlet_gap_us: Option<f64>,
    pub(super) ecmp_seed: Option<String>,
    pub(super) spraying: Option<String>,
    /// Per-switch modes over `load_balancing`: a leaf's name (`leaf0`) to a mode.
    pub(super) switch_load_balancing: Option<std::collections::BTreeMap<String, String>>,
}

fn thousand() -> u64 {
    1000
}

/// A bulk flow as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FlowSpec {
    pub(super) from: usize,
    pub(super) to: usize,
    #[serde(default)]
    pub(super) start_us: f64,
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    pub(super) bytes: Option<u64>,
    #[serde(
        default = "default_message",
        deserialize_with = "crate::bytes::deserialize"
    )]
    pub(super) message_bytes: u64,
}

fn default_message() -> u64 {
    1000
}

/// The `[allreduce]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AllReduceSpec {
    pub(super) ranks: Option<Vec<usize>>,
    #[serde(
        default = "default_min",
        deserialize_with = "crate::bytes::deserialize"
    )]
    pub(super) min_bytes: u64,
    #[serde(
        default = "default_max",
        deserialize_with = "crate::bytes::deserialize"
    )]
    pub(super) max_bytes: u64,
    #[serde(default = "two")]
    pub(super) factor: u64,
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    pub(super) series_bytes: Option<u64>,
    #[serde(default)]
    pub(super) start_us: f64,
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    pub(super) warm_up_bytes: Option<u64>,
    #[serde(default)]
    pub(super) back_to_back: bool,
}

fn default_min() -> u64 {
    8 << 10
}

fn default_max() -> u64 {
    64 << 20
}

fn two() -> u64 {
    2
}

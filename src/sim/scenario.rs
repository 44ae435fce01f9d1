//! Scenarios for `rocelab sim`: a TOML file (or a built-in one) that names a topology, the
//! switch configuration (a preset or a file, with keys laid over it), the endpoint
//! configuration, bulk flows and a ring all-reduce sweep. Errors name the key and say
//! what is allowed, as the switch configuration's do.

use super::fabric::Fabric;
use super::faults::{self, FaultSpec, HostFault};
use super::topology::{self, Network};
use super::traffic::{FlowJob, WorkloadPlan, WorkloadSpec};
use crate::config::endpoint::EndpointConfig;
use crate::config::{ConfigError, SwitchConfig, did_you_mean, location, merge_toml, preset_text};
use crate::endpoint::flow::Flow;
use crate::endpoint::flows::FlowSet;
use crate::endpoint::sweep::{self, SweepError};
use crate::time::Nanos;
use serde::Deserialize;
use std::path::Path;

/// The built-in scenarios: (name, TOML text).
pub const SCENARIOS: [(&str, &str); 15] = [
    ("incast", include_str!("scenarios/incast.toml")),
    ("incast-8", include_str!("scenarios/incast-8.toml")),
    ("incast-64", include_str!("scenarios/incast-64.toml")),
    ("pfc-incast", include_str!("scenarios/pfc-incast.toml")),
    ("ecn-vs-pfc", include_str!("scenarios/ecn-vs-pfc.toml")),
    (
        "slow-receiver",
        include_str!("scenarios/slow-receiver.toml"),
    ),
    ("victim-flow", include_str!("scenarios/victim-flow.toml")),
    ("pfc-storm", include_str!("scenarios/pfc-storm.toml")),
    ("deadlock", include_str!("scenarios/deadlock.toml")),
    ("staggered", include_str!("scenarios/staggered.toml")),
    ("ring", include_str!("scenarios/ring.toml")),
    ("ring-incast", include_str!("scenarios/ring-incast.toml")),
    ("leaf-spine", include_str!("scenarios/leaf-spine.toml")),
    ("web-search", include_str!("scenarios/web-search.toml")),
    (
        "lab-congestion",
        include_str!("scenarios/lab-congestion.toml"),
    ),
];

/// The built-in scenarios meant for `rocelab compare`: the ones that run unchanged on
/// RoCEv2 and on InfiniBand (no NIC faults, which are PFC's; no PFC watchdog).
pub const COMPARABLE: [&str; 10] = [
    "incast",
    "incast-8",
    "incast-64",
    "pfc-incast",
    "victim-flow",
    "staggered",
    "ring",
    "ring-incast",
    "leaf-spine",
    "web-search",
];

/// The keys a scenario takes, for "did you mean": the built-in scenarios', the switch's
/// under `switch.` and the endpoint's under `endpoint.`.
fn scenario_keys() -> Vec<String> {
    use did_you_mean::{leaf_keys, switch_keys};
    let texts: Vec<&str> = SCENARIOS.iter().map(|(_, t)| *t).collect();
    let mut keys = leaf_keys(&texts, "");
    keys.extend(switch_keys().into_iter().map(|k| format!("switch.{k}")));
    keys.extend(leaf_keys(&[crate::config::ENDPOINT_DEFAULTS], "endpoint."));
    keys
}

/// The TOML text of a built-in scenario.
pub fn scenario_text(name: &str) -> Option<&'static str> {
    SCENARIOS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

fn err(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.into(),
        message: message.into(),
    }
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    #[serde(default)]
    description: String,
    #[serde(default = "one", deserialize_with = "seed_value")]
    seed: u64,
    duration_ms: Option<f64>,
    #[serde(default)]
    measure_from_ms: f64,
    #[serde(default = "ten")]
    sample_us: f64,
    topology: TopologySpec,
    #[serde(default)]
    switch: toml::Table,
    #[serde(default)]
    endpoint: toml::Table,
    #[serde(default, rename = "flow")]
    flows: Vec<FlowSpec>,
    allreduce: Option<AllReduceSpec>,
    memory_budget_mib: Option<u64>,
    max_frames: Option<u64>,
    #[serde(default, rename = "fault")]
    faults: Vec<FaultSpec>,
    #[serde(default, rename = "workload")]
    workloads: Vec<WorkloadSpec>,
    fabric: Option<String>,
    ib: Option<super::fabric::IbSpec>,
    /// `rocelab sweep`'s grid and seeds; `sim` runs the scenario as written (its keys are
    /// checked: a misspelt one would be lost on the sweep).
    #[serde(default)]
    #[allow(dead_code)]
    sweep: Option<super::sweep::SweepTable>,
    /// Checked and applied by [`Scenario::from_toml`], before this struct is resolved.
    #[serde(default, rename = "variant")]
    variants: Vec<toml::Table>,
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

/// Sets a scenario table's `seed` (the command line's `--seed`), as `--set seed=N` does:
/// every draw of the scenario, its workloads' flows included, follows it.
pub fn set_seed(table: &mut toml::Table, seed: u64) -> Result<(), ConfigError> {
    let n = i64::try_from(seed).map_err(|_| {
        err(
            "seed",
            format!("{seed} is not allowed; give a whole number from 0 to {MAX_SEED}"),
        )
    })?;
    table.insert("seed".into(), toml::Value::Integer(n));
    Ok(())
}

/// Writes a scenario's `switch.pfc = true|false` as `switch.pfc.enabled`, so that keys of
/// the switch configuration's `[pfc]` table (`--set switch.pfc.pause_quanta=1000`) can go
/// in beside it, and a variant's `[pfc]` keys merge with the scenario's switch rather
/// than replace it.
pub fn pfc_flag_as_table(table: &mut toml::Table) {
    if let Some(toml::Value::Table(switch)) = table.get_mut("switch") {
        pfc_flag_in_switch(switch);
    }
}

fn pfc_flag_in_switch(switch: &mut toml::Table) {
    if let Some(toml::Value::Boolean(on)) = switch.get("pfc") {
        let on = *on;
        let mut pfc = toml::Table::new();
        pfc.insert("enabled".into(), on.into());
        switch.insert("pfc".into(), toml::Value::Table(pfc));
    }
}

fn ten() -> f64 {
    10.0
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopologySpec {
    kind: String,
    hosts: Option<usize>,
    leaves: Option<usize>,
    spines: Option<usize>,
    hosts_per_leaf: Option<usize>,
    switches: Option<usize>,
    hosts_per_switch: Option<usize>,
    link_gbps: f64,
    #[serde(default = "thousand")]
    delay_ns: u64,
    #[serde(default)]
    loss: f64,
    #[serde(default)]
    switch_latency_ns: u64,
}

fn thousand() -> u64 {
    1000
}

/// A bulk flow as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowSpec {
    from: usize,
    to: usize,
    #[serde(default)]
    start_us: f64,
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    bytes: Option<u64>,
    #[serde(
        default = "default_message",
        deserialize_with = "crate::bytes::deserialize"
    )]
    message_bytes: u64,
}

fn default_message() -> u64 {
    1000
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AllReduceSpec {
    ranks: Option<Vec<usize>>,
    #[serde(
        default = "default_min",
        deserialize_with = "crate::bytes::deserialize"
    )]
    min_bytes: u64,
    #[serde(
        default = "default_max",
        deserialize_with = "crate::bytes::deserialize"
    )]
    max_bytes: u64,
    #[serde(default = "two")]
    factor: u64,
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    series_bytes: Option<u64>,
    #[serde(default)]
    start_us: f64,
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    warm_up_bytes: Option<u64>,
    #[serde(default)]
    back_to_back: bool,
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

/// The shape of the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One switch, `hosts` hosts.
    Star {
        /// Hosts on the switch, 2 to 4096.
        hosts: usize,
    },
    /// Switches in a ring, each with hosts; traffic goes the shorter way round.
    Ring {
        /// Switches in the ring, 3 to 64.
        switches: usize,
        /// Hosts on each switch.
        hosts_per_switch: usize,
    },
    /// Leaves with hosts, every leaf linked to every spine, ECMP over the spines.
    LeafSpine {
        /// Leaf switches, each with `hosts_per_leaf` hosts.
        leaves: usize,
        /// Spine switches, each linked to every leaf.
        spines: usize,
        /// Hosts under each leaf.
        hosts_per_leaf: usize,
    },
}

/// The topology, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Topology {
    /// Star or leaf–spine.
    pub shape: Shape,
    /// Every link's rate, bit/s.
    pub bits_per_sec: u64,
    /// Every link's propagation delay.
    pub delay: Nanos,
    /// Loss probability on host links (star only).
    pub loss: f64,
    /// On RoCEv2: each switch's forwarding latency, from a frame's last bit in to the
    /// earliest its first bit may go out (store-and-forward). InfiniBand's is `[ib]`'s.
    pub switch_latency: Nanos,
}

impl Topology {
    /// Links on the path from host `a` to host `b`: 2 through one switch; across a
    /// leaf–spine, 4; around a ring, 2 plus the switches between (the shorter way).
    pub fn hops(&self, a: usize, b: usize) -> usize {
        match self.shape {
            Shape::Star { .. } => 2,
            Shape::LeafSpine { hosts_per_leaf, .. } => {
                if a / hosts_per_leaf.max(1) == b / hosts_per_leaf.max(1) {
                    2
                } else {
                    4
                }
            }
            Shape::Ring {
                switches,
                hosts_per_switch,
            } => {
                let (i, j) = (a / hosts_per_switch.max(1), b / hosts_per_switch.max(1));
                let d = i.abs_diff(j);
                2 + d.min(switches - d)
            }
        }
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        match self.shape {
            Shape::Star { hosts } => hosts,
            Shape::LeafSpine {
                leaves,
                hosts_per_leaf,
                ..
            } => leaves * hosts_per_leaf,
            Shape::Ring {
                switches,
                hosts_per_switch,
            } => switches * hosts_per_switch,
        }
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
    pub jobs: Vec<FlowJob>,
    /// NIC faults of some hosts (`[[fault]]`).
    pub faults: Vec<HostFault>,
    /// The variant's name, for one of [`variants`](Self::variants).
    pub variant: Option<String>,
    /// The same scenario with some keys changed (`[[variant]]`), run one after the other
    /// and compared; empty when the scenario has none.
    pub variants: Vec<Scenario>,
}

/// Virtual time an all-reduce size may take when the scenario gives no duration.
const DEFAULT_ALLREDUCE_LIMIT: Nanos = Nanos(10_000_000_000);
/// Most time-series rows a scenario may ask for.
const MAX_ROWS: u64 = 2_000_000;
/// The shortest time-series step: the simulator's clock counts whole nanoseconds.
const MIN_SAMPLE: Nanos = Nanos(1);

/// The most hosts a topology may have.
pub const MAX_HOSTS: usize = 4096;

/// The most frames a scenario may move unless `max_frames` says otherwise: about 15 to
/// 60 minutes of one core.
pub const DEFAULT_MAX_FRAMES: u64 = 2_000_000_000;

/// The memory a scenario may need unless `memory_budget_mib` says otherwise, MiB.
pub const DEFAULT_MEMORY_BUDGET_MIB: u64 = 4096;

/// What the simulator holds per host and per switch port besides traffic: the endpoint
/// and its QPs, the port's queues, counters and eight sojourn histograms (measured: a
/// 512-host star takes about 150 MB).
const NODE_BYTES: u64 = 160 << 10;

/// A wall-clock estimate in the unit people think of it in: "40 s", "12 minutes", "7.9 hours".
fn wall_time(secs: f64) -> String {
    match secs {
        s if s < 90.0 => format!("{:.0} s", s.max(1.0)),
        s if s < 5400.0 => format!("{:.0} minutes", s / 60.0),
        s => format!("{:.1} hours", s / 3600.0),
    }
}

fn positive_time(key: &str, v: f64, unit: &str, scale: f64) -> Result<Nanos, ConfigError> {
    if v.is_finite() && v > 0.0 && v * scale < 1e15 {
        Ok(Nanos((v * scale).round() as u64))
    } else {
        Err(err(
            key,
            format!(
                "{v} is not allowed; give a positive number of {unit} below {:e} (about 11 days)",
                1e15 / scale
            ),
        ))
    }
}

/// A scenario that cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Neither a built-in scenario nor a readable file.
    #[error(
        "{name}: {cause}; give a scenario file or a built-in scenario ({})",
        names()
    )]
    NotFound {
        /// What was asked for.
        name: String,
        /// Why the file could not be read (said in the message, so not a source too).
        cause: std::io::Error,
    },
    /// A scenario file too large or not text.
    #[error(transparent)]
    Read(crate::config::ReadError),
    /// A scenario that does not parse or validate.
    #[error("{origin}: {error}")]
    Invalid {
        /// The built-in name or the file's path.
        origin: String,
        /// What is wrong, with the key.
        error: ConfigError,
    },
}

impl Scenario {
    /// A built-in scenario by name, or a scenario file.
    pub fn load(name_or_path: &str) -> Result<Scenario, ScenarioError> {
        Scenario::load_edited(name_or_path, |_| Ok(()))
    }

    /// [`load`](Self::load), with the scenario's TOML table changed by `edit` first (the
    /// command line's `--set`, `--preset` and `--config`).
    pub fn load_edited(
        name_or_path: &str,
        edit: impl FnOnce(&mut toml::Table) -> Result<(), ConfigError>,
    ) -> Result<Scenario, ScenarioError> {
        let invalid = |origin: &str| {
            let origin = origin.to_owned();
            move |error| ScenarioError::Invalid { origin, error }
        };
        let (name, text, dir, origin) = match scenario_text(name_or_path) {
            Some(text) => (
                name_or_path.to_owned(),
                text.to_owned(),
                None,
                name_or_path.to_owned(),
            ),
            None => {
                let path = Path::new(name_or_path);
                let text = crate::config::read_text(path).map_err(|e| match e {
                    crate::config::ReadError::Io { cause, .. } => ScenarioError::NotFound {
                        name: name_or_path.to_owned(),
                        cause,
                    },
                    other => ScenarioError::Read(other),
                })?;
                let name = path.file_stem().map_or_else(
                    || name_or_path.to_owned(),
                    |s| s.to_string_lossy().into_owned(),
                );
                (name, text, path.parent(), path.display().to_string())
            }
        };
        let mut table: toml::Table = toml::from_str(&text).map_err(|e| ScenarioError::Invalid {
            origin: origin.clone(),
            error: err(
                e.span()
                    .map_or_else(|| "scenario".to_owned(), |s| location(&text, s.start)),
                e.message().trim_end().to_owned(),
            ),
        })?;
        pfc_flag_as_table(&mut table);
        let before = table.clone();
        edit(&mut table).map_err(invalid(&origin))?;
        // Edited text is written anew: its lines are nobody's, so errors name their key.
        let edited = table != before;
        let text = if !edited {
            text
        } else {
            toml::to_string(&table).map_err(|e| ScenarioError::Invalid {
                origin: origin.clone(),
                error: err("scenario", e.to_string()),
            })?
        };
        Scenario::parse(&name, &text, dir, !edited).map_err(invalid(&origin))
    }

    /// Parses and validates a scenario's TOML text; a switch `file` is looked up relative
    /// to `dir`.
    pub fn from_toml(name: &str, text: &str, dir: Option<&Path>) -> Result<Scenario, ConfigError> {
        Scenario::parse(name, text, dir, true)
    }

    /// [`from_toml`](Self::from_toml), an error placed by its line in `text` when
    /// `by_line` (a file the user has), by its key otherwise.
    fn parse(
        name: &str,
        text: &str,
        dir: Option<&Path>,
        by_line: bool,
    ) -> Result<Scenario, ConfigError> {
        let de = toml::de::Deserializer::parse(text).map_err(|e| {
            let key = e
                .span()
                .map(|s| location(text, s.start))
                .unwrap_or_else(|| "scenario".to_owned());
            err(key, e.message().trim_end().to_owned())
        })?;
        let file: ScenarioFile = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let line = inner
                .span()
                .filter(|_| by_line)
                .map(|s| location(text, s.start));
            let key = match line {
                Some(line) if path != "." => format!("{line} ({path})"),
                Some(line) => line,
                None if path != "." => path,
                None => "scenario".to_owned(),
            };
            did_you_mean::with_hint(
                err(key, inner.message().trim_end().to_owned()),
                &scenario_keys(),
            )
        })?;
        let variant_tables = file.variants.clone();
        let mut scenario = file.resolve(name, dir)?;
        scenario.digest = digest(text);
        if variant_tables.is_empty() {
            return Ok(scenario);
        }
        // The whole file as a table, each variant's keys laid over it.
        let mut base: toml::Table =
            toml::from_str(text).map_err(|e| err("scenario", e.message().to_owned()))?;
        base.remove("variant");
        for (i, mut v) in variant_tables.into_iter().enumerate() {
            let key = format!("variant[{i}]");
            let variant_name = match v.remove("name") {
                Some(toml::Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
                _ => return Err(err(format!("{key}.name"), "give each variant a name")),
            };
            if scenario
                .variants
                .iter()
                .any(|s| s.variant.as_deref() == Some(&*variant_name))
            {
                return Err(err(
                    format!("{key}.name"),
                    format!("'{variant_name}' names two variants"),
                ));
            }
            let mut table = base.clone();
            for (k, value) in v {
                match (k.as_str(), value) {
                    ("description", value @ toml::Value::String(_)) => {
                        table.insert(k, value);
                    }
                    ("switch" | "endpoint", toml::Value::Table(mut over)) => {
                        let mut merged = match table.remove(&k) {
                            Some(toml::Value::Table(t)) => t,
                            _ => toml::Table::new(),
                        };
                        if k == "switch" {
                            pfc_flag_in_switch(&mut merged);
                            pfc_flag_in_switch(&mut over);
                        }
                        crate::config::merge_toml(&mut merged, over);
                        table.insert(k, toml::Value::Table(merged));
                    }
                    // A variant's faults replace the scenario's.
                    ("fault", value @ toml::Value::Array(_)) => {
                        table.insert(k, value);
                    }
                    ("fabric", value @ toml::Value::String(_))
                    | ("ib", value @ toml::Value::Table(_)) => {
                        table.insert(k, value);
                    }
                    (k, _) => {
                        return Err(err(
                            format!("{key}.{k}"),
                            "a variant takes name, description, fabric, and tables switch, \
                             endpoint, ib and fault laid over the scenario's",
                        ));
                    }
                }
            }
            let prefix = |e: ConfigError| ConfigError {
                key: format!("{key} ({variant_name}): {}", e.key),
                message: e.message,
            };
            let file = ScenarioFile::deserialize(toml::Value::Table(table))
                .map_err(|e| prefix(err("scenario", e.message().trim_end().to_owned())))?;
            let mut resolved = file.resolve(name, dir).map_err(prefix)?;
            resolved.variant = Some(variant_name);
            resolved.digest.clone_from(&scenario.digest);
            scenario.variants.push(resolved);
        }
        Ok(scenario)
    }

    /// Per host, whether anything in the scenario uses it: a `[[flow]]`, a workload flow
    /// or an all-reduce rank (sending or receiving), or a `[[fault]]`. The time series
    /// records these hosts and their ports only.
    pub fn active_hosts(&self) -> Vec<bool> {
        active_hosts(
            self.topology.hosts(),
            &self.flows,
            &self.jobs,
            self.allreduce.as_ref(),
            &self.faults,
        )
    }

    /// Builds the network with its flows (the all-reduce ranks get theirs from
    /// [`super::workload`]), seeded with `seed`.
    pub fn build(&self, seed: u64) -> Network {
        let t = &self.topology;
        let mut ep = self.endpoint.clone();
        ep.link_gbps = t.bits_per_sec as f64 / 1e9;
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
        };
        net.use_fabric(&self.fabric, &self.switch, t);
        // Flows of one message size share its buffer (the bytes are the same): a
        // 64-sender incast reads one message, not 64 copies of it, for its payloads.
        let mut messages: Vec<std::sync::Arc<[u8]>> = Vec::new();
        for f in &self.flows {
            Flow::prepare_receiver(net.endpoint_mut(f.to), f.message_bytes);
            let (q, _) = net.connect_qp(f.from, f.to);
            let message = match messages.iter().find(|m| m.len() == f.message_bytes) {
                Some(m) => m.clone(),
                None => {
                    let m = Flow::message(f.message_bytes);
                    messages.push(m.clone());
                    m
                }
            };
            net.host_mut(f.from).app =
                Some(Flow::with_message(q, f.bytes, message, f.start).into());
        }
        self.build_workloads(&mut net);
        for f in &self.faults {
            net.endpoint_mut(f.host).set_faults(f.faults);
        }
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
        let mut per_host: Vec<Vec<(usize, &FlowJob)>> = vec![Vec::new(); hosts];
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
                .map(|&(id, j)| crate::endpoint::flows::FlowJob {
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

/// A scenario text's digest, as `sim`'s report.json carries it (`scenario_digest`):
/// FNV-1a of its bytes, 64 bits, in hex. It tells one scenario from another (a sweep's
/// runs apart), not an attacker's forgery from the real thing.
pub fn digest(text: &str) -> String {
    // FNV-1a's 64-bit offset basis and prime.
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("fnv1a64:{hash:016x}")
}

/// The built-in scenario names, comma-separated.
pub fn names() -> String {
    SCENARIOS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

impl ScenarioFile {
    fn resolve(self, name: &str, dir: Option<&Path>) -> Result<Scenario, ConfigError> {
        let topology = self.topology.resolve()?;
        let hosts = topology.hosts();
        let (mut switch, mut switch_source) = resolve_switch(self.switch, dir)?;
        if self.endpoint.contains_key("link_gbps") {
            return Err(err(
                "endpoint.link_gbps",
                "every link runs at topology.link_gbps; set it there",
            ));
        }
        let mut endpoint = EndpointConfig::deserialize(toml::Value::Table(self.endpoint))
            .map_err(|e| err("endpoint", e.message().trim_end().to_owned()))?;
        endpoint.link_gbps = topology.bits_per_sec as f64 / 1e9;
        endpoint.validate("endpoint")?;
        let fabric = super::fabric::resolve(
            self.fabric.as_deref(),
            self.ib,
            endpoint.mtu as usize + LARGEST_FRAME_OVERHEAD,
        )?;
        if let Fabric::Ib(ib) = &fabric {
            switch = ib.switch_config(switch);
            switch_source.push_str("; InfiniBand: VLs as queues, no PFC, no ECN");
        }

        let mut flows = Vec::new();
        for (i, f) in self.flows.iter().enumerate() {
            let key = format!("flow[{i}]");
            for (field, h) in [("from", f.from), ("to", f.to)] {
                if h >= hosts {
                    return Err(err(
                        format!("{key}.{field}"),
                        format!("host {h} does not exist; hosts are 0-{}", hosts - 1),
                    ));
                }
            }
            if f.from == f.to {
                return Err(err(&key, "a flow needs two different hosts"));
            }
            if flows.iter().any(|p: &FlowPlan| p.from == f.from) {
                return Err(err(
                    format!("{key}.from"),
                    format!(
                        "host {} already sends a flow; a host runs one application",
                        f.from
                    ),
                ));
            }
            if !(1..=1 << 30).contains(&f.message_bytes) {
                return Err(err(format!("{key}.message_bytes"), "give 1 byte to 1 GiB"));
            }
            if f.bytes == Some(0) {
                return Err(err(
                    format!("{key}.bytes"),
                    "give at least 1 byte, or leave it out for a flow that runs to the end",
                ));
            }
            let start = if f.start_us == 0.0 {
                Nanos::ZERO
            } else {
                positive_time(&format!("{key}.start_us"), f.start_us, "µs", 1e3)?
            };
            flows.push(FlowPlan {
                from: f.from,
                to: f.to,
                start,
                bytes: f.bytes,
                message_bytes: f.message_bytes as usize,
            });
        }

        let allreduce = self
            .allreduce
            .map(|a| a.resolve(hosts, &flows))
            .transpose()?;
        if allreduce.is_none() && flows.is_empty() && self.workloads.is_empty() {
            return Err(err(
                "scenario",
                "nothing to run: give [[flow]] entries, [[workload]] entries, an [allreduce] section, or some of each",
            ));
        }
        let duration = match self.duration_ms {
            Some(ms) => positive_time("duration_ms", ms, "ms", 1e6)?,
            None if !self.workloads.is_empty() => {
                return Err(err(
                    "duration_ms",
                    "workloads run until the end of the run: say when it ends",
                ));
            }
            None if allreduce.is_some() => DEFAULT_ALLREDUCE_LIMIT,
            None if flows.iter().all(|f| f.bytes.is_some()) => DEFAULT_ALLREDUCE_LIMIT,
            None => {
                return Err(err(
                    "duration_ms",
                    "a flow without `bytes` runs until the end: say when the run ends",
                ));
            }
        };
        let measure_from = if self.measure_from_ms == 0.0 {
            Nanos::ZERO
        } else {
            positive_time("measure_from_ms", self.measure_from_ms, "ms", 1e6)?
        };
        if measure_from >= duration {
            return Err(err(
                "measure_from_ms",
                "must be before the end of the run (duration_ms)",
            ));
        }
        let sample = positive_time("sample_us", self.sample_us, "µs", 1e3)?;
        // Virtual time is whole nanoseconds: a shorter step rounds to none, and sampling
        // every 0 ns never moves on.
        if sample < MIN_SAMPLE {
            return Err(err(
                "sample_us",
                format!(
                    "{} µs is shorter than the simulator's clock tick, 1 ns: give 0.001 or more",
                    self.sample_us
                ),
            ));
        }
        let series_span = match &allreduce {
            Some(_) if self.duration_ms.is_none() => None,
            _ => Some(duration),
        };
        if let Some(span) = series_span
            && span.0 / sample.0 > MAX_ROWS
        {
            return Err(err(
                "sample_us",
                format!(
                    "{} rows of time series over {} ms; at most {MAX_ROWS}: sample less often",
                    span.0 / sample.0,
                    span.0 / 1_000_000
                ),
            ));
        }
        let (workloads, jobs) = resolve_workloads(
            &self.workloads,
            self.seed,
            &topology,
            duration,
            dir,
            &flows,
            allreduce.as_ref(),
        )?;
        // The largest RoCE frame a host receives: the path MTU of payload under Ethernet,
        // 802.1Q, IPv4, UDP, BTH, RETH and ICRC.
        let largest_frame = u64::from(endpoint.mtu) + 78;
        let faults = faults::resolve(
            &self.faults,
            hosts,
            endpoint.priority_of(endpoint.dscp),
            topology.bits_per_sec,
            largest_frame,
        )?;
        let active = active_hosts(hosts, &flows, &jobs, allreduce.as_ref(), &faults);
        let max_frames = self.max_frames.unwrap_or(DEFAULT_MAX_FRAMES);
        if max_frames == 0 {
            return Err(err(
                "max_frames",
                "give at least 1 (a run that moves no frame shows nothing)",
            ));
        }
        let explicit = self.duration_ms.map(|_| duration);
        let frames = frames_bound(
            &topology,
            &endpoint,
            explicit,
            allreduce.as_ref(),
            &flows,
            &active,
        );
        if frames > max_frames as f64 {
            let why = match (explicit, &allreduce) {
                (Some(d), None) => {
                    format!("every link busy for {} with full-size frames", d.human())
                }
                (Some(d), Some(_)) => format!(
                    "every link busy for {} with full-size frames, for each all-reduce size",
                    d.human()
                ),
                (None, _) => {
                    "the all-reduce sizes' and the flows' bytes, over the longest path".into()
                }
            };
            return Err(err(
                "max_frames",
                format!(
                    "this scenario may move up to {frames:.2e} frames ({why}), over max_frames = \
                     {max_frames}: at 0.5 to 2 M frames a second that is up to {}; shorten the \
                     run, or raise max_frames",
                    wall_time(frames / 0.5e6)
                ),
            ));
        }
        let budget_mib = self.memory_budget_mib.unwrap_or(DEFAULT_MEMORY_BUDGET_MIB);
        let need = memory_estimate(
            &topology,
            &flows,
            allreduce.as_ref(),
            duration,
            sample,
            &active,
        )
        .saturating_add((jobs.len() as u64).saturating_mul(JOB_BYTES));
        if need > budget_mib.saturating_mul(1 << 20) {
            return Err(err(
                "memory_budget_mib",
                format!(
                    "this scenario needs about {} MiB (hosts, switch ports, all-reduce buffers, \
                     flow buffers and time series), over the budget of {budget_mib} MiB: make \
                     it smaller, or raise memory_budget_mib if the machine has the memory",
                    need >> 20
                ),
            ));
        }
        Ok(Scenario {
            digest: String::new(),
            faults,
            variant: None,
            variants: Vec::new(),
            name: name.to_owned(),
            description: self.description.trim().to_owned(),
            seed: self.seed,
            duration,
            measure_from,
            sample,
            topology,
            fabric,
            switch,
            switch_source,
            endpoint,
            flows,
            allreduce,
            workloads,
            jobs,
        })
    }
}

/// Bytes a data frame adds to its payload at most: Ethernet 14, IPv4 20, UDP 8, BTH 12,
/// RETH 16, ImmDt 4, ICRC 4.
const LARGEST_FRAME_OVERHEAD: usize = 78;

/// What a workload's flow costs besides its traffic: its job, record and report row.
const JOB_BYTES: u64 = 512;

/// Bytes per WRITE message of a workload's flows (the last one of a flow shorter).
pub const WORKLOAD_MESSAGE_BYTES: usize = 16384;

/// The `[[workload]]` entries' flows, drawn from the scenario's seed, in arrival order.
/// A host that sends workload flows runs nothing else (a `[[flow]]` or an all-reduce
/// rank); any host may receive them.
fn resolve_workloads(
    specs: &[WorkloadSpec],
    seed: u64,
    topology: &Topology,
    duration: Nanos,
    dir: Option<&Path>,
    flows: &[FlowPlan],
    allreduce: Option<&AllReducePlan>,
) -> Result<(Vec<WorkloadPlan>, Vec<FlowJob>), ConfigError> {
    // A stream of its own: adding a workload does not change the switch's or the links'
    // draws.
    let mut rng = crate::rand::Rng::new(seed ^ 0x776f_726b_6c6f_6164);
    let mut plans = Vec::new();
    let mut jobs = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let (plan, mut made) = spec.resolve(
            i,
            topology.hosts(),
            topology.bits_per_sec,
            duration,
            dir,
            &mut rng,
        )?;
        // Checked against the hosts the entry may send from, not the flows drawn: whether
        // a scenario is valid must not depend on its seed or duration.
        let flow_sender = |h: usize| flows.iter().position(|f| f.from == h);
        let rank = |h: usize| allreduce.is_some_and(|a| a.ranks.contains(&h));
        if let Some(h) = spec
            .senders(topology.hosts())
            .into_iter()
            .find(|&h| flow_sender(h).is_some() || rank(h))
        {
            let what = match flow_sender(h) {
                Some(f) => format!("sends flow[{f}]"),
                None => "is an all-reduce rank".to_owned(),
            };
            return Err(err(
                format!("workload[{i}].hosts"),
                format!(
                    "host {h} {what}, and this {} workload may send from it (from every host \
                     it lists, all by default, but an incast's `to`); a host runs one \
                     application: give the workload `hosts` without it",
                    spec.kind()
                ),
            ));
        }
        jobs.append(&mut made);
        plans.push(plan);
        if jobs.len() > super::traffic::MAX_FLOWS {
            return Err(err(
                format!("workload[{i}]"),
                format!("more than {} flows in all", super::traffic::MAX_FLOWS),
            ));
        }
    }
    jobs.sort_by_key(|j| (j.arrival, j.from, j.to));
    Ok((plans, jobs))
}

/// Per host, whether a flow, workload flow, all-reduce rank or fault uses it.
fn active_hosts(
    hosts: usize,
    flows: &[FlowPlan],
    jobs: &[FlowJob],
    allreduce: Option<&AllReducePlan>,
    faults: &[HostFault],
) -> Vec<bool> {
    let mut on = vec![false; hosts];
    let mut mark = |h: usize| {
        if let Some(x) = on.get_mut(h) {
            *x = true;
        }
    };
    for f in flows {
        mark(f.from);
        mark(f.to);
    }
    for j in jobs {
        mark(j.from);
        mark(j.to);
    }
    for &r in allreduce.iter().flat_map(|a| &a.ranks) {
        mark(r);
    }
    for f in faults {
        mark(f.host);
    }
    on
}

/// The most frames a run can move. With `duration_ms` given: every link that can carry
/// anything (a used host's, or between switches), both ways, busy for the whole duration with full-size data frames, and an ACK per data frame (for an
/// all-reduce sweep, for each size's run). Without it (an all-reduce whose limit is a
/// timeout, sized flows): their bytes, in full-size packets, over the longest path, with
/// an ACK each. An upper bound: a run that finishes early or leaves links idle moves
/// fewer.
fn frames_bound(
    topology: &Topology,
    endpoint: &EndpointConfig,
    duration: Option<Nanos>,
    allreduce: Option<&AllReducePlan>,
    flows: &[FlowPlan],
    active: &[bool],
) -> f64 {
    // The links that can carry anything: the used hosts' and those between switches.
    let used = active.iter().filter(|&&a| a).count();
    let (links, longest) = match topology.shape {
        Shape::Star { .. } => (used, 2),
        Shape::LeafSpine { leaves, spines, .. } => (used + leaves * spines, 4),
        Shape::Ring { switches, .. } => (used + switches, 2 + switches / 2),
    };
    let runs = allreduce.map_or(1, |a| if a.back_to_back { 1 } else { a.sizes.len() }) as f64;
    if let Some(d) = duration {
        let frame_bits =
            crate::link::wire_bits(endpoint.mtu as usize + LARGEST_FRAME_OVERHEAD) as f64;
        let per_link = topology.bits_per_sec as f64 * d.0 as f64 / 1e9 / frame_bits;
        return 2.0 * links as f64 * per_link * 2.0 * runs;
    }
    // Each rank sends 2 (N - 1) / N of every size: at most twice it.
    let ranks_bytes: f64 = allreduce.map_or(0.0, |a| {
        a.ranks.len() as f64 * a.runs().iter().map(|&s| 2.0 * s as f64).sum::<f64>()
    });
    let flow_bytes: f64 = flows.iter().filter_map(|f| f.bytes).map(|b| b as f64).sum();
    let packets = (ranks_bytes + flow_bytes * runs) / f64::from(endpoint.mtu.max(1));
    packets * longest as f64 * 2.0
}

/// About how many bytes a run of the scenario holds at its peak: every host and switch
/// port, the all-reduce buffers of the largest size (data and staging, per rank), the
/// flows' messages and receive rings, and the time series (at most its row cap).
fn memory_estimate(
    topology: &Topology,
    flows: &[FlowPlan],
    allreduce: Option<&AllReducePlan>,
    duration: Nanos,
    sample: Nanos,
    active: &[bool],
) -> u64 {
    let hosts = topology.hosts() as u64;
    // Ports between switches (each link has two).
    let inner = match topology.shape {
        Shape::Star { .. } => 0,
        Shape::LeafSpine { leaves, spines, .. } => (2 * leaves * spines) as u64,
        Shape::Ring { switches, .. } => (2 * switches) as u64,
    };
    let ports = hosts + inner;
    // The time series records the used hosts, their ports and the ports between switches.
    let used = active.iter().filter(|&&a| a).count() as u64;
    let recorded_ports = used + inner;
    let nodes = (hosts + ports).saturating_mul(NODE_BYTES);
    let ranks_bytes = allreduce.map_or(0, |a| {
        // Data, staging and two send buffers of a chunk (see sweep::rank_buffer_bytes):
        // one size at a time, or every size at once back to back.
        let per_rank = if a.back_to_back {
            sweep::rank_buffer_bytes(&a.runs())
        } else {
            a.sizes.last().copied().unwrap_or(0).saturating_mul(3)
        };
        (a.ranks.len() as u64).saturating_mul(per_rank)
    });
    let flow_bytes: u64 = flows
        .iter()
        .map(|f| (f.message_bytes as u64).saturating_mul(1 + 64))
        .fold(0, u64::saturating_add);
    let rows = (duration.0 / sample.0.max(1)).min(super::series::MAX_ROWS as u64);
    let columns = recorded_ports * 9 + used * 3 + 2 * flows.len() as u64;
    let series = rows.saturating_mul(columns).saturating_mul(24);
    nodes
        .saturating_add(ranks_bytes)
        .saturating_add(flow_bytes)
        .saturating_add(series)
}

/// The switch section: `preset` (default "default") or `file`, `pfc = false` and
/// `ecn = false` switches, and any switch-configuration keys laid over the base. `pfc`
/// is the switch or a table: the configuration's `[pfc]` keys (`pfc.pause_quanta`), with
/// `pfc.enabled` for the switch.
fn resolve_switch(
    mut table: toml::Table,
    dir: Option<&Path>,
) -> Result<(SwitchConfig, String), ConfigError> {
    let flag = |value: Option<toml::Value>, key: &str| match value {
        None => Ok(true),
        Some(toml::Value::Boolean(b)) => Ok(b),
        Some(_) => Err(err(format!("switch.{key}"), "give true or false")),
    };
    let pfc = match table.remove("pfc") {
        Some(toml::Value::Table(mut keys)) => {
            let on = flag(keys.remove("enabled"), "pfc.enabled")?;
            if !keys.is_empty() {
                table.insert("pfc".into(), toml::Value::Table(keys));
            }
            on
        }
        Some(toml::Value::Boolean(b)) => b,
        Some(_) => {
            return Err(err(
                "switch.pfc",
                "give true or false, or the switch configuration's [pfc] keys \
                 (pfc.pause_quanta = 1000, or --set switch.pfc.pause_quanta=1000)",
            ));
        }
        None => true,
    };
    let ecn = flag(table.remove("ecn"), "ecn")?;
    let text_of = |key: &str, v: toml::Value| match v {
        toml::Value::String(s) => Ok(s),
        _ => Err(err(format!("switch.{key}"), "give a string")),
    };
    let preset = table
        .remove("preset")
        .map(|v| text_of("preset", v))
        .transpose()?;
    let file = table
        .remove("file")
        .map(|v| text_of("file", v))
        .transpose()?;
    let mut source = match (&preset, &file) {
        (_, Some(f)) => format!("file {f}"),
        (Some(p), None) => format!("preset {p}"),
        (None, None) => "preset default".to_owned(),
    };
    if !pfc {
        source.push_str("; PFC off");
    }
    if !ecn {
        source.push_str("; ECN off");
    }
    let mut changed = Vec::new();
    dotted_keys(&table, "", &mut changed);
    if !changed.is_empty() {
        source.push_str(&format!("; changed {}", changed.join(", ")));
    }
    let base_text = match (preset, file) {
        (Some(_), Some(_)) => return Err(err("switch", "give preset or file, not both")),
        (None, Some(f)) => {
            let path = dir.map_or_else(|| Path::new(&f).to_path_buf(), |d| d.join(&f));
            crate::config::read_text(&path).map_err(|e| err("switch.file", e.to_string()))?
        }
        (preset, None) => {
            let p = preset.unwrap_or_else(|| "default".to_owned());
            preset_text(&p)
                .ok_or_else(|| {
                    err(
                        "switch.preset",
                        format!(
                            "no preset named '{p}'; the presets are {}",
                            crate::config::PRESETS.map(|(n, _)| n).join(", ")
                        ),
                    )
                })?
                .to_owned()
        }
    };
    for key in ["ports"] {
        if table.contains_key(key) {
            return Err(err(
                format!("switch.{key}"),
                "the topology makes one port per link; set topology.link_gbps and delay_ns",
            ));
        }
    }
    if let Some(toml::Value::Table(d)) = table.get("port_defaults")
        && let Some(k) = ["speed_gbps", "cable_m", "cable_ns"]
            .into_iter()
            .find(|k| d.contains_key(*k))
    {
        return Err(err(
            format!("switch.port_defaults.{k}"),
            "the topology gives every link's rate and delay (topology.link_gbps, delay_ns)",
        ));
    }
    let mut base: toml::Table = toml::from_str(&base_text).map_err(|e| {
        err(
            "switch.file",
            format!("not a switch configuration: {}", e.message()),
        )
    })?;
    merge_toml(&mut base, table);
    let mut cfg = SwitchConfig::from_table(base).map_err(|e| {
        let e = ConfigError {
            key: format!("switch.{}", e.key),
            message: e.message,
        };
        did_you_mean::with_hint(e, &scenario_keys())
    })?;
    if !pfc {
        cfg.disable_pfc();
    }
    if !ecn {
        cfg.disable_ecn();
    }
    Ok((cfg, source))
}

/// Every leaf of `table` as `dotted.path = value`, in order.
fn dotted_keys(table: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in table {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => dotted_keys(t, &path, out),
            v => out.push(format!("{path} = {v}")),
        }
    }
}

impl TopologySpec {
    fn resolve(&self) -> Result<Topology, ConfigError> {
        let count = |key: &str, v: Option<usize>, min: usize| -> Result<usize, ConfigError> {
            match v {
                Some(n) if (min..=4096).contains(&n) => Ok(n),
                Some(n) => Err(err(
                    format!("topology.{key}"),
                    format!("{n} is not allowed; give {min} to 4096"),
                )),
                None => Err(err(
                    format!("topology.{key}"),
                    format!("needed for kind = \"{}\"", self.kind),
                )),
            }
        };
        let unused = |keys: &[(&str, bool)]| -> Result<(), ConfigError> {
            match keys.iter().find(|(_, set)| *set) {
                Some((k, _)) => Err(err(
                    format!("topology.{k}"),
                    format!("not used by kind = \"{}\"", self.kind),
                )),
                None => Ok(()),
            }
        };
        let shape = match self.kind.as_str() {
            "star" => {
                unused(&[
                    ("leaves", self.leaves.is_some()),
                    ("spines", self.spines.is_some()),
                    ("hosts_per_leaf", self.hosts_per_leaf.is_some()),
                    ("switches", self.switches.is_some()),
                    ("hosts_per_switch", self.hosts_per_switch.is_some()),
                ])?;
                Shape::Star {
                    hosts: count("hosts", self.hosts, 2)?,
                }
            }
            "leaf-spine" => {
                unused(&[
                    ("hosts", self.hosts.is_some()),
                    ("switches", self.switches.is_some()),
                    ("hosts_per_switch", self.hosts_per_switch.is_some()),
                ])?;
                if self.loss != 0.0 {
                    return Err(err("topology.loss", "only a star has lossy links"));
                }
                Shape::LeafSpine {
                    leaves: count("leaves", self.leaves, 1)?,
                    spines: count("spines", self.spines, 1)?,
                    hosts_per_leaf: count("hosts_per_leaf", self.hosts_per_leaf, 1)?,
                }
            }
            "ring" => {
                unused(&[
                    ("hosts", self.hosts.is_some()),
                    ("leaves", self.leaves.is_some()),
                    ("spines", self.spines.is_some()),
                    ("hosts_per_leaf", self.hosts_per_leaf.is_some()),
                ])?;
                if self.loss != 0.0 {
                    return Err(err("topology.loss", "only a star has lossy links"));
                }
                let switches = count("switches", self.switches, 3)?;
                if switches > 64 {
                    return Err(err(
                        "topology.switches",
                        format!("{switches} is not allowed; give 3 to 64"),
                    ));
                }
                Shape::Ring {
                    switches,
                    hosts_per_switch: count("hosts_per_switch", self.hosts_per_switch, 1)?,
                }
            }
            other => {
                return Err(err(
                    "topology.kind",
                    format!("'{other}': give \"star\", \"leaf-spine\" or \"ring\""),
                ));
            }
        };
        if !(self.link_gbps.is_finite() && (0.001..=1600.0).contains(&self.link_gbps)) {
            return Err(err(
                "topology.link_gbps",
                format!("{} is not allowed; give 0.001 to 1600", self.link_gbps),
            ));
        }
        if !(0.0..1.0).contains(&self.loss) {
            return Err(err("topology.loss", "a probability: 0 or more, below 1"));
        }
        if self.delay_ns > 1_000_000_000 {
            return Err(err("topology.delay_ns", "at most 1 s"));
        }
        if self.switch_latency_ns > 1_000_000 {
            return Err(err("topology.switch_latency_ns", "at most 1 ms"));
        }
        let topology = Topology {
            shape,
            bits_per_sec: (self.link_gbps * 1e9).round() as u64,
            delay: Nanos(self.delay_ns),
            loss: self.loss,
            switch_latency: Nanos(self.switch_latency_ns),
        };
        if topology.hosts() < 2 {
            return Err(err("topology", "needs at least 2 hosts"));
        }
        if topology.hosts() > MAX_HOSTS {
            return Err(err(
                "topology",
                format!(
                    "{} hosts; at most {MAX_HOSTS} (leaves × hosts_per_leaf for a leaf-spine, switches × hosts_per_switch for a ring)",
                    topology.hosts()
                ),
            ));
        }
        Ok(topology)
    }
}

impl AllReduceSpec {
    fn resolve(self, hosts: usize, flows: &[FlowPlan]) -> Result<AllReducePlan, ConfigError> {
        let ranks = self.ranks.unwrap_or_else(|| {
            (0..hosts)
                .filter(|h| !flows.iter().any(|f| f.from == *h))
                .collect()
        });
        if ranks.len() < 2 {
            return Err(err("allreduce.ranks", "needs at least 2 ranks"));
        }
        // Sets, not scans: a rank list may be as long as the hosts (4096).
        let senders: std::collections::HashSet<usize> = flows.iter().map(|f| f.from).collect();
        let mut seen = std::collections::HashSet::with_capacity(ranks.len());
        for (i, &r) in ranks.iter().enumerate() {
            if r >= hosts {
                return Err(err(
                    format!("allreduce.ranks[{i}]"),
                    format!("host {r} does not exist; hosts are 0-{}", hosts - 1),
                ));
            }
            if !seen.insert(r) {
                return Err(err(
                    format!("allreduce.ranks[{i}]"),
                    format!("host {r} is listed twice"),
                ));
            }
            if senders.contains(&r) {
                return Err(err(
                    format!("allreduce.ranks[{i}]"),
                    format!("host {r} sends a flow; a host runs one application"),
                ));
            }
        }
        let sizes = sweep::sizes(self.min_bytes, self.max_bytes, self.factor).map_err(|e| {
            let key = match e {
                SweepError::Size(s) if s == self.min_bytes => "allreduce.min_bytes",
                SweepError::Size(_) | SweepError::Order { .. } => "allreduce.max_bytes",
                SweepError::Factor(_) => "allreduce.factor",
            };
            err(key, e.to_string())
        })?;
        let series_bytes = self
            .series_bytes
            .unwrap_or(*sizes.last().unwrap_or(&self.min_bytes));
        if !sizes.contains(&series_bytes) {
            return Err(err(
                "allreduce.series_bytes",
                format!("{series_bytes} is not one of the sizes swept ({sizes:?})"),
            ));
        }
        let start = if self.start_us == 0.0 {
            Nanos::ZERO
        } else {
            positive_time("allreduce.start_us", self.start_us, "µs", 1e3)?
        };
        let warm_up = match self.warm_up_bytes {
            None | Some(0) => None,
            Some(w) => {
                sweep::sizes(w, w, 2).map_err(|e| err("allreduce.warm_up_bytes", e.to_string()))?;
                if !self.back_to_back {
                    return Err(err(
                        "allreduce.warm_up_bytes",
                        "a warm-up runs before the timed sizes on the same network: set \
                         back_to_back = true too",
                    ));
                }
                Some(w)
            }
        };
        Ok(AllReducePlan {
            ranks,
            sizes,
            series_bytes,
            start,
            warm_up,
            back_to_back: self.back_to_back,
        })
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

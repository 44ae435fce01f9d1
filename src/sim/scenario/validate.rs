//! The checks that turn a scenario file into a [`Scenario`]: every value in its range and
//! every reference sound (hosts that exist, one application per host), each error naming
//! its key and what is allowed.

use super::budget;
use super::load::resolve_switch;
use super::schema::{AllReduceSpec, FlowSpec, ScenarioFile, TopologySpec};
use super::{
    AllReducePlan, FlowPlan, LARGEST_FRAME_OVERHEAD, LoadBalancing, Scenario, Shape, Topology, err,
    topology::FatTree,
};
use crate::config::ConfigError;
use crate::config::endpoint::EndpointConfig;
use crate::endpoint::app::size_sweep::{self, SizeSweepError};
use crate::rand::Rng;
use crate::sim::fabric::{self, Fabric};
use crate::sim::faults;
use crate::sim::workloads::{MAX_FLOWS, WorkloadFlow, WorkloadPlan, WorkloadSpec};
use crate::time::Nanos;
use std::path::Path;

/// Virtual time an all-reduce size may take when the scenario gives no duration.
const DEFAULT_ALLREDUCE_LIMIT: Nanos = Nanos(10_000_000_000);

/// Most time-series rows a scenario may ask for.
const MAX_ROWS: u64 = 2_000_000;

/// The shortest time-series step: the simulator's clock counts whole nanoseconds.
const MIN_SAMPLE: Nanos = Nanos(1);

/// The most hosts a topology may have.
pub const MAX_HOSTS: usize = 4096;

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

impl ScenarioFile {
    /// The scenario this file describes, named `name`; files it names (the switch's, a
    /// workload's distribution) are looked up relative to `dir`.
    pub(super) fn resolve(self, name: &str, dir: Option<&Path>) -> Result<Scenario, ConfigError> {
        let topology = self.topology.resolve()?;
        let hosts = topology.hosts();
        let (mut switch, mut switch_source) = resolve_switch(self.switch, dir)?;
        let endpoint = resolve_endpoint(self.endpoint, &topology)?;
        let fabric = fabric::resolve(
            self.fabric.as_deref(),
            self.ib,
            self.iwarp,
            endpoint.mtu as usize + LARGEST_FRAME_OVERHEAD,
        )?;
        match &fabric {
            Fabric::Ib(ib) => {
                switch = ib.switch_config(switch);
                switch_source.push_str("; InfiniBand: VLs as queues, no PFC, no ECN");
            }
            Fabric::Iwarp(iw) => {
                check_iwarp_mtu(iw, &switch)?;
                switch = iw.switch_config(switch);
                if !iw.lossless {
                    switch_source.push_str("; iWARP: no PFC");
                }
            }
            Fabric::Roce => {}
        }
        let flows = resolve_flows(&self.flows, hosts)?;
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
        let duration = resolve_duration(
            self.duration_ms,
            !self.workloads.is_empty(),
            allreduce.is_some(),
            &flows,
        )?;
        // Without a duration, an all-reduce's sizes each run until done: their series
        // has no span to bound.
        let series_span = match &allreduce {
            Some(_) if self.duration_ms.is_none() => None,
            _ => Some(duration),
        };
        let (measure_from, sample) =
            resolve_sampling(self.measure_from_ms, self.sample_us, duration, series_span)?;
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
        let leaf_spine = match topology.shape {
            Shape::LeafSpine { leaves, spines, .. } => Some((leaves, spines)),
            _ => None,
        };
        let link_faults = faults::resolve_links(&self.faults, leaf_spine, topology.bits_per_sec)?;
        let switch_load_balancing = self.topology.switch_modes(leaf_spine.map(|(l, _)| l))?;
        let scenario = Scenario {
            digest: String::new(),
            faults,
            link_faults,
            switch_load_balancing,
            threads: 1,
            whole_frames: false,
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
        };
        budget::check(
            &scenario,
            self.duration_ms.map(|_| duration),
            self.max_frames,
            self.memory_budget_mib,
        )?;
        Ok(scenario)
    }
}

/// The `[endpoint]` table over the endpoint defaults, at the topology's link rate, which
/// it may not set.
fn resolve_endpoint(
    table: toml::Table,
    topology: &Topology,
) -> Result<EndpointConfig, ConfigError> {
    if table.contains_key("link_gbps") {
        return Err(err(
            "endpoint.link_gbps",
            "every link runs at topology.link_gbps; set it there",
        ));
    }
    let table = with_endpoint_preset(table, topology)?;
    let mut endpoint: EndpointConfig = serde_path_to_error::deserialize(toml::Value::Table(table))
        .map_err(|e| {
            // The key that is wrong (`endpoint.cc`), where serde can say.
            let path = e.path().to_string();
            let key = if path == "." {
                "endpoint".to_owned()
            } else {
                format!("endpoint.{path}")
            };
            err(key, e.into_inner().message().trim_end().to_owned())
        })?;
    endpoint.link_gbps = topology.bits_per_sec as f64 / 1e9;
    endpoint.validate("endpoint")?;
    Ok(endpoint)
}

/// The `[endpoint]` table laid over the preset its `preset` key names (at the topology's
/// link rate), if any.
fn with_endpoint_preset(
    mut table: toml::Table,
    topology: &Topology,
) -> Result<toml::Table, ConfigError> {
    let Some(name) = table.remove("preset") else {
        return Ok(table);
    };
    let names = crate::config::cc::PRESET_NAMES.join(", ");
    let Some(name) = name.as_str().map(str::to_owned) else {
        return Err(err(
            "endpoint.preset",
            format!("give a preset's name as a string: {names}"),
        ));
    };
    let gbps = topology.bits_per_sec as f64 / 1e9;
    let Some(text) = crate::config::cc::preset_text(&name, gbps) else {
        return Err(err(
            "endpoint.preset",
            format!("no endpoint preset named '{name}'; the presets are {names}"),
        ));
    };
    let mut base: toml::Table = toml::from_str(&text)
        .map_err(|e| err("endpoint.preset", format!("preset '{name}': {e}")))?;
    crate::config::merge_toml(&mut base, table);
    Ok(base)
}

/// The `[[flow]]` entries among `hosts` hosts: two hosts that exist, one flow per sender.
fn resolve_flows(specs: &[FlowSpec], hosts: usize) -> Result<Vec<FlowPlan>, ConfigError> {
    let mut flows = Vec::new();
    for (i, f) in specs.iter().enumerate() {
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
    Ok(flows)
}

/// How long the run lasts: `duration_ms`, which workloads and endless flows need; without
/// it, the all-reduce's limit when everything else ends by itself.
fn resolve_duration(
    duration_ms: Option<f64>,
    workloads: bool,
    allreduce: bool,
    flows: &[FlowPlan],
) -> Result<Nanos, ConfigError> {
    match duration_ms {
        Some(ms) => positive_time("duration_ms", ms, "ms", 1e6),
        None if workloads => Err(err(
            "duration_ms",
            "workloads run until the end of the run: say when it ends",
        )),
        None if allreduce => Ok(DEFAULT_ALLREDUCE_LIMIT),
        None if flows.iter().all(|f| f.bytes.is_some()) => Ok(DEFAULT_ALLREDUCE_LIMIT),
        None => Err(err(
            "duration_ms",
            "a flow without `bytes` runs until the end: say when the run ends",
        )),
    }
}

/// Where measuring starts (before the end of the run) and the time series' step (at least
/// a clock tick, at most [`MAX_ROWS`] rows over `series_span`).
fn resolve_sampling(
    measure_from_ms: f64,
    sample_us: f64,
    duration: Nanos,
    series_span: Option<Nanos>,
) -> Result<(Nanos, Nanos), ConfigError> {
    let measure_from = if measure_from_ms == 0.0 {
        Nanos::ZERO
    } else {
        positive_time("measure_from_ms", measure_from_ms, "ms", 1e6)?
    };
    if measure_from >= duration {
        return Err(err(
            "measure_from_ms",
            "must be before the end of the run (duration_ms)",
        ));
    }
    let sample = positive_time("sample_us", sample_us, "µs", 1e3)?;
    // Virtual time is whole nanoseconds: a shorter step rounds to none, and sampling
    // every 0 ns never moves on.
    if sample < MIN_SAMPLE {
        return Err(err(
            "sample_us",
            format!(
                "{sample_us} µs is shorter than the simulator's clock tick, 1 ns: give 0.001 or more"
            ),
        ));
    }
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
    Ok((measure_from, sample))
}

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
) -> Result<(Vec<WorkloadPlan>, Vec<WorkloadFlow>), ConfigError> {
    // A stream of its own: adding a workload does not change the switch's or the links'
    // draws.
    let mut rng = Rng::new(seed ^ 0x776f_726b_6c6f_6164);
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
        if jobs.len() > MAX_FLOWS {
            return Err(err(
                format!("workload[{i}]"),
                format!("more than {} flows in all", MAX_FLOWS),
            ));
        }
    }
    jobs.sort_by_key(|j| (j.arrival, j.from, j.to));
    Ok((plans, jobs))
}

impl TopologySpec {
    /// The shape `kind` names, from its keys; a key of another kind is refused.
    fn shape(&self) -> Result<Shape, ConfigError> {
        let kinds = ["star", "leaf-spine", "fat-tree", "ring"];
        if !kinds.contains(&self.kind.as_str()) {
            return Err(err(
                "topology.kind",
                format!(
                    "'{}': give \"star\", \"leaf-spine\", \"fat-tree\" or \"ring\"",
                    self.kind
                ),
            ));
        }
        // Each shape key, whether it is given, and the kind it belongs to.
        let keys = [
            ("hosts", self.hosts.is_some(), "star"),
            ("leaves", self.leaves.is_some(), "leaf-spine"),
            ("spines", self.spines.is_some(), "leaf-spine"),
            (
                "hosts_per_leaf",
                self.hosts_per_leaf.is_some(),
                "leaf-spine",
            ),
            ("pods", self.pods.is_some(), "fat-tree"),
            ("tors_per_pod", self.tors_per_pod.is_some(), "fat-tree"),
            ("aggs_per_pod", self.aggs_per_pod.is_some(), "fat-tree"),
            ("cores", self.cores.is_some(), "fat-tree"),
            ("hosts_per_tor", self.hosts_per_tor.is_some(), "fat-tree"),
            ("switches", self.switches.is_some(), "ring"),
            ("hosts_per_switch", self.hosts_per_switch.is_some(), "ring"),
        ];
        if let Some((k, _, _)) = keys
            .iter()
            .find(|(_, set, kind)| *set && *kind != self.kind)
        {
            return Err(err(
                format!("topology.{k}"),
                format!("not used by kind = \"{}\"", self.kind),
            ));
        }
        if self.kind != "star" && self.loss != 0.0 {
            return Err(err("topology.loss", "only a star has lossy links"));
        }
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
        Ok(match self.kind.as_str() {
            "star" => Shape::Star {
                hosts: count("hosts", self.hosts, 2)?,
            },
            "leaf-spine" => Shape::LeafSpine {
                leaves: count("leaves", self.leaves, 1)?,
                spines: count("spines", self.spines, 1)?,
                hosts_per_leaf: count("hosts_per_leaf", self.hosts_per_leaf, 1)?,
            },
            "fat-tree" => {
                let f = FatTree {
                    pods: count("pods", self.pods, 1)?,
                    tors_per_pod: count("tors_per_pod", self.tors_per_pod, 1)?,
                    aggs_per_pod: count("aggs_per_pod", self.aggs_per_pod, 1)?,
                    cores: count("cores", self.cores, 1)?,
                    hosts_per_tor: count("hosts_per_tor", self.hosts_per_tor, 1)?,
                };
                if !f.cores.is_multiple_of(f.aggs_per_pod) {
                    return Err(err(
                        "topology.cores",
                        format!(
                            "{} cores do not split into {} equal groups, one per aggregation switch of a pod; give a multiple of aggs_per_pod",
                            f.cores, f.aggs_per_pod
                        ),
                    ));
                }
                Shape::FatTree(f)
            }
            _ => {
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
        })
    }

    fn resolve(&self) -> Result<Topology, ConfigError> {
        let shape = self.shape()?;
        let fabric_gbps = match (self.fabric_gbps, shape) {
            (None, _) => self.link_gbps,
            (Some(g), Shape::FatTree(_)) => {
                if !(g.is_finite() && (0.001..=1600.0).contains(&g)) {
                    return Err(err(
                        "topology.fabric_gbps",
                        format!("{g} is not allowed; give 0.001 to 1600"),
                    ));
                }
                g
            }
            (Some(_), _) => {
                return Err(err(
                    "topology.fabric_gbps",
                    format!(
                        "not used by kind = \"{}\": only a fat tree runs its links between switches at a rate of their own",
                        self.kind
                    ),
                ));
            }
        };
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
            fabric_bits_per_sec: (fabric_gbps * 1e9).round() as u64,
            delay: Nanos(self.delay_ns),
            loss: self.loss,
            switch_latency: Nanos(self.switch_latency_ns),
            load_balancing: self
                .load_balancing(matches!(shape, Shape::LeafSpine { .. } | Shape::FatTree(_)))?,
        };
        if topology.hosts() < 2 {
            return Err(err("topology", "needs at least 2 hosts"));
        }
        if topology.hosts() > MAX_HOSTS {
            return Err(err(
                "topology",
                format!(
                    "{} hosts; at most {MAX_HOSTS} (leaves × hosts_per_leaf for a leaf-spine, pods × tors_per_pod × hosts_per_tor for a fat tree, switches × hosts_per_switch for a ring)",
                    topology.hosts()
                ),
            ));
        }
        Ok(topology)
    }
}

impl TopologySpec {
    /// `load_balancing`, `flowlet_gap_us` and `ecmp_seed`, resolved; only a leaf-spine
    /// has a choice of paths.
    fn load_balancing(&self, leaf_spine: bool) -> Result<Option<LoadBalancing>, ConfigError> {
        if !leaf_spine {
            for (key, set) in [
                ("load_balancing", self.load_balancing.is_some()),
                ("flowlet_gap_us", self.flowlet_gap_us.is_some()),
                ("ecmp_seed", self.ecmp_seed.is_some()),
                ("spraying", self.spraying.is_some()),
            ] {
                if set {
                    return Err(err(
                        format!("topology.{key}"),
                        "only a leaf-spine or a fat tree has more than one path between two hosts; remove it",
                    ));
                }
            }
            return Ok(None);
        }
        if self.load_balancing.is_none()
            && self.flowlet_gap_us.is_none()
            && self.ecmp_seed.is_none()
            && self.spraying.is_none()
            && self.switch_load_balancing.is_none()
        {
            return Ok(None);
        }
        let name = self.load_balancing.as_deref().unwrap_or("ecmp");
        let flowlet_somewhere = name == "flowlet"
            || self
                .switch_load_balancing
                .iter()
                .flat_map(|m| m.values())
                .any(|n| n == "flowlet");
        if self.flowlet_gap_us.is_some() && !flowlet_somewhere {
            return Err(err(
                "topology.flowlet_gap_us",
                format!("applies to load_balancing = \"flowlet\", not \"{name}\""),
            ));
        }
        self.mode_named("topology.load_balancing", name).map(Some)
    }

    /// The mode `name` (the value of `key`) with the table's `flowlet_gap_us`,
    /// `ecmp_seed` and `spraying`, each where it applies.
    fn mode_named(&self, key: &str, name: &str) -> Result<LoadBalancing, ConfigError> {
        let Some(mut mode) = LoadBalancing::from_name(name) else {
            return Err(err(
                key,
                format!(
                    "'{name}': give {}",
                    LoadBalancing::NAMES.map(|n| format!("\"{n}\"")).join(", ")
                ),
            ));
        };
        if let Some(gap) = self.flowlet_gap_us {
            let LoadBalancing::Flowlet { gap: g } = &mut mode else {
                return self.mode_params(mode);
            };
            if !(gap.is_finite() && (0.0..=1_000_000.0).contains(&gap)) {
                return Err(err(
                    "topology.flowlet_gap_us",
                    format!("{gap} is not allowed; give 0 to 1000000 µs"),
                ));
            }
            *g = Nanos((gap * 1000.0).round() as u64);
        }
        self.mode_params(mode)
    }

    /// `mode` with the table's `ecmp_seed` and `spraying` where they apply.
    fn mode_params(&self, mut mode: LoadBalancing) -> Result<LoadBalancing, ConfigError> {
        // ecmp_seed stays valid under the other modes, which ignore it, so that `compare
        // --lb` can switch one scenario between them.
        if let Some(seed) = self.ecmp_seed.as_deref() {
            let per_switch = match seed {
                "shared" => false,
                "per-switch" => true,
                other => {
                    return Err(err(
                        "topology.ecmp_seed",
                        format!(
                            "'{other}': give \"shared\" (every switch hashes alike) or \"per-switch\""
                        ),
                    ));
                }
            };
            if let LoadBalancing::Ecmp { per_switch_seed } = &mut mode {
                *per_switch_seed = per_switch;
            }
        }
        if let Some(how) = self.spraying.as_deref() {
            let random = match how {
                "round-robin" => false,
                "random" => true,
                other => {
                    return Err(err(
                        "topology.spraying",
                        format!(
                            "'{other}': give \"round-robin\" (each flow's packets in turn) or \"random\""
                        ),
                    ));
                }
            };
            if let LoadBalancing::PerPacket { random: r } = &mut mode {
                *r = random;
            }
        }
        Ok(mode)
    }

    /// `switch_load_balancing`: each leaf named there, by index, with its own mode (the
    /// table's other keys apply to it as to `load_balancing`). A spine has one path to
    /// each leaf, so nothing to balance.
    pub(super) fn switch_modes(
        &self,
        leaves: Option<usize>,
    ) -> Result<Vec<(usize, LoadBalancing)>, ConfigError> {
        let Some(table) = &self.switch_load_balancing else {
            return Ok(Vec::new());
        };
        let key = |s: &str| format!("topology.switch_load_balancing.{s}");
        let Some(leaves) = leaves else {
            return Err(err(
                "topology.switch_load_balancing",
                "names a leaf-spine's leaves; remove it (a ring has one path between two hosts, and a fat tree's ToRs and aggregation switches all take topology.load_balancing)",
            ));
        };
        let mut modes = Vec::with_capacity(table.len());
        for (switch, name) in table {
            let leaf = switch
                .strip_prefix("leaf")
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&l| l < leaves && switch == &format!("leaf{l}"));
            let Some(leaf) = leaf else {
                let why = if switch.starts_with("spine") {
                    "a spine has one path to each leaf: nothing to balance; name a leaf".to_owned()
                } else {
                    format!("no such leaf; give leaf0 to leaf{}", leaves - 1)
                };
                return Err(err(key(switch), why));
            };
            modes.push((leaf, self.mode_named(&key(switch), name)?));
        }
        Ok(modes)
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
        let sizes =
            size_sweep::sizes(self.min_bytes, self.max_bytes, self.factor).map_err(|e| {
                let key = match e {
                    SizeSweepError::Size(s) if s == self.min_bytes => "allreduce.min_bytes",
                    SizeSweepError::Size(_) | SizeSweepError::Order { .. } => "allreduce.max_bytes",
                    SizeSweepError::Factor(_) => "allreduce.factor",
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
                size_sweep::sizes(w, w, 2)
                    .map_err(|e| err("allreduce.warm_up_bytes", e.to_string()))?;
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

/// Every switch port must carry an iWARP NIC's largest IP packet.
fn check_iwarp_mtu(
    iw: &crate::sim::fabric::IwarpFabric,
    switch: &crate::config::SwitchConfig,
) -> Result<(), ConfigError> {
    let mtu = iw.nic.interface_mtu;
    if iw.nic.fpdu_sizes().is_none() {
        return Err(err(
            "iwarp.mtu",
            format!("{mtu} leaves no room for an FPDU"),
        ));
    }
    if mtu > switch.port_defaults.mtu {
        return Err(err(
            "iwarp.mtu",
            format!(
                "{mtu} is more than the switches' port MTU, {}: their ports would drop every full segment",
                switch.port_defaults.mtu
            ),
        ));
    }
    Ok(())
}

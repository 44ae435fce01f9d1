//! `rocelab compare`: one scenario on several fabric settings (RoCEv2 with PFC, ECN and
//! DCQCN; RoCEv2 with PFC alone; InfiniBand with credits), measured the same way so they
//! can be set side by side: goodput per flow and in total, flow completion times, the
//! all-reduce, the buffer each needed to stay lossless, time paused against time stalled
//! for credit, and how a victim flow fares against its max-min fair share.

use super::fabric::Fabric;
use super::fct::{self, Bucket};
use super::run::Outcome;
use super::scenario::Scenario;
use super::summary::{self, Summary};
use super::topology::Topology;
use serde::Serialize;

/// A fabric setting to run a scenario on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Setting {
    /// RoCEv2 with the scenario's switch configuration: PFC, ECN, and DCQCN on.
    Roce,
    /// RoCEv2 with PFC alone: ECN marking and DCQCN off.
    RocePfc,
    /// RoCEv2 without PFC, with IRN's selective repeat and BDP cap, ECN and DCQCN on.
    Irn,
    /// iWARP: RDMA over TCP with DCTCP, PFC off, ECN on.
    Iwarp,
    /// InfiniBand: credit-based link-level flow control, no PFC, no ECN.
    Ib,
    /// InfiniBand with its congestion control (FECN, BECN, the CCT) on top of credits.
    IbCc,
}

impl Setting {
    /// Every setting.
    pub const ALL: [Setting; 6] = [
        Setting::Roce,
        Setting::RocePfc,
        Setting::Irn,
        Setting::Iwarp,
        Setting::Ib,
        Setting::IbCc,
    ];

    /// Its name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Setting::Roce => "roce",
            Setting::RocePfc => "roce-pfc",
            Setting::Irn => "irn",
            Setting::Iwarp => "iwarp",
            Setting::Ib => "ib",
            Setting::IbCc => "ib-cc",
        }
    }

    /// A column heading.
    pub fn label(self) -> &'static str {
        match self {
            Setting::Roce => "RoCE PFC+ECN+DCQCN",
            Setting::RocePfc => "RoCE PFC only",
            Setting::Irn => "IRN, no PFC",
            Setting::Iwarp => "iWARP DCTCP, no PFC",
            Setting::Ib => "IB credits",
            Setting::IbCc => "IB credits + CC",
        }
    }

    /// The setting named `name`.
    pub fn parse(name: &str) -> Result<Setting, UnknownSetting> {
        Setting::ALL
            .into_iter()
            .find(|s| s.name() == name.trim())
            .ok_or_else(|| UnknownSetting {
                name: name.to_owned(),
            })
    }

    /// Lays the setting over a scenario's TOML table (its variants are dropped: the
    /// settings are the variants).
    pub fn apply(self, table: &mut toml::Table) {
        /// The subtable `name` of `table`, taken out (empty if it had none).
        fn take(table: &mut toml::Table, name: &str) -> toml::Table {
            match table.remove(name) {
                Some(toml::Value::Table(t)) => t,
                _ => toml::Table::new(),
            }
        }
        table.remove("variant");
        let mut switch = take(table, "switch");
        let mut endpoint = take(table, "endpoint");
        let mut dcqcn = take(&mut endpoint, "dcqcn");
        let mut ib = take(table, "ib");
        let mut iwarp = take(table, "iwarp");
        match self {
            Setting::Roce | Setting::RocePfc => {
                let ecn = self == Setting::Roce;
                table.insert("fabric".into(), "roce".into());
                // Keeps the switch configuration's [pfc] keys the scenario gives.
                match switch.get_mut("pfc") {
                    Some(toml::Value::Table(pfc)) => {
                        pfc.insert("enabled".into(), true.into());
                    }
                    _ => {
                        switch.insert("pfc".into(), true.into());
                    }
                }
                switch.insert("ecn".into(), ecn.into());
                dcqcn.insert("enabled".into(), ecn.into());
                endpoint.insert("transport".into(), "go-back-n".into());
            }
            Setting::Irn => {
                table.insert("fabric".into(), "roce".into());
                match switch.get_mut("pfc") {
                    Some(toml::Value::Table(pfc)) => {
                        pfc.insert("enabled".into(), false.into());
                    }
                    _ => {
                        switch.insert("pfc".into(), false.into());
                    }
                }
                switch.insert("ecn".into(), true.into());
                dcqcn.insert("enabled".into(), true.into());
                endpoint.insert("transport".into(), "selective-repeat".into());
            }
            Setting::Iwarp => {
                table.insert("fabric".into(), "iwarp".into());
                // TCP's own congestion control (DCTCP on the switches' ECN marks) in
                // place of DCQCN; PFC off unless the scenario's [iwarp] asks for it.
                switch.insert("ecn".into(), true.into());
                dcqcn.insert("enabled".into(), false.into());
                iwarp.entry("cc").or_insert_with(|| "dctcp".into());
                table.insert(
                    "iwarp".into(),
                    toml::Value::Table(std::mem::take(&mut iwarp)),
                );
            }
            Setting::Ib | Setting::IbCc => {
                table.insert("fabric".into(), "ib".into());
                // DCQCN does not run on InfiniBand: credits alone, or IB's own
                // congestion control.
                dcqcn.insert("enabled".into(), false.into());
                let mut cc = take(&mut ib, "cc");
                cc.insert("enabled".into(), (self == Setting::IbCc).into());
                ib.insert("cc".into(), toml::Value::Table(cc));
                table.insert("ib".into(), toml::Value::Table(ib));
            }
        }
        endpoint.insert("dcqcn".into(), toml::Value::Table(dcqcn));
        table.insert("switch".into(), toml::Value::Table(switch));
        table.insert("endpoint".into(), toml::Value::Table(endpoint));
    }
}

/// Lays load-balancing mode `name` (one of [`LoadBalancing::NAMES`]) over a scenario's
/// TOML table: `topology.load_balancing`.
///
/// [`LoadBalancing::NAMES`]: super::topology::LoadBalancing::NAMES
pub fn apply_load_balancing(table: &mut toml::Table, name: &str) {
    table.remove("variant");
    if let Some(toml::Value::Table(t)) = table.get_mut("topology") {
        t.insert("load_balancing".into(), name.into());
    }
}

/// Lays endpoint preset `name` (one of [`PRESET_NAMES`]) over a scenario's TOML table:
/// `endpoint.preset`, its congestion control and parameters (keys the scenario's
/// `[endpoint]` gives beside its own preset still override them).
///
/// [`PRESET_NAMES`]: crate::config::cc::PRESET_NAMES
pub fn apply_cc(table: &mut toml::Table, name: &str) {
    table.remove("variant");
    let endpoint = table
        .entry("endpoint")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(e) = endpoint {
        e.insert("preset".into(), name.into());
    }
}

/// A name that is no fabric setting (`--fabrics`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{name}' is not a fabric setting: give {}",
    Setting::ALL.map(|s| s.name()).join(", ")
)]
pub struct UnknownSetting {
    /// The name as given.
    pub name: String,
}

/// One bulk flow's goodput.
#[derive(Debug, Clone, Serialize)]
pub struct FlowRate {
    /// Sending host.
    pub from: usize,
    /// Receiving host.
    pub to: usize,
    /// Goodput over the measured span, Gb/s.
    pub goodput_gbps: f64,
    /// Its max-min fair share of the links, as goodput, Gb/s (`None` on a ring).
    pub fair_gbps: Option<f64>,
}

/// One all-reduce size.
#[derive(Debug, Clone, Serialize)]
pub struct AllReduceSize {
    /// Bytes per rank.
    pub size: u64,
    /// Time of the whole collective, ns, if it finished.
    pub time_ns: Option<u64>,
    /// Bus bandwidth, GB/s, if it finished.
    pub busbw_gbytes_per_s: Option<f64>,
    /// The spread of its step times over every rank: the jitter.
    pub steps: super::run::StepSpread,
}

/// One setting's run, measured.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    /// The setting's name (`roce`, `roce-pfc`, `ib`).
    pub fabric: Setting,
    /// Its column heading.
    pub label: String,
    /// The switch configuration as run, in words.
    pub switch_source: String,
    /// What the run comes to (as `sim` summarises a variant).
    pub summary: Summary,
    /// Every bulk flow (`[[flow]]`), in file order.
    pub flows: Vec<FlowRate>,
    /// The bulk flows to hosts no other flow goes to, in a scenario where some host
    /// receives several: the flows a congestion elsewhere can only hurt.
    pub victims: Vec<FlowRate>,
    /// Workload flows' slowdowns per size bucket, the last over all sizes.
    pub fct: Vec<Bucket>,
    /// The all-reduce sizes.
    pub allreduce: Vec<AllReduceSize>,
    /// Frames simulated.
    pub frames: u64,
    /// On RoCEv2 with PFC, when no PFC frame was sent: how close the fullest ingress
    /// priority group came to its XOFF point (`None` otherwise).
    pub pfc_unused: Option<PfcUnused>,
    /// What load balancing came to, where the scenario names a mode (`compare --lb`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancing: Option<super::balance::BalanceReport>,
    /// The switches' egress queues over the measured span (`None` without a sample).
    pub queues: Option<QueueSpread>,
}

/// Every switch egress queue the time series records, at every sample from the start of
/// the measured span: how deep the queues ran, in the large (the HPCC paper's "queues
/// near zero").
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QueueSpread {
    /// The mean over queues and samples, bytes.
    pub mean_bytes: f64,
    /// The median, bytes.
    pub p50_bytes: f64,
    /// The 99th percentile (nearest rank), bytes.
    pub p99_bytes: f64,
    /// Queue samples (queues × samples).
    pub samples: usize,
}

/// The [`QueueSpread`] of `series` from `from` on.
fn queue_spread(series: &crate::series::Series, from: crate::time::Nanos) -> Option<QueueSpread> {
    let span = series.since(from);
    let mut all: Vec<f64> = span
        .columns
        .iter()
        .filter(|c| c.kind == crate::series::ColumnKind::QueueBytes)
        .flat_map(|c| c.values.iter().copied())
        .collect();
    if all.is_empty() {
        return None;
    }
    all.sort_by(f64::total_cmp);
    Some(QueueSpread {
        mean_bytes: all.iter().sum::<f64>() / all.len() as f64,
        p50_bytes: fct::nearest_rank(&all, 0.5)?,
        p99_bytes: fct::nearest_rank(&all, 0.99)?,
        samples: all.len(),
    })
}

/// Why PFC never acted in a run that has it: the fullest lossless ingress priority group
/// stayed below the XOFF point (the shared buffer took the whole burst).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PfcUnused {
    /// The most any lossless ingress priority group held (sampled), bytes.
    pub pg_peak_bytes: u64,
    /// The lowest its XOFF point came (sampled; it moves with the free buffer under a
    /// dynamic threshold), bytes.
    pub xoff_min_bytes: u64,
}

/// The run's [`PfcUnused`], if it had PFC on a lossless class and sent no PFC frame.
fn pfc_unused(summary: &Summary, series: &crate::series::Series) -> Option<PfcUnused> {
    use crate::series::ColumnKind;
    if summary.switch_pfc_sent + summary.host_pfc_sent > 0 {
        return None;
    }
    let over = |kind: ColumnKind| {
        series
            .columns
            .iter()
            .filter(move |c| c.kind == kind)
            .flat_map(|c| c.values.iter().copied())
    };
    let xoff_min = over(ColumnKind::XoffBytes).fold(f64::INFINITY, f64::min);
    let pg_peak = over(ColumnKind::PgBytes).fold(0.0, f64::max);
    xoff_min.is_finite().then_some(PfcUnused {
        pg_peak_bytes: pg_peak as u64,
        xoff_min_bytes: xoff_min as u64,
    })
}

/// What `outcome`, the run of `scenario` on `setting`, comes to.
pub fn measure(setting: Setting, scenario: &Scenario, outcome: &Outcome) -> Measured {
    let t = &scenario.topology;
    let pairs: Vec<(usize, usize)> = scenario.flows.iter().map(|f| (f.from, f.to)).collect();
    let shares = fair_shares(t, &pairs);
    let framing = scenario.fabric.framing();
    let mtu = scenario.endpoint.mtu as usize;
    let flows: Vec<FlowRate> = scenario
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| FlowRate {
            from: f.from,
            to: f.to,
            goodput_gbps: outcome
                .qps
                .iter()
                .find(|q| q.host == f.from && q.peer_host == Some(f.to))
                .map_or(0.0, |q| q.gbps),
            fair_gbps: shares.as_ref().map(|s| {
                s[i] * t.bits_per_sec as f64 / 1e9
                    * fct::payload_share(framing, f.message_bytes, mtu)
            }),
        })
        .collect();
    let receivers = |to: usize| pairs.iter().filter(|p| p.1 == to).count();
    let incast = pairs.iter().any(|p| receivers(p.1) > 1);
    let victims = flows
        .iter()
        .filter(|f| incast && receivers(f.to) == 1)
        .cloned()
        .collect();
    let summary = summary::summary(scenario, outcome);
    let pfc_unused = match &scenario.fabric {
        Fabric::Roce => pfc_unused(&summary, &outcome.series),
        Fabric::Iwarp(iw) if iw.lossless => pfc_unused(&summary, &outcome.series),
        Fabric::Ib(_) | Fabric::Iwarp(_) => None,
    };
    Measured {
        fabric: setting,
        label: setting.label().to_owned(),
        switch_source: scenario.switch_source.clone(),
        summary,
        pfc_unused,
        load_balancing: super::balance::report(scenario, outcome),
        queues: queue_spread(&outcome.series, outcome.measured_from),
        flows,
        victims,
        fct: fct::buckets(&outcome.flows),
        allreduce: outcome
            .allreduce
            .iter()
            .map(|r| AllReduceSize {
                size: r.result.size,
                time_ns: r.result.time_ns,
                busbw_gbytes_per_s: r.result.time_ns.map(|_| r.result.busbw()),
                steps: r.steps,
            })
            .collect(),
        frames: outcome.frames,
    }
}

/// A link of the fair-share model: a host's uplink or downlink, or the spine stage
/// between a leaf and the spines in one direction (ECMP assumed to spread it evenly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    Up(usize),
    Down(usize),
    LeafUp(usize),
    LeafDown(usize),
}

/// Each flow's max-min fair share of the links it crosses, as a fraction of the link
/// rate, by progressive filling; `None` for a ring (its routes are not modelled here).
pub fn fair_shares(topology: &Topology, flows: &[(usize, usize)]) -> Option<Vec<f64>> {
    fair_shares_degraded(topology, flows, &[])
}

/// [`fair_shares`] with some of the leaves' uplink capacity gone: `lost` holds (leaf,
/// links' worth lost), e.g. (0, 0.75) for one of leaf 0's uplinks at a quarter of its
/// speed. The spine stage is still spread perfectly over what is left, each way.
pub fn fair_shares_degraded(
    topology: &Topology,
    flows: &[(usize, usize)],
    lost: &[(usize, f64)],
) -> Option<Vec<f64>> {
    let (per_leaf, spines) = topology.leaf_groups()?;
    let leaf = |h: usize| h.checked_div(per_leaf).unwrap_or(0);
    let paths: Vec<Vec<Link>> = flows
        .iter()
        .map(|&(a, b)| {
            if leaf(a) == leaf(b) {
                vec![Link::Up(a), Link::Down(b)]
            } else {
                vec![
                    Link::Up(a),
                    Link::LeafUp(leaf(a)),
                    Link::LeafDown(leaf(b)),
                    Link::Down(b),
                ]
            }
        })
        .collect();
    let capacity = |l: Link| match l {
        Link::Up(_) | Link::Down(_) => 1.0,
        Link::LeafUp(l) | Link::LeafDown(l) => {
            spines as f64
                - lost
                    .iter()
                    .filter(|(leaf, _)| *leaf == l)
                    .map(|(_, x)| x)
                    .sum::<f64>()
        }
    };
    let mut share: Vec<Option<f64>> = vec![None; flows.len()];
    loop {
        // The bottleneck: the link whose capacity left, split among its unfixed flows,
        // is the least.
        let mut links: Vec<Link> = paths.iter().flatten().copied().collect();
        links.dedup();
        let mut best: Option<(f64, Link)> = None;
        for l in links {
            let users: Vec<usize> = (0..flows.len())
                .filter(|&i| share[i].is_none() && paths[i].contains(&l))
                .collect();
            if users.is_empty() {
                continue;
            }
            let used: f64 = (0..flows.len())
                .filter(|&i| paths[i].contains(&l))
                .filter_map(|i| share[i])
                .sum();
            let each = (capacity(l) - used).max(0.0) / users.len() as f64;
            if best.is_none_or(|(b, _)| each < b) {
                best = Some((each, l));
            }
        }
        let Some((each, l)) = best else { break };
        for i in 0..flows.len() {
            if share[i].is_none() && paths[i].contains(&l) {
                share[i] = Some(each);
            }
        }
    }
    Some(share.into_iter().map(|s| s.unwrap_or(0.0)).collect())
}

/// The fabric a setting runs, for a header line.
pub fn describe(setting: Setting, scenario: &Scenario) -> String {
    match (&scenario.fabric, setting) {
        (Fabric::Ib(_) | Fabric::Iwarp(_), _) => scenario.fabric.describe(),
        (Fabric::Roce, _) => format!(
            "RoCEv2, {} {}; switches store-and-forward, {} latency; switch: {}",
            scenario.endpoint.cc.name().to_uppercase(),
            if scenario.endpoint.dcqcn.enabled {
                "on"
            } else {
                "off"
            },
            scenario.topology.switch_latency.human(),
            scenario.switch_source
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::topology::Shape;
    use crate::time::Nanos;

    fn topology(shape: Shape) -> Topology {
        Topology {
            shape,
            bits_per_sec: 100_000_000_000,
            fabric_bits_per_sec: 100_000_000_000,
            delay: Nanos(1000),
            loss: 0.0,
            switch_latency: Nanos::ZERO,
            load_balancing: None,
        }
    }

    #[test]
    fn the_victim_flow_gets_what_the_incast_leaves_of_the_spine_link() {
        let t = topology(Shape::LeafSpine {
            leaves: 2,
            spines: 1,
            hosts_per_leaf: 4,
        });
        let flows = [(0, 4), (1, 4), (5, 4), (6, 4), (2, 7)];
        let s = fair_shares(&t, &flows).unwrap();
        for i in 0..4 {
            assert!((s[i] - 0.25).abs() < 1e-12, "{s:?}");
        }
        assert!((s[4] - 0.5).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn an_incast_on_a_star_splits_the_receiver_s_link() {
        let t = topology(Shape::Star { hosts: 9 });
        let flows: Vec<(usize, usize)> = (0..8).map(|i| (i, 8)).collect();
        let s = fair_shares(&t, &flows).unwrap();
        assert!(s.iter().all(|&x| (x - 0.125).abs() < 1e-12), "{s:?}");
    }

    #[test]
    fn a_setting_lays_its_keys_over_the_scenario() {
        let mut t: toml::Table =
            toml::from_str("[switch]\necn = false\n[[variant]]\nname = \"x\"\n").unwrap();
        Setting::Roce.apply(&mut t);
        assert!(!t.contains_key("variant"));
        assert_eq!(t["switch"]["ecn"].as_bool(), Some(true));
        Setting::Ib.apply(&mut t);
        assert_eq!(t["fabric"].as_str(), Some("ib"));
        assert_eq!(t["endpoint"]["dcqcn"]["enabled"].as_bool(), Some(false));
        assert_eq!(Setting::parse("roce-pfc"), Ok(Setting::RocePfc));
        assert!(Setting::parse("ethernet").is_err());
    }
}

//! What a run's load balancing came to: how busy each leaf's uplinks were and how unevenly
//! (max over mean, per switch), the effective bandwidth (goodput over what the fabric
//! could carry), and what spraying cost the receivers (packets out of order, reorder
//! depth, retransmissions they already had).

use super::compare::fair_shares_degraded;
use super::fct::payload_share;
use super::run::Outcome;
use super::scenario::Scenario;
use super::topology::Network;
use serde::Serialize;

/// One uplink over the run.
#[derive(Debug, Clone, Serialize)]
pub struct UplinkLoad {
    /// The port's name (`l0up2`).
    pub port: String,
    /// Bytes sent (frames without preamble, gap and FCS).
    pub tx_bytes: u64,
    /// The share of the run its wire was busy, 0 to 1 (preamble, gap and FCS counted).
    pub utilization: f64,
}

/// One switch's uplinks over the run.
#[derive(Debug, Clone, Serialize)]
pub struct SwitchUplinks {
    /// The switch's name (`leaf0`).
    pub switch: String,
    /// Its uplinks, in port order.
    pub uplinks: Vec<UplinkLoad>,
    /// The busiest uplink's utilization over the mean (1: even; `None` when all idle).
    pub imbalance: Option<f64>,
    /// Its own mode, where the scenario gives it one (`topology.switch_load_balancing`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// A run's load balancing, measured.
#[derive(Debug, Clone, Serialize)]
pub struct BalanceReport {
    /// The mode (`ecmp`, `flowlet`, `per-packet`, `adaptive`).
    pub mode: String,
    /// Every switch with a choice of uplinks.
    pub switches: Vec<SwitchUplinks>,
    /// The imbalance of the switch whose uplinks sent the most bytes (the one the flows
    /// load; a leaf that sends only ACKs up is uneven at a few per cent of load).
    pub imbalance: Option<f64>,
    /// The bulk flows' goodput, Gb/s.
    pub goodput_gbps: f64,
    /// What they could carry: the sum of their max-min fair shares of the links (the
    /// spine stage spread perfectly), as goodput, Gb/s.
    pub capacity_gbps: f64,
    /// Goodput over capacity, 0 to 1 (`None` without bulk flows).
    pub effective_bandwidth: Option<f64>,
    /// Data packets the receivers placed out of order (selective repeat).
    pub out_of_order_placed: u64,
    /// Data packets the receivers discarded as out of order (go-back-N) or could not
    /// place (selective repeat).
    pub out_of_order_discarded: u64,
    /// The farthest ahead of the expected PSN a packet came, packets.
    pub max_reorder_depth: u64,
    /// Data packets sent again.
    pub retransmitted: u64,
    /// Retransmissions the receiver already had: the packet was late, not lost.
    pub spurious_retransmissions: u64,
    /// The all-reduce's largest size against the ring's bound, where the scenario has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allreduce: Option<AllReduceBound>,
    /// The workload flows as one exchange (an all-to-all ends with its last flow), where
    /// the scenario has workloads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exchange: Option<Exchange>,
}

/// A ring all-reduce against what the fabric allows it. Its 2(N − 1) steps each move
/// size/N bytes over every ring link at once, so its busbw (algbw × 2(N − 1)/N) is the
/// rate of its slowest ring flow: the bound is that flow's max-min fair share of the
/// links (the spine stage spread perfectly), as payload.
#[derive(Debug, Clone, Serialize)]
pub struct AllReduceBound {
    /// Bytes per rank of the largest size.
    pub size: u64,
    /// Its bus bandwidth, GB/s (`None`: it did not finish).
    pub busbw_gbytes_per_s: Option<f64>,
    /// The most the fabric allows it, GB/s.
    pub bound_gbytes_per_s: f64,
    /// `busbw_gbytes_per_s` over the bound, 0 to 1: the all-reduce's effective bandwidth.
    pub efficiency: Option<f64>,
}

/// A run's workload flows as one exchange: from the first arrival to the last flow's end,
/// against the least time the fabric needs to carry them.
#[derive(Debug, Clone, Serialize)]
pub struct Exchange {
    /// Workload flows that arrived.
    pub flows: usize,
    /// From the first arrival to the last flow's end, ns (`None`: some flow did not
    /// finish).
    pub done_ns: Option<u64>,
    /// The least it could take: the busiest link's frames at its rate (a host's link, or
    /// a leaf's uplinks together, the spine stage spread perfectly), latency not counted,
    /// ns.
    pub bound_ns: u64,
    /// `bound_ns` over `done_ns`, 0 to 1: the exchange's effective bandwidth.
    pub efficiency: Option<f64>,
}

/// The uplinks of every switch that has a choice, over the run up to now.
pub fn uplinks(net: &Network, bits_per_sec: u64) -> Vec<SwitchUplinks> {
    let secs = net.engine.now().0 as f64 / 1e9;
    net.uplinks
        .iter()
        .map(|(index, ports)| {
            let sw = net.switch(*index);
            let uplinks: Vec<UplinkLoad> = ports
                .iter()
                .map(|&p| {
                    let c = sw.counters(p);
                    let (bytes, frames) = c
                        .classes
                        .iter()
                        .fold((0, 0), |(b, f), k| (b + k.tx_bytes, f + k.tx_frames));
                    // IEEE 802.3: preamble and SFD 8, FCS 4, gap 12 bytes per frame.
                    let wire_bits = (bytes + 24 * frames) * 8;
                    UplinkLoad {
                        port: c.name.clone(),
                        tx_bytes: bytes,
                        utilization: if secs > 0.0 {
                            wire_bits as f64 / (bits_per_sec as f64 * secs)
                        } else {
                            0.0
                        },
                    }
                })
                .collect();
            SwitchUplinks {
                switch: net.switch_names[*index].clone(),
                imbalance: imbalance(&uplinks),
                uplinks,
                mode: None,
            }
        })
        .collect()
}

/// The busiest over the mean.
fn imbalance(uplinks: &[UplinkLoad]) -> Option<f64> {
    let n = uplinks.len() as f64;
    let mean = uplinks.iter().map(|u| u.utilization).sum::<f64>() / n;
    let max = uplinks.iter().map(|u| u.utilization).fold(0.0, f64::max);
    (mean > 0.0).then(|| max / mean)
}

/// The run's load balancing, for a scenario that names one (`topology.load_balancing`).
pub fn report(scenario: &Scenario, outcome: &Outcome) -> Option<BalanceReport> {
    let t = &scenario.topology;
    let mode = t.load_balancing?;
    let net = &outcome.net;
    let mut switches = uplinks(net, t.fabric_bits_per_sec);
    for (leaf, own) in &scenario.switch_load_balancing {
        if let Some(s) = switches
            .iter_mut()
            .find(|s| s.switch == format!("leaf{leaf}"))
        {
            s.mode = Some(own.name().to_owned());
        }
    }
    let pairs: Vec<(usize, usize)> = scenario.flows.iter().map(|f| (f.from, f.to)).collect();
    let framing = scenario.fabric.framing();
    let mtu = scenario.endpoint.mtu as usize;
    // A slowed uplink takes its lost speed, averaged over the measured span, from its
    // leaf's capacity both ways.
    let lost: Vec<(usize, f64)> = scenario
        .link_faults
        .iter()
        .map(|f| {
            let kept = f.kept_share(scenario.measure_from, scenario.duration, t.bits_per_sec);
            (f.leaf, 1.0 - kept)
        })
        .collect();
    let capacity_gbps = fair_shares_degraded(t, &pairs, &lost).map_or(0.0, |s| {
        s.iter()
            .zip(&scenario.flows)
            .map(|(share, f)| {
                share * t.bits_per_sec as f64 / 1e9 * payload_share(framing, f.message_bytes, mtu)
            })
            .sum()
    });
    let goodput_gbps: f64 = scenario
        .flows
        .iter()
        .filter_map(|f| {
            outcome
                .qps
                .iter()
                .find(|q| q.host == f.from && q.peer_host == Some(f.to))
        })
        .map(|q| q.gbps)
        .fold(0.0, |a, b| a + b);
    let mut r = BalanceReport {
        mode: mode.name().to_owned(),
        imbalance: switches
            .iter()
            .max_by_key(|s| s.uplinks.iter().map(|u| u.tx_bytes).sum::<u64>())
            .and_then(|s| s.imbalance),
        switches,
        goodput_gbps,
        capacity_gbps,
        effective_bandwidth: (capacity_gbps > 0.0).then(|| goodput_gbps / capacity_gbps),
        out_of_order_placed: 0,
        out_of_order_discarded: 0,
        max_reorder_depth: 0,
        retransmitted: 0,
        spurious_retransmissions: 0,
        allreduce: allreduce_bound(scenario, outcome, &lost),
        exchange: exchange(scenario, outcome, &lost),
    };
    for h in 0..net.hosts.len() {
        let c = net.endpoint(h).counters();
        r.out_of_order_placed += c.out_of_order_placed;
        r.out_of_order_discarded += c.out_of_order_received;
        r.max_reorder_depth = r.max_reorder_depth.max(c.max_reorder_depth);
        r.retransmitted += c.retransmitted_packets;
        r.spurious_retransmissions += c.duplicates_received;
    }
    Some(r)
}

/// The largest all-reduce size against the ring's bound (`None` without an all-reduce, or
/// on a ring topology).
fn allreduce_bound(
    scenario: &Scenario,
    outcome: &Outcome,
    lost: &[(usize, f64)],
) -> Option<AllReduceBound> {
    let plan = scenario.allreduce.as_ref()?;
    let row = outcome.allreduce.last()?;
    let n = plan.ranks.len();
    let ring: Vec<(usize, usize)> = (0..n)
        .map(|i| (plan.ranks[i], plan.ranks[(i + 1) % n]))
        .collect();
    // The bulk flows share the links with the ring.
    let mut pairs = ring.clone();
    pairs.extend(scenario.flows.iter().map(|f| (f.from, f.to)));
    let shares = fair_shares_degraded(&scenario.topology, &pairs, lost)?;
    let slowest = shares[..ring.len()]
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let step = (row.result.size as usize).div_ceil(n);
    let payload = payload_share(
        scenario.fabric.framing(),
        step,
        scenario.endpoint.mtu as usize,
    );
    let bound = slowest * scenario.topology.bits_per_sec as f64 * payload / 8e9;
    let busbw = row.result.time_ns.map(|_| row.result.busbw());
    Some(AllReduceBound {
        size: row.result.size,
        busbw_gbytes_per_s: busbw,
        bound_gbytes_per_s: bound,
        efficiency: busbw.filter(|_| bound > 0.0).map(|b| b / bound),
    })
}

/// The workload flows as one exchange, on a star or leaf-spine (`None` on a ring, or
/// without workload flows). `lost` holds (leaf, uplinks' worth lost) as for the capacity.
fn exchange(scenario: &Scenario, outcome: &Outcome, lost: &[(usize, f64)]) -> Option<Exchange> {
    let t = &scenario.topology;
    let (per_leaf, spines) = t.leaf_groups()?;
    let flows = &outcome.flows;
    let first = flows.iter().map(|f| f.arrival).min()?;
    let leaf = |h: usize| h.checked_div(per_leaf).unwrap_or(0);
    let (framing, mtu) = (scenario.fabric.framing(), scenario.endpoint.mtu as usize);
    // Wire bits per link: hosts' links each way, then each leaf's uplinks each way.
    let mut bits: std::collections::HashMap<(u8, usize), f64> = Default::default();
    for f in flows {
        let wire = f.bytes as f64 * 8.0 / payload_share(framing, f.bytes as usize, mtu);
        *bits.entry((0, f.from)).or_default() += wire;
        *bits.entry((1, f.to)).or_default() += wire;
        if leaf(f.from) != leaf(f.to) {
            *bits.entry((2, leaf(f.from))).or_default() += wire;
            *bits.entry((3, leaf(f.to))).or_default() += wire;
        }
    }
    let rate = t.bits_per_sec as f64;
    let bound_s = bits
        .iter()
        .map(|(&(kind, at), b)| {
            let links = if kind < 2 {
                1.0
            } else {
                let gone: f64 = lost.iter().filter(|(l, _)| *l == at).map(|(_, x)| x).sum();
                spines as f64 - gone
            };
            b / (rate * links)
        })
        .fold(0.0, f64::max);
    let bound_ns = (bound_s * 1e9).round() as u64;
    let done_ns = flows
        .iter()
        .map(|f| f.finished)
        .collect::<Option<Vec<_>>>()
        .and_then(|ends| ends.into_iter().max())
        .map(|end| end.0.saturating_sub(first.0));
    Some(Exchange {
        flows: flows.len(),
        done_ns,
        bound_ns,
        efficiency: done_ns
            .filter(|&d| d > 0)
            .map(|d| bound_ns as f64 / d as f64),
    })
}

/// The report as text: a line per switch with its uplinks' utilization and imbalance,
/// then effective bandwidth and reordering.
pub fn text(r: &BalanceReport) -> String {
    use std::fmt::Write;
    let mut out = format!("\nload balancing: {}\n", r.mode);
    for s in &r.switches {
        let loads: Vec<String> = s
            .uplinks
            .iter()
            .map(|u| format!("{} {:.1} %", u.port, 100.0 * u.utilization))
            .collect();
        let name = match &s.mode {
            Some(mode) => format!("{} ({mode})", s.switch),
            None => s.switch.clone(),
        };
        let _ = writeln!(
            out,
            "  {:<8} uplinks {}; imbalance (max/mean) {}",
            name,
            loads.join(", "),
            s.imbalance.map_or("-".to_owned(), |i| format!("{i:.2}"))
        );
    }
    if let Some(e) = r.effective_bandwidth {
        let _ = writeln!(
            out,
            "  effective bandwidth {:.1} % ({:.1} of {:.1} Gb/s the flows could carry)",
            100.0 * e,
            r.goodput_gbps,
            r.capacity_gbps
        );
    }
    if let Some(a) = &r.allreduce {
        let _ = writeln!(
            out,
            "  all-reduce {}: busbw {} of at most {:.2} GB/s ({})",
            crate::bytes::human(a.size),
            a.busbw_gbytes_per_s
                .map_or("- (did not finish)".to_owned(), |b| format!("{b:.2}")),
            a.bound_gbytes_per_s,
            a.efficiency.map_or("-".to_owned(), |e| format!(
                "{:.1} % of the bound",
                100.0 * e
            ))
        );
    }
    if let Some(x) = &r.exchange {
        let _ = writeln!(
            out,
            "  workload as one exchange: {} flows done in {} (at least {:.1} µs: {})",
            x.flows,
            x.done_ns
                .map_or("- (not all finished)".to_owned(), |d| format!(
                    "{:.1} µs",
                    d as f64 / 1e3
                )),
            x.bound_ns as f64 / 1e3,
            x.efficiency.map_or("-".to_owned(), |e| format!(
                "{:.1} % of the bound",
                100.0 * e
            ))
        );
    }
    let _ = writeln!(
        out,
        "  out of order: {} placed, {} discarded; reorder depth {}; retransmitted {} ({} spurious)",
        r.out_of_order_placed,
        r.out_of_order_discarded,
        r.max_reorder_depth,
        r.retransmitted,
        r.spurious_retransmissions
    );
    out
}

//! What `rocelab sim` prints and writes: the per-QP DCQCN table, the nccl-tests-like
//! all-reduce table, the switches' counter tables, and all of it as JSON.

use super::counters::{CounterStyle, render};
use super::nccl;
use super::ports;
use crate::sim::run::{AllReduceRow, FabricCounts, Outcome, QpRow};
use crate::sim::scenario::{Scenario, Shape};
use crate::time::Nanos;
use std::fmt::Write as _;

fn gbps(bps: u64) -> f64 {
    bps as f64 / 1e9
}

/// One line on the scenario: name, shape, links, switch, seed.
pub fn header(s: &Scenario) -> String {
    let t = &s.topology;
    let shape = match t.shape {
        Shape::Star { hosts } => format!("one switch, {hosts} hosts"),
        Shape::LeafSpine {
            leaves,
            spines,
            hosts_per_leaf,
        } => format!("{leaves} leaves x {spines} spines, {hosts_per_leaf} hosts per leaf"),
        Shape::Ring {
            switches,
            hosts_per_switch,
        } => format!(
            "a ring of {switches} switches, {hosts_per_switch} hosts each, shorter way round"
        ),
    };
    let mut out = format!("scenario {}", s.name);
    if let Some(v) = &s.variant {
        let _ = write!(out, ", variant {v}");
    }
    if !s.description.is_empty() {
        let _ = write!(out, ": {}", s.description);
    }
    let _ = write!(
        out,
        "\n{shape}; links {} Gb/s, {} delay{}; path MTU {}; DCQCN {}; seed {}\n",
        gbps(t.bits_per_sec),
        t.delay.human(),
        if t.loss > 0.0 {
            format!(", loss {}", t.loss)
        } else {
            String::new()
        },
        s.endpoint.mtu,
        if s.endpoint.dcqcn.enabled {
            "on"
        } else {
            "off"
        },
        s.seed
    );
    if let crate::sim::fabric::Fabric::Ib(_) = s.fabric {
        let _ = writeln!(out, "fabric: {}", s.fabric.describe());
    } else if s.topology.switch_latency > crate::time::Nanos::ZERO {
        let _ = writeln!(
            out,
            "switches store and forward with {} of latency",
            s.topology.switch_latency.human()
        );
    }
    let _ = writeln!(out, "switch: {}", s.switch_source);
    for line in crate::sim::faults::describe(&s.faults, t.bits_per_sec) {
        let _ = writeln!(out, "fault: {line}");
    }
    out
}

/// The workload flows' completion times: per size bucket, the flows that arrived and
/// finished, and the slowdown (FCT over the ideal FCT of the flow alone on its path) at
/// p50, p95, p99 and the largest, with the mean FCT. Empty without workloads.
pub fn fct_table(scenario: &Scenario, outcome: &Outcome) -> String {
    if outcome.flows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "Flow completion time slowdown (FCT / ideal FCT alone on the path)
",
    );
    for w in &scenario.workloads {
        let _ = match w.flows - w.flows_in_run {
            0 => writeln!(out, "  workload: {} ({} flows)", w.summary, w.flows),
            late => writeln!(
                out,
                "  workload: {} ({} flows; {} arrive within the run, {late} after it ends and never start)",
                w.summary, w.flows, w.flows_in_run
            ),
        };
    }
    // Said before the table, not under it: the percentiles below are of finished flows.
    let unfinished = outcome
        .flows
        .iter()
        .filter(|f| f.finished.is_none())
        .count();
    if unfinished > 0 {
        let all = outcome.flows.len();
        let _ = writeln!(
            out,
            "  {unfinished} of the {all} flows ({:.1} %) had not finished when the run ended; the percentiles
  below are of the flows that finished, which flatters the large sizes. Stop the arrivals
  earlier so the rest can drain (the workload's duration_us), or run longer (duration_ms).",
            100.0 * unfinished as f64 / all as f64
        );
    }
    let _ = writeln!(
        out,
        "  {:<12} {:>7} {:>8} {:>8} {:>8} {:>8} {:>9} {:>13}",
        "size", "flows", "finished", "p50", "p95", "p99", "max", "mean FCT"
    );
    let num = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |x| format!("{x:.2}"));
    for b in crate::sim::fct::buckets(&outcome.flows) {
        let _ = writeln!(
            out,
            "  {:<12} {:>7} {:>8} {:>8} {:>8} {:>8} {:>9} {:>13}",
            b.label,
            b.flows,
            b.finished,
            num(b.p50),
            num(b.p95),
            num(b.p99),
            num(b.max),
            b.mean_fct_ns
                .map_or_else(|| "-".to_owned(), |t| Nanos(t).human())
        );
    }
    out
}

/// Each sending QP: rate over the measured span, DCQCN state at the end, CNPs and
/// retransmissions.
pub fn qp_table(rows: &[QpRow], from: Nanos, to: Nanos) -> String {
    let mut out = format!(
        "QPs that sent data (payload rates averaged from {} to {}; Rc, Rt and alpha at the end)\n",
        from.human(),
        to.human()
    );
    let _ = writeln!(
        out,
        "  {:>4} {:>4} {:>7} {:>7} {:>8} {:>8} {:>8} {:>7} {:>8} {:>9} {:>8} {:>8} {:>12}",
        "host",
        "peer",
        "QPN",
        "sport",
        "Gb/s",
        "Rc Gb/s",
        "Rt Gb/s",
        "alpha",
        "CNPs rx",
        "CE marked",
        "retrans",
        "timeouts",
        "completion"
    );
    for r in rows {
        let s = &r.status;
        let _ = writeln!(
            out,
            "  {:>4} {:>4} {:>7} {:>7} {:>8.3} {:>8.3} {:>8.3} {:>7.4} {:>8} {:>9} {:>8} {:>8} {:>12}",
            r.host,
            r.peer_host
                .map_or_else(|| "?".to_owned(), |h| h.to_string()),
            format!("{:#x}", s.qpn),
            format!("{:#x}", s.udp_sport),
            r.gbps,
            gbps(s.rate_bps),
            gbps(s.target_bps),
            s.alpha,
            s.counters.cnps_received,
            r.ce_marked,
            s.counters.retransmitted_packets,
            s.counters.timeouts,
            r.completion_ns
                .map_or_else(|| "-".to_owned(), |ns| Nanos(ns).human())
        );
    }
    if rows.len() > 1 {
        let rates: Vec<f64> = rows.iter().map(|r| r.gbps).collect();
        let _ = writeln!(
            out,
            "  total {:.3} Gb/s; Jain fairness {}",
            rates.iter().sum::<f64>(),
            jain_text(jain(&rates))
        );
    }
    out
}

/// One of the fabric's counts, read from a size's counts.
type Count = fn(&FabricCounts) -> u64;

/// The fabric's counts beside each all-reduce size: header and value.
const ALLREDUCE_COUNTS: [(&str, Count); 7] = [
    ("CNPs tx", |f| f.cnps_sent),
    ("CNPs rx", |f| f.cnps_received),
    ("pauses", |f| f.pauses_received),
    ("retrans", |f| f.retransmitted),
    ("PFC tx", |f| f.pfc_sent),
    ("CE marked", |f| f.ecn_marked),
    ("drops", |f| f.dropped),
];

/// The all-reduce sweep's head as nccl-tests prints it (`all_reduce_perf -b -e -f`), with
/// the fabric's counts as extra columns: printed before the first size finishes, then an
/// [`allreduce_row`] per size, then [`nccl::foot`].
pub fn allreduce_head(ranks: usize) -> String {
    let headers: Vec<&str> = ALLREDUCE_COUNTS.iter().map(|(h, _)| *h).collect();
    nccl::head(
        &format!("ring all-reduce, {ranks} ranks, float sum, one QP per rank to the next"),
        &headers,
    )
}

/// One size's line under [`allreduce_head`], printed as the size finishes.
pub fn allreduce_row(row: &AllReduceRow) -> String {
    let values: Vec<u64> = ALLREDUCE_COUNTS
        .iter()
        .map(|(_, f)| f(&row.fabric))
        .collect();
    nccl::row(&row.result, &values)
}

/// The switch counters of the recorded run in `style`, each under its switch's name.
pub fn switch_tables(outcome: &Outcome, style: CounterStyle) -> String {
    let net = &outcome.net;
    let mut out = String::new();
    for (i, name) in net.switch_names.iter().enumerate() {
        let _ = writeln!(out, "\nswitch {name}:");
        out.push_str(&render(net.switch(i), style));
    }
    out
}

/// "What happened" in the recorded run, in plain words (see [`super::story`]).
pub fn what_happened(scenario: &Scenario, outcome: &Outcome) -> String {
    let net = &outcome.net;
    let now = net.engine.now();
    let fabric = super::story::Fabric {
        switches: net
            .switch_names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), net.switch(i)))
            .collect(),
        hosts: (0..net.hosts.len())
            .map(|h| {
                let ep = net.endpoint(h);
                super::story::HostView {
                    name: format!("h{h}"),
                    counters: ep.counters(),
                    paused: ep.paused_time(ep.data_priority(), now),
                    faults: ep.faults(),
                    credit_stalled: (0..crate::credit::DATA_VLS)
                        .filter_map(|v| ep.credit_stats(v, now))
                        .map(|c| c.credit_stalled)
                        .reduce(|a, b| a + b),
                }
            })
            .collect(),
        now,
        series: Some(&outcome.series),
        line_bps: scenario.topology.bits_per_sec,
    };
    let mut story = super::story::what_happened(&fabric);
    story.push_str(&victims(scenario, outcome));
    story
}

/// The victims of an incast, named with their max-min fair share: each bulk flow to a
/// host no other flow goes to, in a scenario where some host receives several.
fn victims(scenario: &Scenario, outcome: &Outcome) -> String {
    use crate::sim::compare::{Setting, measure};
    let m = measure(Setting::Roce, scenario, outcome);
    let mut out = String::new();
    for v in &m.victims {
        let Some(fair) = v.fair_gbps else { continue };
        let share = v.goodput_gbps / fair;
        let why = if share < 0.9 && m.summary.switch_pfc_sent > 0 {
            ": held back by pauses meant for the incast's senders (head-of-line blocking, congestion spreading)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  victim: h{} -> h{}, the only flow to h{}, got {:.1} Gb/s of goodput against its max-min fair share of {:.1} Gb/s ({:.0} %){why}.",
            v.from,
            v.to,
            v.to,
            v.goodput_gbps,
            fair,
            100.0 * share
        );
    }
    out
}

/// Everything as one JSON document.
pub fn json(scenario: &Scenario, outcome: &Outcome) -> serde_json::Value {
    let net = &outcome.net;
    let switches: Vec<serde_json::Value> = net
        .switch_names
        .iter()
        .enumerate()
        .map(|(i, name)| serde_json::json!({ "name": name, "ports": ports(net.switch(i)) }))
        .collect();
    let endpoints: Vec<serde_json::Value> = (0..net.hosts.len())
        .map(|h| serde_json::json!({ "host": h, "counters": net.endpoint(h).counters() }))
        .collect();
    super::document(
        "sim",
        serde_json::json!({
            "config": super::configs(Some(&scenario.switch), Some(&scenario.endpoint)),
            "switch_source": scenario.switch_source,
            "scenario": scenario.name,
            "scenario_digest": scenario.digest,
            "description": scenario.description,
            "seed": scenario.seed,
            "end_ns": net.engine.now().0,
            "measured_from_ns": outcome.measured_from.0,
            "qps": outcome.qps,
            "allreduce": outcome.allreduce,
            "workloads": scenario.workloads,
            "fct": {
                "buckets": crate::sim::fct::buckets(&outcome.flows),
                "flows": outcome.flows,
            },
            "switches": switches,
            "endpoints": endpoints,
            "frames_simulated": outcome.frames,
            "variant": scenario.variant,
            "faults": crate::sim::faults::describe(&scenario.faults, scenario.topology.bits_per_sec),
            "storms": storms(net),
            "summary": summary(scenario, outcome),
            "what_happened": what_happened(scenario, outcome).lines().skip(1).map(str::trim).collect::<Vec<_>>(),
        }),
    )
}

/// Every storm the switches' watchdogs detected, with its times.
fn storms(net: &crate::sim::topology::Network) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for (i, name) in net.switch_names.iter().enumerate() {
        let sw = net.switch(i);
        for s in sw.storms() {
            out.push(serde_json::json!({
                "switch": name,
                "port": sw.config().ports[s.port].name,
                "queue": s.queue,
                "detected_ns": s.detected.0,
                "restored_ns": s.restored.map(|t| t.0),
            }));
        }
    }
    out
}

/// One run of a scenario in a line: what a comparison of variants sets side by side.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    /// The variant's name (the scenario's, when it has none).
    pub variant: String,
    /// Payload goodput of all sending QPs over the measured span, Gb/s.
    pub goodput_gbps: f64,
    /// Jain's fairness index of those QPs' goodputs (`None` when none moved data).
    pub jain: Option<f64>,
    /// The largest all-reduce size's bus bandwidth, GB/s (`None` without an all-reduce, or
    /// when it did not finish).
    pub busbw_gbytes_per_s: Option<f64>,
    /// The deepest egress queue of any switch, bytes.
    pub max_queue_bytes: u64,
    /// PFC frames the switches sent (XON included).
    pub switch_pfc_sent: u64,
    /// PFC frames the hosts' NICs sent (slow receivers, pause storms).
    pub host_pfc_sent: u64,
    /// Frames the switches marked CE.
    pub ce_marked: u64,
    /// CNPs the endpoints sent.
    pub cnps_sent: u64,
    /// Data packets sent again.
    pub retransmitted: u64,
    /// Frames the switches dropped in lossless classes.
    pub lossless_drops: u64,
    /// Frames the switches dropped in lossy classes.
    pub lossy_drops: u64,
    /// Frames the hosts' full receive buffers dropped.
    pub host_drops: u64,
    /// Storms the PFC watchdogs detected.
    pub storms_detected: u64,
    /// Payload every endpoint accepted over the whole recorded run (flows, workloads and
    /// all-reduce; retransmitted duplicates do not count), Gb/s.
    pub delivered_gbps: f64,
    /// Time the hosts' data priority was paused by PFC, summed over the hosts, ns.
    pub host_paused_ns: u64,
    /// Time the switches' egress queues were paused by PFC, summed over ports and
    /// queues, ns.
    pub switch_paused_ns: u64,
    /// On InfiniBand: time the hosts had a packet waiting for credit, summed over hosts
    /// and VLs, ns (0 on RoCE).
    pub host_credit_stalled_ns: u64,
    /// On InfiniBand: time the switches' egress queues had a packet waiting for credit,
    /// summed over ports and VLs, ns (0 on RoCE).
    pub switch_credit_stalled_ns: u64,
    /// The most buffer any switch ingress port held for one lossless class (RoCE: the
    /// PG's shared and headroom peaks added) or one VL (InfiniBand: its credit buffer),
    /// bytes: what the fabric needed to stay lossless, per port.
    pub ingress_peak_bytes: u64,
    /// The workload flows' FCT slowdown at p99 (all sizes), if any finished.
    pub fct_p99_slowdown: Option<f64>,
}

/// What the recorded run of `scenario` comes to, in one [`Summary`].
pub fn summary(scenario: &Scenario, outcome: &Outcome) -> Summary {
    let net = &outcome.net;
    let mut s = Summary {
        variant: scenario
            .variant
            .clone()
            .unwrap_or_else(|| scenario.name.clone()),
        // A fold from +0: an empty f64 sum is -0, which prints as "-0.000".
        goodput_gbps: outcome.qps.iter().map(|q| q.gbps).fold(0.0, |a, b| a + b),
        jain: jain(&outcome.qps.iter().map(|q| q.gbps).collect::<Vec<_>>()),
        busbw_gbytes_per_s: outcome
            .allreduce
            .last()
            .filter(|r| r.result.time_ns.is_some())
            .map(|r| r.result.busbw()),
        max_queue_bytes: 0,
        switch_pfc_sent: 0,
        host_pfc_sent: 0,
        ce_marked: 0,
        cnps_sent: 0,
        retransmitted: 0,
        lossless_drops: 0,
        lossy_drops: 0,
        host_drops: 0,
        storms_detected: 0,
        delivered_gbps: 0.0,
        host_paused_ns: 0,
        switch_paused_ns: 0,
        host_credit_stalled_ns: 0,
        switch_credit_stalled_ns: 0,
        ingress_peak_bytes: 0,
        fct_p99_slowdown: crate::sim::fct::buckets(&outcome.flows)
            .pop()
            .and_then(|all| all.p99),
    };
    let now = net.engine.now();
    let mut delivered = 0u64;
    for h in 0..net.hosts.len() {
        let ep = net.endpoint(h);
        let c = ep.counters();
        delivered += c.data_bytes_received;
        s.host_paused_ns += ep.paused_time(ep.data_priority(), now).0;
        for vl in 0..crate::credit::DATA_VLS {
            if let Some(c) = ep.credit_stats(vl, now) {
                s.host_credit_stalled_ns += c.credit_stalled.0;
            }
        }
        s.host_pfc_sent += c.pfc_sent;
        s.cnps_sent += c.cnps_sent;
        s.retransmitted += c.retransmitted_packets;
        s.host_drops += c.rx_buffer_drops;
    }
    for i in 0..net.switches.len() {
        let sw = net.switch(i);
        let lossless = sw.config().lossless;
        let lossless_queues = sw.config().lossless_queues();
        for p in 0..sw.port_count() {
            for (k, c) in sw.counters(p).classes.iter().enumerate() {
                s.switch_paused_ns += sw.paused_time(p, k, now).0;
                match sw.credit_stats(p, k, now) {
                    Some(credit) => {
                        s.switch_credit_stalled_ns += credit.credit_stalled.0;
                        s.ingress_peak_bytes =
                            s.ingress_peak_bytes.max(credit.buffer_watermark_bytes);
                    }
                    None if lossless.contains(k as u8) => {
                        s.ingress_peak_bytes = s
                            .ingress_peak_bytes
                            .max(c.pg_shared_watermark_bytes + c.pg_headroom_watermark_bytes);
                    }
                    None => {}
                }
                s.max_queue_bytes = s.max_queue_bytes.max(c.queue_watermark_bytes);
                s.switch_pfc_sent += c.tx_pause_frames;
                s.ce_marked += c.ecn_marked;
                s.storms_detected += c.storms_detected;
                // Ingress overflow under the class, the other drops under the queue.
                if lossless.contains(k as u8) {
                    s.lossless_drops += c.dropped_ingress_overflow;
                } else {
                    s.lossy_drops += c.dropped_ingress_overflow;
                }
                if lossless_queues & (1 << k) != 0 {
                    s.lossless_drops += c.dropped_at_queue();
                } else {
                    s.lossy_drops += c.dropped_at_queue();
                }
            }
        }
    }
    s.delivered_gbps = delivered as f64 * 8.0 / now.0.max(1) as f64;
    s
}

/// Jain's fairness index of `rates` (1 when they are equal); `None` when nothing moved
/// (it is 0/0 then, not 1).
fn jain(rates: &[f64]) -> Option<f64> {
    let sum: f64 = rates.iter().sum();
    let sq: f64 = rates.iter().map(|r| r * r).sum();
    (sq > 0.0).then(|| sum * sum / (rates.len() as f64 * sq))
}

/// A fairness index for a table: three decimals, or "-" where it is undefined.
pub fn jain_text(j: Option<f64>) -> String {
    j.map_or_else(|| "-".to_owned(), |j| format!("{j:.3}"))
}

/// The variants side by side, one row each.
pub fn compare_table(rows: &[Summary]) -> String {
    let width = rows
        .iter()
        .map(|r| r.variant.len())
        .max()
        .unwrap_or(7)
        .max(7);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<width$} {:>12} {:>6} {:>11} {:>13} {:>10} {:>12} {:>10} {:>10} {:>8} {:>15} {:>12} {:>11} {:>7}",
        "variant",
        "goodput Gb/s",
        "Jain",
        "busbw GB/s",
        "max queue KB",
        "PFC by sw",
        "PFC by hosts",
        "CE marked",
        "CNPs sent",
        "retrans",
        "lossless drops",
        "lossy drops",
        "host drops",
        "storms"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<width$} {:>12.3} {:>6} {:>11} {:>13.1} {:>10} {:>12} {:>10} {:>10} {:>8} {:>15} {:>12} {:>11} {:>7}",
            r.variant,
            r.goodput_gbps,
            jain_text(r.jain),
            r.busbw_gbytes_per_s
                .map_or_else(|| "-".to_owned(), |b| format!("{b:.3}")),
            r.max_queue_bytes as f64 / 1000.0,
            r.switch_pfc_sent,
            r.host_pfc_sent,
            r.ce_marked,
            r.cnps_sent,
            r.retransmitted,
            r.lossless_drops,
            r.lossy_drops,
            r.host_drops,
            r.storms_detected
        );
    }
    out
}

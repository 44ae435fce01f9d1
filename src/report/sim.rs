//! What `rocelab sim` prints and writes: the per-QP DCQCN table, the nccl-tests-like
//! all-reduce table, the switches' counter tables, and all of it as JSON.

use super::counters::{CounterStyle, render};
use super::nccl;
use super::ports;
use crate::sim::run::{AllReduceRow, FabricCounts, Outcome, QpRow};
use crate::sim::scenario::{Scenario, Shape};
use crate::sim::summary::{Summary, jain, summary};
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
        Shape::FatTree(f) => format!(
            "fat tree of {} pods, each {} ToRs x {} aggregation switches, {} cores; {} hosts per ToR",
            f.pods, f.tors_per_pod, f.aggs_per_pod, f.cores, f.hosts_per_tor
        ),
    };
    let links = if t.fabric_bits_per_sec == t.bits_per_sec {
        format!("links {} Gb/s", gbps(t.bits_per_sec))
    } else {
        format!(
            "host links {} Gb/s, between switches {} Gb/s",
            gbps(t.bits_per_sec),
            gbps(t.fabric_bits_per_sec)
        )
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
        "\n{shape}; {links}, {} delay{}; {}; seed {}\n",
        t.delay.human(),
        if t.loss > 0.0 {
            format!(", loss {}", t.loss)
        } else {
            String::new()
        },
        match &s.fabric {
            crate::sim::fabric::Fabric::Iwarp(iw) => format!(
                "interface MTU {}; TCP {}",
                iw.nic.interface_mtu,
                iw.nic.cc.name()
            ),
            _ => format!(
                "path MTU {}; {} {}",
                s.endpoint.mtu,
                s.endpoint.cc.name().to_uppercase(),
                if s.endpoint.dcqcn.enabled {
                    "on"
                } else {
                    "off"
                }
            ),
        },
        s.seed
    );
    if let crate::sim::fabric::Fabric::Ib(_) | crate::sim::fabric::Fabric::Iwarp(_) = s.fabric {
        let _ = writeln!(out, "fabric: {}", s.fabric.describe());
    } else if s.topology.switch_latency > crate::time::Nanos::ZERO {
        let _ = writeln!(
            out,
            "switches store and forward with {} of latency",
            s.topology.switch_latency.human()
        );
    }
    if let Some(lb) = s.describe_load_balancing() {
        let _ = writeln!(
            out,
            "load balancing: {lb}; transport {}",
            match s.endpoint.transport {
                crate::config::endpoint::Transport::GoBackN => "go-back-n",
                crate::config::endpoint::Transport::SelectiveRepeat => "selective-repeat",
            }
        );
    }
    let _ = writeln!(out, "switch: {}", s.switch_source);
    for line in crate::sim::faults::describe(&s.faults, t.bits_per_sec)
        .into_iter()
        .chain(crate::sim::faults::describe_links(&s.link_faults))
    {
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
                    failures: ep.qp_failures().to_vec(),
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
        .map(|h| {
            let ep = net.endpoint(h);
            serde_json::json!({
                "host": h,
                "counters": ep.counters(),
                "qp_errors": ep.qp_failures(),
            })
        })
        .collect();
    let mut doc = super::document(
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
            "faults": crate::sim::faults::describe(&scenario.faults, scenario.topology.bits_per_sec)
                .into_iter()
                .chain(crate::sim::faults::describe_links(&scenario.link_faults))
                .collect::<Vec<_>>(),
            "storms": storms(net),
            "summary": summary(scenario, outcome),
            "what_happened": what_happened(scenario, outcome).lines().skip(1).map(str::trim).collect::<Vec<_>>(),
        }),
    );
    // Only where the scenario names a mode: reports of scenarios from before there was a
    // choice stay as they were.
    if let (Some(b), Some(map)) = (
        crate::sim::balance::report(scenario, outcome),
        doc.as_object_mut(),
    ) {
        map.insert(
            "load_balancing".to_owned(),
            serde_json::to_value(b).unwrap_or_default(),
        );
    }
    doc
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

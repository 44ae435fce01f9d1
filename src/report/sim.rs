//! What `rocelab sim` prints and writes: the per-QP DCQCN table, the nccl-tests-like
//! all-reduce table, the switches' counter tables, and all of it as JSON.

use super::nccl::{self, ExtraColumn};
use super::{counter_table, ports};
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
    };
    let mut out = format!("scenario {}", s.name);
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
        "  {:>4} {:>4} {:>7} {:>7} {:>8} {:>8} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>12}",
        "host",
        "peer",
        "QPN",
        "sport",
        "Gb/s",
        "Rc Gb/s",
        "Rt Gb/s",
        "alpha",
        "CNPs rx",
        "CE",
        "retrans",
        "timeouts",
        "completion"
    );
    for r in rows {
        let s = &r.status;
        let _ = writeln!(
            out,
            "  {:>4} {:>4} {:>7} {:>7} {:>8.3} {:>8.3} {:>8.3} {:>7.4} {:>8} {:>8} {:>8} {:>8} {:>12}",
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
        let sum: f64 = rates.iter().sum();
        let sq: f64 = rates.iter().map(|r| r * r).sum();
        let _ = writeln!(
            out,
            "  total {sum:.3} Gb/s; Jain fairness {:.3}",
            if sq > 0.0 {
                sum * sum / (rates.len() as f64 * sq)
            } else {
                1.0
            }
        );
    }
    out
}

/// The all-reduce sweep as nccl-tests prints it (`all_reduce_perf -b -e -f`), with the
/// fabric's counts beside each size.
pub fn allreduce_table(rows: &[AllReduceRow], ranks: usize) -> String {
    let column = |header, f: fn(&FabricCounts) -> u64| ExtraColumn {
        header,
        values: rows.iter().map(|r| f(&r.fabric)).collect(),
    };
    let extra = [
        column("CNPs tx", |f| f.cnps_sent),
        column("CNPs rx", |f| f.cnps_received),
        column("pauses", |f| f.pauses_received),
        column("retrans", |f| f.retransmitted),
        column("PFC tx", |f| f.pfc_sent),
        column("CE mark", |f| f.ecn_marked),
        column("drops", |f| f.dropped),
    ];
    let results: Vec<_> = rows.iter().map(|r| r.result).collect();
    nccl::allreduce_table(
        &format!("ring all-reduce, {ranks} ranks, float sum, one QP per rank to the next"),
        &results,
        &extra,
    )
}

/// The switch counter tables of the recorded run, each under its switch's name.
pub fn switch_tables(outcome: &Outcome) -> String {
    let net = &outcome.net;
    let mut out = String::new();
    for (i, name) in net.switch_names.iter().enumerate() {
        let _ = write!(out, "\nswitch {name}:");
        out.push_str(&counter_table(net.switch(i)));
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
    serde_json::json!({
        "scenario": scenario.name,
        "description": scenario.description,
        "seed": scenario.seed,
        "end_ns": net.engine.now().0,
        "measured_from_ns": outcome.measured_from.0,
        "qps": outcome.qps,
        "allreduce": outcome.allreduce,
        "switches": switches,
        "endpoints": endpoints,
        "frames_simulated": outcome.frames,
    })
}

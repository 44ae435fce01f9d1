//! Counters for people and programs: the switch's counter table as switches print it, and
//! the same counters as JSON.

pub mod bundle;
pub mod lab;
pub mod nccl;
pub mod plot;
pub mod sim;
pub mod story;

use crate::config::{CLASSES, SwitchConfig};
use crate::switch::{ClassCounters, Switch};
use serde::Serialize;
use std::fmt::Write as _;

/// Sojourn percentiles of a queue, ns.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sojourn {
    /// Median time a frame spent queued, ns.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Longest time a frame spent queued, ns.
    pub max_ns: u64,
}

/// One class / queue of a port, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct ClassReport {
    /// Class (= priority = queue with the default map).
    pub class: usize,
    /// Lossless (PFC) or not.
    pub lossless: bool,
    /// The class's switch counters, flattened into this object in JSON.
    #[serde(flatten)]
    pub counters: ClassCounters,
    /// Queue sojourn percentiles.
    pub sojourn: Option<Sojourn>,
}

/// One port, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct PortReport {
    /// Interface name, as configured.
    pub name: String,
    /// Line rate, Gb/s.
    pub speed_gbps: f64,
    /// Classes with any activity.
    pub classes: Vec<ClassReport>,
    /// 802.3x PAUSE frames received.
    pub rx_link_pause_frames: u64,
    /// Link-local frames consumed.
    pub rx_link_local_frames: u64,
    /// Frames that did not parse.
    pub rx_malformed_frames: u64,
    /// Frames filtered (destination behind the ingress port).
    pub filtered_frames: u64,
    /// Frames received larger than the port's MTU allows, dropped.
    pub rx_oversize_frames: u64,
}

fn active(c: &ClassCounters) -> bool {
    c.rx_frames + c.tx_frames + c.rx_pause_frames + c.tx_pause_frames + c.dropped() > 0
}

/// The counters of every port, classes with activity only.
pub fn ports(switch: &Switch) -> Vec<PortReport> {
    let cfg: &SwitchConfig = switch.config();
    (0..switch.port_count())
        .map(|p| {
            let c = switch.counters(p);
            PortReport {
                name: c.name.clone(),
                speed_gbps: cfg.ports[p].bits_per_sec as f64 / 1e9,
                classes: (0..CLASSES)
                    .filter(|&q| active(&c.classes[q]))
                    .map(|q| ClassReport {
                        class: q,
                        lossless: cfg.lossless.contains(q as u8),
                        counters: c.classes[q].clone(),
                        sojourn: c
                            .sojourn_summary(q)
                            .map(|(p50_ns, p99_ns, max_ns)| Sojourn {
                                p50_ns,
                                p99_ns,
                                max_ns,
                            }),
                    })
                    .collect(),
                rx_link_pause_frames: c.rx_link_pause_frames,
                rx_link_local_frames: c.rx_link_local_frames,
                rx_malformed_frames: c.rx_malformed_frames,
                filtered_frames: c.filtered_frames,
                rx_oversize_frames: c.rx_oversize_frames,
            }
        })
        .collect()
}

fn micros(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// The counter table: per port and class, traffic, PFC, ECN, drops by cause, watermarks,
/// watchdog and sojourn, as `show queuing interface` and `show pfc counters` print them.
pub fn counter_table(switch: &Switch) -> String {
    let mut out = String::new();
    for port in ports(switch) {
        // Port-wide counts, when there are any: nothing the class rows show.
        let notes: String = [
            (port.rx_link_pause_frames, "802.3x PAUSE received"),
            (
                port.filtered_frames,
                "filtered (destination behind the ingress port)",
            ),
            (port.rx_oversize_frames, "dropped over the MTU (giants)"),
            (
                port.classes.iter().map(|c| c.counters.dropped_mtu).sum(),
                "dropped over the MTU on the way out",
            ),
            (port.rx_malformed_frames, "malformed (forwarded as class 0)"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!(", {n} {what}"))
        .collect();
        let _ = writeln!(
            out,
            "\nPort {} ({} Gb/s){notes}",
            port.name, port.speed_gbps
        );
        if port.classes.is_empty() {
            let _ = writeln!(out, "  (no traffic)");
            continue;
        }
        let _ = writeln!(
            out,
            "  {:<5} {:>9} {:>11} {:>9} {:>11} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>7} {:>9} {:>9} {:>9} {:>5}  sojourn p50/p99/max µs",
            "class",
            "rx pkts",
            "rx bytes",
            "tx pkts",
            "tx bytes",
            "RxPFC",
            "TxPFC",
            "ECN",
            "drop ovf",
            "drop wred",
            "tail",
            "wd",
            "queue wm",
            "PG shr wm",
            "PG hdr wm",
            "storm",
        );
        for c in &port.classes {
            let k = &c.counters;
            let sojourn = c.sojourn.map_or_else(
                || "-".to_owned(),
                |s| {
                    format!(
                        "{}/{}/{}",
                        micros(s.p50_ns),
                        micros(s.p99_ns),
                        micros(s.max_ns)
                    )
                },
            );
            let _ = writeln!(
                out,
                "  {:<5} {:>9} {:>11} {:>9} {:>11} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>7} {:>9} {:>9} {:>9} {:>5}  {}",
                format!("{}{}", c.class, if c.lossless { "*" } else { "" }),
                k.rx_frames,
                k.rx_bytes,
                k.tx_frames,
                k.tx_bytes,
                k.rx_pause_frames,
                k.tx_pause_frames,
                k.ecn_marked,
                k.dropped_ingress_overflow,
                k.dropped_wred,
                k.dropped_tail,
                k.dropped_watchdog,
                k.queue_watermark_bytes,
                k.pg_shared_watermark_bytes,
                k.pg_headroom_watermark_bytes,
                format!("{}/{}", k.storms_detected, k.storms_restored),
                sojourn
            );
        }
    }
    out.push_str(
        "\n* lossless (PFC) class. Rx, PFC-received and PG columns count the class as it came in on the port; Tx, ECN, WRED, tail, watchdog, queue and sojourn columns the port's egress queue.\n",
    );
    out
}

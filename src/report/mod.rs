//! Counters for people and programs: the switch's counter table as switches print it, and
//! the same counters as JSON.

pub mod bundle;
pub mod compare;
pub mod counters;
pub mod lab;
pub mod nccl;
pub mod plot;
pub mod sim;
pub mod story;

use crate::config::{CLASSES, SwitchConfig};
use crate::switch::{ClassCounters, Switch};
use serde::Serialize;

/// `n` of `what`, in the plural unless one: "1 PFC frame", "2 PFC frames".
pub fn count(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// A report document: `value` (a JSON object) with `"schema": "rocelab.<kind>/1"` added,
/// so a reader can tell what it holds and which version of its keys (docs/json.md).
pub fn document(kind: &str, mut value: serde_json::Value) -> serde_json::Value {
    if let Some(map) = value.as_object_mut() {
        map.insert(
            "schema".to_owned(),
            serde_json::Value::String(format!("rocelab.{kind}/1")),
        );
    }
    value
}

/// The resolved configurations a run used, as every report carries them.
pub fn configs(
    switch: Option<&SwitchConfig>,
    endpoint: Option<&crate::config::endpoint::EndpointConfig>,
) -> serde_json::Value {
    serde_json::json!({ "switch": switch, "endpoint": endpoint })
}

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
    /// The class is a lossless (PFC) priority: what its ingress-side counters count is
    /// lossless traffic.
    pub lossless: bool,
    /// The egress queue of this number carries a lossless class (`tc_to_queue`): what its
    /// egress-side counters count is lossless traffic. The same as `lossless` with a
    /// one-to-one map.
    pub lossless_queue: bool,
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
    let lossless_queues = cfg.lossless_queues();
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
                        lossless_queue: lossless_queues & (1 << q) != 0,
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

pub(crate) fn micros(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

//! What one run of a scenario comes to, in one line of numbers: goodput and fairness,
//! the all-reduce's bus bandwidth, the deepest queue, PFC, ECN and drop counts, time
//! paused or stalled for credit. `sim` prints a row per variant and `compare` a column per
//! fabric; computed here, rendered by `report`.

use super::run::Outcome;
use super::scenario::Scenario;

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
        fct_p99_slowdown: super::fct::buckets(&outcome.flows)
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
pub fn jain(rates: &[f64]) -> Option<f64> {
    let sum: f64 = rates.iter().sum();
    let sq: f64 = rates.iter().map(|r| r * r).sum();
    (sq > 0.0).then(|| sum * sum / (rates.len() as f64 * sq))
}

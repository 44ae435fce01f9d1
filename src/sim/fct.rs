//! Flow completion times of a scenario's workload flows: each flow's FCT (from its
//! arrival to the acknowledgement of its last byte), its ideal FCT (the same flow alone
//! on an empty network), their ratio, the *slowdown*, and its percentiles per flow-size
//! bucket, as the RDMA congestion-control papers (DCQCN, TIMELY, HPCC) report them.
//!
//! The ideal FCT is computed from the path, not measured: every packet of the flow (its
//! WRITE messages cut at the path MTU, the first of each message carrying a RETH, every
//! frame with Ethernet, IPv4, UDP, BTH and ICRC headers, FCS, preamble and inter-frame
//! gap) leaves the sender back to back at the line rate and is stored and forwarded at
//! the line rate by each switch on the path, each link adding its propagation delay; the
//! sender completes when the ACK of the last packet (BTH + AETH) comes back the same way.
//! On InfiniBand the same packets go behind an LRH, with a VCRC and delimiters and no gap
//! ([`Framing::InfiniBand`]).

use crate::link::{Framing, wire_bits};
use crate::time::Nanos;
use serde::Serialize;

/// Header bytes of a RoCEv2 data frame without RETH: Ethernet 14, IPv4 20, UDP 8, BTH 12
/// and the ICRC 4 (the FCS, preamble and gap are [`wire_bits`]'s).
pub const DATA_HEADER_BYTES: usize = 14 + 20 + 8 + 12 + 4;
/// The RETH on the first packet of each WRITE message.
pub const RETH_BYTES: usize = 16;
/// An ACK frame: Ethernet, IPv4, UDP, BTH, AETH and ICRC.
pub const ACK_FRAME_BYTES: usize = 14 + 20 + 8 + 12 + 4 + 4;
/// The inter-frame gap, bytes: on the wire after a frame, not part of its arrival.
const IFG_BYTES: u64 = 12;

/// The path a flow takes, for its ideal FCT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Path {
    /// Links from sender to receiver (2 through one switch).
    pub hops: usize,
    /// Every link's rate, bit/s.
    pub bits_per_sec: u64,
    /// Every link's propagation delay.
    pub delay: Nanos,
    /// Payload bytes per packet.
    pub mtu: usize,
    /// Bytes per WRITE message (the last one of the flow shorter).
    pub message_bytes: usize,
    /// How the links put frames on the wire.
    pub framing: Framing,
    /// Each switch's forwarding latency.
    pub switch_latency: Nanos,
    /// For cut-through switches, the header bits after which they forward; `None` for
    /// store-and-forward.
    pub cut_through_bits: Option<u64>,
}

/// Bits a RoCEv2 frame of `len` bytes occupies on the wire, and the bits up to its last
/// one (the wire bits less the gap that follows it).
fn frame_bits(framing: Framing, len: usize) -> (f64, f64) {
    match framing {
        Framing::Ethernet => {
            let bits = wire_bits(len) as f64;
            (bits, bits - (IFG_BYTES * 8) as f64)
        }
        Framing::InfiniBand => {
            let bits = ((crate::link::ib_packet_bytes_ipv4(len) + crate::link::IB_DELIMITER_BYTES)
                * 8) as f64;
            (bits, bits)
        }
    }
}

impl Path {
    /// Time from the first bit sent to the ACK of the last packet back at the sender, for
    /// `bytes` alone on the path.
    pub fn ideal_fct(&self, bytes: u64) -> Nanos {
        let ns_per_bit = 1e9 / self.bits_per_sec.max(1) as f64;
        let hops = self.hops.max(1);
        // Per hop: when its transmitter is free, and when the current packet arrives
        // whole at the next node.
        let mut free = vec![0.0f64; hops];
        let mut last_arrival = 0.0;
        let mut send_at = 0.0f64;
        let message = self.message_bytes.max(1) as u64;
        let mtu = self.mtu.max(1) as u64;
        let mut left = bytes.max(1);
        while left > 0 {
            let m = left.min(message);
            left -= m;
            let mut in_message = m;
            let mut first = true;
            while in_message > 0 {
                let payload = in_message.min(mtu);
                in_message -= payload;
                let len = DATA_HEADER_BYTES + if first { RETH_BYTES } else { 0 } + payload as usize;
                first = false;
                let (bits, frame) = frame_bits(self.framing, len);
                // The sender paces packets back to back at the line rate.
                let mut at = send_at;
                send_at += bits * ns_per_bit;
                for (k, f) in free.iter_mut().enumerate() {
                    let start = at.max(*f);
                    *f = start + bits * ns_per_bit;
                    at = start + self.hop(k + 1 == hops, frame) * ns_per_bit;
                }
                last_arrival = at;
            }
        }
        let ack = frame_bits(self.framing, ACK_FRAME_BYTES).1;
        let back = (hops - 1) as f64 * self.hop(false, ack) + self.hop(true, ack);
        Nanos((last_arrival + back * ns_per_bit).round() as u64)
    }

    /// From a frame's first bit leaving a node to when the next node may send it on (a
    /// switch) or has it (the last node), in bit times: its `frame_bits` (or a
    /// cut-through switch's header), the cable, and a switch's latency.
    fn hop(&self, last: bool, frame_bits: f64) -> f64 {
        let bits_per_ns = self.bits_per_sec.max(1) as f64 / 1e9;
        let lead = match self.cut_through_bits {
            Some(h) if !last => (h as f64).min(frame_bits),
            _ => frame_bits,
        };
        let latency = if last {
            0.0
        } else {
            self.switch_latency.0 as f64
        };
        lead + (self.delay.0 as f64 + latency) * bits_per_ns
    }
}

/// The share of a link's rate that a stream of WRITE messages of `message_bytes`, cut
/// at `mtu`, carries as payload on `framing` (the first packet of each message with a
/// RETH; ACKs go the other way).
pub fn payload_share(framing: Framing, message_bytes: usize, mtu: usize) -> f64 {
    let (message, mtu) = (message_bytes.max(1), mtu.max(1));
    let mut wire = 0.0;
    let mut left = message;
    let mut first = true;
    while left > 0 {
        let payload = left.min(mtu);
        left -= payload;
        let len = DATA_HEADER_BYTES + if first { RETH_BYTES } else { 0 } + payload;
        first = false;
        wire += frame_bits(framing, len).0;
    }
    message as f64 * 8.0 / wire
}

/// A size in decimal units as flow-size tables give them: 500 B, 10 KB, 1.7 MB, 1 GB.
pub fn decimal_bytes(bytes: f64) -> String {
    let (value, unit) = match bytes {
        b if b >= 1e9 => (b / 1e9, "GB"),
        b if b >= 1e6 => (b / 1e6, "MB"),
        b if b >= 1e3 => (b / 1e3, "KB"),
        b => return format!("{b:.0} B"),
    };
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

/// One workload flow's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct FlowFct {
    /// Its number (the order of arrival in the scenario).
    pub id: usize,
    /// Which `[[workload]]` made it.
    pub workload: usize,
    /// Sending host.
    pub from: usize,
    /// Receiving host.
    pub to: usize,
    /// Payload bytes.
    pub bytes: u64,
    /// When it arrived, ns.
    #[serde(rename = "arrival_ns")]
    pub arrival: Nanos,
    /// When it got a QP and started sending, ns (later than the arrival when all QPs to
    /// its peer were busy); `None` if it never did.
    #[serde(rename = "start_ns")]
    pub started: Option<Nanos>,
    /// When its last byte was acknowledged, ns; `None` if the run ended first.
    #[serde(rename = "end_ns")]
    pub finished: Option<Nanos>,
    /// Its ideal FCT on its path, ns.
    #[serde(rename = "ideal_fct_ns")]
    pub ideal: Nanos,
}

impl FlowFct {
    /// Its completion time: from arrival to the last acknowledgement.
    pub fn fct(&self) -> Option<Nanos> {
        Some(self.finished?.saturating_sub(self.arrival))
    }

    /// FCT over ideal FCT (1 is as fast as the path allows).
    pub fn slowdown(&self) -> Option<f64> {
        Some(self.fct()?.0 as f64 / self.ideal.0.max(1) as f64)
    }
}

/// Flow-size buckets of the FCT table: (label, smallest size, largest size), bytes.
pub const BUCKETS: [(&str, u64, u64); 5] = [
    ("< 10 KB", 0, 9_999),
    ("10-100 KB", 10_000, 99_999),
    ("100 KB-1 MB", 100_000, 999_999),
    ("1-10 MB", 1_000_000, 9_999_999),
    (">= 10 MB", 10_000_000, u64::MAX),
];

/// The slowdown of the flows of one size bucket.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bucket {
    /// Its sizes, in words ("10-100 KB", or "all").
    pub label: String,
    /// The bucket's bounds, not its flows' sizes: the smallest size it takes, bytes.
    pub min_bytes: u64,
    /// The largest size it takes, bytes; `None` for the open bucket (`>= 10 MB`) and
    /// `all` (no bound: u64::MAX was written, which JSON readers with doubles round).
    pub max_bytes: Option<u64>,
    /// Flows that arrived.
    pub flows: usize,
    /// Of those, flows that finished (the percentiles are over these).
    pub finished: usize,
    /// Slowdown percentiles (nearest rank) and the largest; `None` when none finished.
    pub p50: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// 99.9th percentile.
    pub p999: Option<f64>,
    /// The largest.
    pub max: Option<f64>,
    /// Mean FCT of the finished flows, ns.
    pub mean_fct_ns: Option<u64>,
}

/// The `q` quantile of sorted `v` by nearest rank.
pub fn nearest_rank(v: &[f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

fn bucket(label: &str, min: u64, max: u64, flows: &[&FlowFct]) -> Bucket {
    let mut slow: Vec<f64> = flows.iter().filter_map(|f| f.slowdown()).collect();
    slow.sort_by(f64::total_cmp);
    let fcts: Vec<u64> = flows.iter().filter_map(|f| f.fct()).map(|t| t.0).collect();
    Bucket {
        label: label.to_owned(),
        min_bytes: min,
        max_bytes: (max != u64::MAX).then_some(max),
        flows: flows.len(),
        finished: slow.len(),
        p50: nearest_rank(&slow, 0.50),
        p95: nearest_rank(&slow, 0.95),
        p99: nearest_rank(&slow, 0.99),
        p999: nearest_rank(&slow, 0.999),
        max: slow.last().copied(),
        mean_fct_ns: (!fcts.is_empty()).then(|| fcts.iter().sum::<u64>() / fcts.len() as u64),
    }
}

/// The table: a row per size bucket that has flows, then one over all flows.
pub fn buckets(flows: &[FlowFct]) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = BUCKETS
        .iter()
        .filter_map(|&(label, min, max)| {
            let mine: Vec<&FlowFct> = flows
                .iter()
                .filter(|f| (min..=max).contains(&f.bytes))
                .collect();
            (!mine.is_empty()).then(|| bucket(label, min, max, &mine))
        })
        .collect();
    if !flows.is_empty() {
        out.push(bucket(
            "all",
            0,
            u64::MAX,
            &flows.iter().collect::<Vec<_>>(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_packet_through_one_switch_by_hand() {
        // 100 B at 100 Gb/s, 1 µs links, one switch.
        let p = Path {
            hops: 2,
            bits_per_sec: 100_000_000_000,
            delay: Nanos(1000),
            mtu: 1024,
            message_bytes: 16384,
            framing: Framing::Ethernet,
            switch_latency: Nanos::ZERO,
            cut_through_bits: None,
        };
        // The frame without FCS: 58 + 16 + 100 = 174 B; with FCS and preamble 186 B to
        // its last bit (14.88 ns at 100 G), stored and forwarded: 2 × (14.88 + 1000). The
        // ACK, 62 B, 74 B to its last bit: 2 × (5.92 + 1000).
        let data: f64 = 2.0 * (186.0 * 8.0 / 100.0 + 1000.0);
        let ack = 2.0 * (74.0 * 8.0 / 100.0 + 1000.0);
        assert_eq!(p.ideal_fct(100), Nanos((data + ack).round() as u64));
    }

    #[test]
    fn a_long_flow_is_its_bytes_on_the_wire_at_line_rate_plus_the_path() {
        let p = Path {
            hops: 4,
            bits_per_sec: 100_000_000_000,
            delay: Nanos(1000),
            mtu: 1000,
            message_bytes: 1000,
            framing: Framing::Ethernet,
            switch_latency: Nanos::ZERO,
            cut_through_bits: None,
        };
        // 1000 messages of one 1000-byte packet: each 58 + 16 + 1000 = 1074 B + 24 on the
        // wire; back to back, plus three more store-and-forwards of the last, four delays
        // and the ACK.
        let n = 1000.0;
        let wire = 1098.0 * 8.0 / 100.0;
        let frame = 1086.0 * 8.0 / 100.0;
        let ack = 74.0 * 8.0 / 100.0 + 1000.0;
        let expected = (n - 1.0) * wire + 4.0 * (frame + 1000.0) + 4.0 * ack;
        let got = p.ideal_fct(1_000_000).0 as f64;
        assert!((got - expected).abs() <= 1.0, "{got} vs {expected}");
    }

    #[test]
    fn sizes_read_in_decimal_units() {
        let read: Vec<String> = [500.0, 10_000.0, 1_711_750.0, 1e9, 2.5e10]
            .into_iter()
            .map(decimal_bytes)
            .collect();
        assert_eq!(read, ["500 B", "10 KB", "1.71 MB", "1 GB", "25 GB"]);
    }

    #[test]
    fn buckets_take_percentiles_of_finished_flows() {
        let flow = |bytes, fct: Option<u64>| FlowFct {
            id: 0,
            workload: 0,
            from: 0,
            to: 1,
            bytes,
            arrival: Nanos(100),
            started: Some(Nanos(100)),
            finished: fct.map(|t| Nanos(100 + t)),
            ideal: Nanos(1000),
        };
        let flows: Vec<FlowFct> = (1..=100)
            .map(|k| flow(5000, Some(1000 * k)))
            .chain([flow(20_000, None)])
            .collect();
        let b = buckets(&flows);
        assert_eq!(b.len(), 3, "< 10 KB, 10-100 KB, all");
        assert_eq!((b[0].flows, b[0].finished), (100, 100));
        assert_eq!(
            (b[0].p50, b[0].p99, b[0].max),
            (Some(50.0), Some(99.0), Some(100.0))
        );
        assert_eq!((b[1].flows, b[1].finished, b[1].p50), (1, 0, None));
        assert_eq!(
            (b[2].label.as_str(), b[2].flows, b[2].finished),
            ("all", 101, 100)
        );
    }

    /// A bucket's sizes are its bounds; the open bucket's upper bound was written as
    /// 18446744073709551615, which jq reads as 18446744073709552000.
    #[test]
    fn open_buckets_have_no_upper_bound_in_json() {
        let flow = |bytes| FlowFct {
            id: 0,
            workload: 0,
            from: 0,
            to: 1,
            bytes,
            arrival: Nanos(0),
            started: None,
            finished: None,
            ideal: Nanos(1000),
        };
        let b = buckets(&[flow(5000), flow(20_000_000)]);
        let json = serde_json::to_value(&b).unwrap();
        let bounds: Vec<(u64, Option<u64>)> = json
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b["min_bytes"].as_u64().unwrap(), b["max_bytes"].as_u64()))
            .collect();
        assert_eq!(
            bounds,
            [(0, Some(9_999)), (10_000_000, None), (0, None)],
            "< 10 KB (bounds, not the one flow's 5000 B), >= 10 MB, all"
        );
        assert!(json[1]["max_bytes"].is_null());
    }
}

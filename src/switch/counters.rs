//! Counters per port and priority, named as switches print them (`show queuing interface`,
//! `show pfc counters`, `show queue counters`, `show pfcwd stats`), and the sojourn time of
//! every queue as an HDR histogram.

use crate::config::CLASSES;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Why a frame was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropCause {
    /// The ingress PG had no room: headroom exhausted (lossless) or shared pool full.
    IngressOverflow,
    /// WRED dropped a Not-ECT frame on a lossy queue.
    Wred,
    /// A lossy egress queue was at its limit.
    Tail,
    /// The PFC watchdog (drop action) flushed or refused it.
    Watchdog,
    /// Larger than the egress port's MTU allows.
    Mtu,
}

/// Counters of one priority (ingress side) and one queue (egress side) of a port. Rx and PG
/// counters are indexed by traffic class, tx and queue counters by queue; with the default
/// one-to-one map they are the same.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ClassCounters {
    /// Frames received in this class.
    pub rx_frames: u64,
    /// Bytes of those frames, FCS excluded.
    pub rx_bytes: u64,
    /// Frames sent from this queue.
    pub tx_frames: u64,
    /// Bytes of those frames, FCS excluded.
    pub tx_bytes: u64,
    /// PFC frames received with this priority enabled (XON included).
    pub rx_pause_frames: u64,
    /// Of those, with time 0 (XON).
    pub rx_xon_frames: u64,
    /// PFC frames sent for this priority (XON included).
    pub tx_pause_frames: u64,
    /// Of those, with time 0 (XON).
    pub tx_xon_frames: u64,
    /// Frames this queue marked CE (in JSON `ce_marked`, the one name for CE-marked
    /// frames in every report).
    #[serde(rename = "ce_marked")]
    pub ecn_marked: u64,
    /// Drops: ingress overflow (this class's PG).
    pub dropped_ingress_overflow: u64,
    /// Drops: WRED (this queue).
    pub dropped_wred: u64,
    /// Drops: tail (this queue).
    pub dropped_tail: u64,
    /// Drops: PFC watchdog (this queue).
    pub dropped_watchdog: u64,
    /// Drops: larger than this port's MTU allows (this queue).
    pub dropped_mtu: u64,
    /// Bytes dropped, all causes.
    pub dropped_bytes: u64,
    /// Highest queue depth, bytes.
    pub queue_watermark_bytes: u64,
    /// Highest PG shared-pool use, bytes.
    pub pg_shared_watermark_bytes: u64,
    /// Highest PG headroom use, bytes.
    pub pg_headroom_watermark_bytes: u64,
    /// PFC storms the watchdog detected on this queue.
    pub storms_detected: u64,
    /// Storms it restored.
    pub storms_restored: u64,
    /// Frames sent while the queue was stormed (forward action ignores the pause).
    pub tx_during_storm: u64,
}

impl ClassCounters {
    /// Frames dropped, all four causes summed.
    pub fn dropped(&self) -> u64 {
        self.dropped_ingress_overflow
            + self.dropped_wred
            + self.dropped_tail
            + self.dropped_watchdog
            + self.dropped_mtu
    }
}

/// Counters of one port.
#[derive(Debug, Clone, Serialize)]
pub struct PortCounters {
    /// The port's name in the configuration (its interface in the live runtime).
    pub name: String,
    /// Per class / queue.
    pub classes: [ClassCounters; CLASSES],
    /// 802.3x PAUSE frames received.
    pub rx_link_pause_frames: u64,
    /// MAC Control and other link-local frames consumed (PFC and PAUSE included).
    pub rx_link_local_frames: u64,
    /// Frames that did not parse (forwarded as class of DSCP/PCP 0).
    pub rx_malformed_frames: u64,
    /// Frames not forwarded because their destination sits behind the ingress port.
    pub filtered_frames: u64,
    /// Frames received larger than the port's MTU allows ("giants"): dropped.
    pub rx_oversize_frames: u64,
    /// Queue sojourn times, ns, per queue.
    #[serde(skip)]
    pub sojourn_ns: Vec<Histogram<u64>>,
}

impl PortCounters {
    /// Zeroed counters for a port named `name`.
    pub fn new(name: &str) -> PortCounters {
        PortCounters {
            name: name.to_owned(),
            classes: Default::default(),
            rx_link_pause_frames: 0,
            rx_link_local_frames: 0,
            rx_malformed_frames: 0,
            filtered_frames: 0,
            rx_oversize_frames: 0,
            // 1 ns to 1000 s with 2 significant digits: 1 % resolution in ~30 KB a queue.
            sojourn_ns: (0..CLASSES)
                .map(|_| {
                    Histogram::new_with_bounds(1, 1_000_000_000_000, 2)
                        .expect("fixed, valid histogram bounds")
                })
                .collect(),
        }
    }

    /// Counts a drop.
    #[inline]
    pub fn drop(&mut self, class: usize, cause: DropCause, bytes: usize) {
        let c = &mut self.classes[class];
        match cause {
            DropCause::IngressOverflow => c.dropped_ingress_overflow += 1,
            DropCause::Wred => c.dropped_wred += 1,
            DropCause::Tail => c.dropped_tail += 1,
            DropCause::Watchdog => c.dropped_watchdog += 1,
            DropCause::Mtu => c.dropped_mtu += 1,
        }
        c.dropped_bytes += bytes as u64;
    }

    /// Sojourn percentiles of queue `q` (p50, p99, max), ns; `None` if it sent nothing.
    pub fn sojourn_summary(&self, q: usize) -> Option<(u64, u64, u64)> {
        let h = &self.sojourn_ns[q];
        (!h.is_empty()).then(|| (h.value_at_quantile(0.5), h.value_at_quantile(0.99), h.max()))
    }
}

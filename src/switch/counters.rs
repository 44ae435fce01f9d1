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
///
/// The first eight are the ones every frame counts, at its ingress or its egress: aligned
/// as they are, they share one cache line (a switch's ports are more than its cache
/// holds).
#[derive(Debug, Clone, Default, Serialize)]
#[repr(align(64))]
pub struct ClassCounters {
    /// Frames received in this class.
    pub rx_frames: u64,
    /// Bytes of those frames, FCS excluded.
    pub rx_bytes: u64,
    /// Frames sent from this queue.
    pub tx_frames: u64,
    /// Bytes of those frames, FCS excluded.
    pub tx_bytes: u64,
    /// Highest queue depth, bytes.
    pub queue_watermark_bytes: u64,
    /// Highest PG shared-pool use, bytes.
    pub pg_shared_watermark_bytes: u64,
    /// Highest PG headroom use, bytes.
    pub pg_headroom_watermark_bytes: u64,
    /// Frames sent while the queue was stormed (forward action ignores the pause).
    pub tx_during_storm: u64,
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
    /// Frames this lossless PG held past its full headroom because they arrived before
    /// its pause left: a live switch's thread ran late, and a real peer would still have
    /// held them. Not drops; always 0 in the simulator.
    pub late_pause_frames: u64,
    /// PFC storms the watchdog detected on this queue.
    pub storms_detected: u64,
    /// Storms it restored.
    pub storms_restored: u64,
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

    /// Frames dropped at the egress queue (WRED, tail, watchdog, MTU): every drop but
    /// ingress overflow, which is the class's.
    pub fn dropped_at_queue(&self) -> u64 {
        self.dropped_wred + self.dropped_tail + self.dropped_watchdog + self.dropped_mtu
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
    /// Queue sojourn times, ns, per queue: held in the counters, not behind a pointer,
    /// since every frame sent counts one.
    #[serde(skip)]
    pub sojourn_ns: [SojournHistogram; CLASSES],
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
            sojourn_ns: Default::default(),
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
        let s = &self.sojourn_ns[q];
        if s.is_empty() {
            return None;
        }
        Some((s.quantile(0.5), s.quantile(0.99), s.max()))
    }
}

/// The sojourn times of one queue, ns, from 1 ns to 1000 s (longer ones count as 1000 s)
/// with two significant digits (1 % resolution), counted in the buckets of an HDR
/// histogram of those bounds by index arithmetic alone: `hdrhistogram`'s own `record`
/// (range checks, minimum and maximum upkeep) cost several times as much, once per frame
/// on the switch's hot path. [`histogram`](Self::histogram) gives the very histogram
/// `hdrhistogram` would have recorded, for percentiles and exports.
#[derive(Debug, Clone, Default)]
pub struct SojournHistogram {
    counts: Vec<u64>,
    /// Times counted.
    total: u64,
}

impl SojournHistogram {
    /// The longest time counted, ns.
    pub const HIGHEST_NS: u64 = 1_000_000_000_000;
    /// log2 of the sub-buckets per bucket: the least power of two holding 2 × 10^2 (two
    /// significant digits), as HdrHistogram sizes them.
    const SUB_BITS: u32 = 8;
    const HALF: usize = 1 << (Self::SUB_BITS - 1);

    /// Counts one time.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let i = Self::index(ns.min(Self::HIGHEST_NS));
        if i >= self.counts.len() {
            self.grow(i);
        }
        self.counts[i] += 1;
        self.total += 1;
    }

    /// Starts loading the bucket that counts `ns`, for a time about to be counted: the
    /// buckets of a switch's many queues are long out of the cache when a frame leaves.
    #[inline]
    pub fn prefetch(&self, ns: u64) {
        let i = Self::index(ns.min(Self::HIGHEST_NS));
        crate::hint::prefetch(self.counts.as_ptr().wrapping_add(i).cast());
    }

    /// Makes room up to bucket `i`. The buckets exist only up to the longest time counted:
    /// a switch has eight of these per port, and most never count anything, or nothing
    /// past a few microseconds (all 4,329 buckets, up to 1000 s, would be 35 KB each:
    /// 106 MB for the 384 ports of a 128-host leaf-spine).
    #[cold]
    fn grow(&mut self, i: usize) {
        self.counts
            .resize((i + 1).next_power_of_two().min(Self::LEN), 0);
    }

    /// Buckets from 0 ns to [`HIGHEST_NS`](Self::HIGHEST_NS).
    const LEN: usize = Self::index(Self::HIGHEST_NS) + 1;

    /// How many times were counted.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Bucket `b` holds values below 2^(SUB_BITS + b) in sub-buckets of 2^b (bucket 0 all
    /// of its 256, the others their upper half): HdrHistogram's layout.
    #[inline]
    const fn index(v: u64) -> usize {
        let bucket = (64 - Self::SUB_BITS) - (v | ((1 << Self::SUB_BITS) - 1)).leading_zeros();
        let sub = (v >> bucket) as usize;
        ((bucket as usize + 1) << (Self::SUB_BITS - 1)) + sub - Self::HALF
    }

    /// The lowest value of bucket index `i`.
    fn value_at(i: usize) -> u64 {
        let (bucket, sub) = match (i >> (Self::SUB_BITS - 1)).checked_sub(1) {
            Some(b) => (b, (i & (Self::HALF - 1)) + Self::HALF),
            None => (0, i & (Self::HALF - 1)),
        };
        (sub as u64) << bucket
    }

    /// The time at quantile `q` (above 0, at most 1), ns: what
    /// [`histogram`](Self::histogram)'s `value_at_quantile(q)` gives, read from the
    /// buckets without building it (35 KB zeroed and filled per queue of a report); 0 when
    /// nothing was counted.
    pub fn quantile(&self, q: f64) -> u64 {
        debug_assert!(
            q > 0.0,
            "quantile 0 is the bucket's lowest value, not its highest"
        );
        let want = ((q.min(1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= want {
                return Self::highest_at(i);
            }
        }
        0
    }

    /// The longest time counted, as [`histogram`](Self::histogram)'s `max()` gives it (its
    /// bucket's highest value); 0 when nothing was counted.
    pub fn max(&self) -> u64 {
        self.counts
            .iter()
            .rposition(|&n| n > 0)
            .map_or(0, Self::highest_at)
    }

    /// The highest value of bucket index `i` as the histogram holds it: 0 ns counts as
    /// 1 ns, its lowest value.
    fn highest_at(i: usize) -> u64 {
        if i <= 1 {
            return 1;
        }
        Self::value_at(i + 1) - 1
    }

    /// What was counted, as an HDR histogram (1 ns to 1000 s, two significant digits).
    pub fn histogram(&self) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, Self::HIGHEST_NS, 2)
            .expect("fixed, valid histogram bounds");
        for (i, &n) in self.counts.iter().enumerate().filter(|(_, n)| **n > 0) {
            // 0 ns shares bucket 0 with 1 ns, below the histogram's lowest value.
            let _ = h.record_n(Self::value_at(i).max(1), n);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Times spread over every bucket: 0 to 300 one by one, then powers of two and their
    /// neighbours, then a pseudo-random spread, and some past the highest.
    fn times() -> Vec<u64> {
        let mut t: Vec<u64> = (0..300).collect();
        for b in 8..41 {
            let p = 1u64 << b;
            t.extend([p - 1, p, p + 1, p + p / 3]);
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t.push(x % (1 << (x % 41)));
        }
        t.extend([
            SojournHistogram::HIGHEST_NS,
            SojournHistogram::HIGHEST_NS + 1,
            u64::MAX,
        ]);
        t
    }

    #[test]
    fn the_histogram_is_the_one_hdrhistogram_records() {
        let mut ours = SojournHistogram::default();
        let mut theirs =
            Histogram::<u64>::new_with_bounds(1, SojournHistogram::HIGHEST_NS, 2).unwrap();
        for v in times() {
            ours.record(v);
            theirs
                .record(v.clamp(1, SojournHistogram::HIGHEST_NS))
                .expect("in range");
        }
        let h = ours.histogram();
        assert_eq!(ours.len(), theirs.len());
        assert_eq!(h.len(), theirs.len());
        assert_eq!(h.max(), theirs.max());
        assert_eq!(h.min_nz(), theirs.min_nz());
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(h.value_at_quantile(q), theirs.value_at_quantile(q), "q {q}");
        }
        let a: Vec<(u64, u64)> = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        let b: Vec<(u64, u64)> = theirs
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        assert_eq!(a, b);
    }

    /// The quantiles and the maximum read from the buckets are the built histogram's, on
    /// every spread of `times` from one time to all of them.
    #[test]
    fn quantiles_from_the_buckets_are_the_histograms() {
        let all = times();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for round in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut ours = SojournHistogram::default();
            let stride = 1 + (x % 97) as usize;
            let start = (x >> 32) as usize % all.len();
            for v in all.iter().skip(start).step_by(stride).take(1 + round * 7) {
                ours.record(*v);
            }
            let h = ours.histogram();
            for q in [0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
                assert_eq!(
                    ours.quantile(q),
                    h.value_at_quantile(q),
                    "round {round} q {q}"
                );
            }
            assert_eq!(ours.max(), h.max(), "round {round}");
        }
        let empty = SojournHistogram::default();
        assert_eq!((empty.quantile(0.5), empty.max()), (0, 0));
        let mut zero = SojournHistogram::default();
        zero.record(0);
        assert_eq!((zero.quantile(0.99), zero.max()), (1, 1));
        assert_eq!(zero.histogram().max(), 1);
    }

    #[test]
    fn every_bucket_maps_back_to_itself() {
        for i in 0..SojournHistogram::LEN {
            assert_eq!(
                SojournHistogram::index(SojournHistogram::value_at(i)),
                i,
                "index {i}"
            );
        }
    }
}

//! Egress scheduling: each port's transmitter runs at the emulated line rate, and picks
//! the next queue by strict priority (highest queue first), then deficit weighted round
//! robin (Shreedhar and Varghese's DRR, with per-queue quanta in proportion to weights).

use crate::config::{CLASSES, Schedule};
use crate::time::Nanos;

/// Bytes a frame takes on the wire besides itself: FCS 4, preamble and SFD 8, minimum
/// inter-frame gap 12 (IEEE 802.3 clause 4).
pub const WIRE_OVERHEAD_BYTES: u64 = 24;
/// Frames shorter than this (without FCS) are padded on the wire.
const MIN_FRAME: u64 = 60;

/// The inter-frame gap, bytes.
const IFG_BYTES: u64 = 12;

/// Bits one frame of `len` bytes (without FCS) occupies on the wire, gap included.
#[inline]
pub fn wire_bits(len: usize) -> u64 {
    ((len as u64).max(MIN_FRAME) + WIRE_OVERHEAD_BYTES) * 8
}

/// Nanoseconds from a frame's first bit (preamble) to its last (FCS) at `bits_per_sec`:
/// when a receiver has all of it. Rounded up.
pub fn frame_time(len: usize, bits_per_sec: u64) -> Nanos {
    let bits = wire_bits(len) - IFG_BYTES * 8;
    Nanos((u128::from(bits) * 1_000_000_000).div_ceil(u128::from(bits_per_sec.max(1))) as u64)
}

/// A port's transmitter: when it is free again, at the emulated rate, exactly.
///
/// Time is kept as (start of the current busy period, bits sent since), so that departure
/// times are exact to the nanosecond however long the busy period, with no rounding drift
/// at rates where a bit is a fraction of a nanosecond.
#[derive(Debug, Clone)]
pub struct Transmitter {
    bits_per_sec: u64,
    busy_start: Nanos,
    bits: u64,
    /// `busy_start + ceil(bits / rate)`, kept so that asking is free.
    free_at: Nanos,
    /// Femtoseconds per bit when that is a whole number (every common rate: 1 Gb/s is
    /// 10^6, 400 Gb/s 2500), so that wire time is an integer product; 0 otherwise.
    fs_per_bit: u64,
    /// False when the port's transmit side is shut (tests stop an egress this way).
    pub enabled: bool,
}

impl Transmitter {
    /// An idle transmitter at `bits_per_sec`.
    pub fn new(bits_per_sec: u64) -> Transmitter {
        Transmitter {
            bits_per_sec,
            busy_start: Nanos::ZERO,
            bits: 0,
            free_at: Nanos::ZERO,
            fs_per_bit: if 1_000_000_000_000_000 % bits_per_sec.max(1) == 0 {
                1_000_000_000_000_000 / bits_per_sec.max(1)
            } else {
                0
            },
            enabled: true,
        }
    }

    /// The line rate.
    pub fn bits_per_sec(&self) -> u64 {
        self.bits_per_sec
    }

    /// The earliest time the next frame may start.
    #[inline]
    pub fn free_at(&self) -> Nanos {
        self.free_at
    }

    /// Starts a frame of `len` bytes at `now` (not before [`free_at`](Self::free_at));
    /// returns its start time.
    #[inline]
    pub fn start(&mut self, now: Nanos, len: usize) -> Nanos {
        if now > self.free_at || self.bits == 0 {
            // Idle since the last frame ended: a new busy period.
            self.busy_start = now;
            self.bits = 0;
        }
        self.bits += wire_bits(len);
        let ns = match self.bits.checked_mul(self.fs_per_bit) {
            Some(fs) if self.fs_per_bit != 0 => fs.div_ceil(1_000_000),
            _ => (u128::from(self.bits) * 1_000_000_000).div_ceil(u128::from(self.bits_per_sec))
                as u64,
        };
        self.free_at = self.busy_start.saturating_add(Nanos(ns));
        now
    }
}

/// Strict priority over DWRR, for one port.
#[derive(Debug, Clone)]
pub struct Scheduler {
    /// Strict queues, highest first.
    strict: Vec<usize>,
    /// DWRR queues, in round-robin order.
    dwrr: Vec<usize>,
    /// Bit q set: queue q is a DWRR queue.
    dwrr_mask: u8,
    quantum: [u64; CLASSES],
    deficit: [u64; CLASSES],
    current: usize,
    fresh: bool,
}

impl Scheduler {
    /// A scheduler for `schedules`; a DWRR queue of weight w gets w × `base_quantum` bytes
    /// a round (`base_quantum` at least the largest frame, so every visit can send).
    pub fn new(schedules: &[Schedule; CLASSES], base_quantum: u64) -> Scheduler {
        let mut strict: Vec<usize> = (0..CLASSES)
            .filter(|&q| schedules[q] == Schedule::Strict)
            .collect();
        strict.reverse();
        let dwrr: Vec<usize> = (0..CLASSES)
            .filter(|&q| matches!(schedules[q], Schedule::Dwrr(_)))
            .collect();
        let dwrr_mask = dwrr.iter().fold(0u8, |m, &q| m | (1 << q));
        let quantum = std::array::from_fn(|q| match schedules[q] {
            Schedule::Dwrr(w) => u64::from(w) * base_quantum,
            Schedule::Strict => 0,
        });
        Scheduler {
            strict,
            dwrr,
            dwrr_mask,
            quantum,
            deficit: [0; CLASSES],
            current: 0,
            fresh: true,
        }
    }

    /// Picks the queue to send from next among `ready` (bit q set: queue q holds frames
    /// and may send), charging DWRR deficits; `head_len(q)` is the size of queue q's next
    /// frame. `None` when no queue is ready. Queues that hold frames but are paused keep
    /// their DWRR credit for when they resume.
    #[inline]
    pub fn pick(&mut self, ready: u8, head_len: impl Fn(usize) -> u64) -> Option<usize> {
        if ready == 0 {
            return None;
        }
        for &q in &self.strict {
            if ready & (1 << q) != 0 {
                return Some(q);
            }
        }
        let contending = ready & self.dwrr_mask;
        if contending.is_power_of_two() {
            // One DWRR queue alone gets the link; credit only matters between contenders,
            // and every queue starts a contention with a fresh quantum.
            let q = contending.trailing_zeros() as usize;
            self.deficit[q] = 0;
            self.fresh = true;
            return Some(q);
        }
        let n = self.dwrr.len();
        // A ready queue can send on its first fresh visit (quantum ≥ largest frame), so
        // two passes are always enough.
        for _ in 0..2 * n + 1 {
            let q = self.dwrr[self.current];
            if ready & (1 << q) == 0 {
                self.advance();
                continue;
            }
            if self.fresh {
                self.deficit[q] += self.quantum[q];
                self.fresh = false;
            }
            let len = head_len(q);
            if len <= self.deficit[q] {
                self.deficit[q] -= len;
                return Some(q);
            }
            self.advance();
        }
        None
    }

    /// Queue `q` went empty: DRR keeps no credit for an empty queue.
    #[inline]
    pub fn emptied(&mut self, q: usize) {
        self.deficit[q] = 0;
        if self.dwrr.get(self.current) == Some(&q) {
            self.advance();
        }
    }

    fn advance(&mut self) {
        self.current += 1;
        if self.current == self.dwrr.len() {
            self.current = 0;
        }
        self.fresh = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_time_at_100g_is_exact_over_a_long_burst() {
        let mut tx = Transmitter::new(100_000_000_000);
        let mut now = Nanos(1000);
        // 1000 frames of 1082 bytes: (1082 + 24) × 8 = 8848 bits = 88.48 ns each.
        for _ in 0..1000 {
            now = tx.start(now.max(tx.free_at()), 1082);
        }
        assert_eq!(tx.free_at(), Nanos(1000 + 88_480));
    }

    #[test]
    fn runt_frames_are_padded_on_the_wire() {
        assert_eq!(wire_bits(42), (60 + 24) * 8);
    }

    #[test]
    fn dwrr_shares_follow_weights_and_strict_goes_first() {
        let mut s = [Schedule::Dwrr(1); CLASSES];
        s[1] = Schedule::Dwrr(3);
        s[7] = Schedule::Strict;
        let mut sched = Scheduler::new(&s, 1500);
        let mut sent = [0u64; CLASSES];
        for _ in 0..4000 {
            let q = sched.pick(0b11, |_| 1000).unwrap();
            sent[q] += 1000;
        }
        let share = sent[1] as f64 / (sent[0] + sent[1]) as f64;
        assert!((share - 0.75).abs() < 0.01, "{share}");
        assert_eq!(sched.pick(0b1000_0001, |_| 64), Some(7));
        assert_eq!(sched.pick(0, |_| 64), None);
    }
}

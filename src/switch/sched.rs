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
        let ns = (u128::from(self.bits) * 1_000_000_000).div_ceil(u128::from(self.bits_per_sec));
        self.busy_start.saturating_add(Nanos(ns as u64))
    }

    /// Starts a frame of `len` bytes at `now` (not before [`free_at`](Self::free_at));
    /// returns its start time.
    #[inline]
    pub fn start(&mut self, now: Nanos, len: usize) -> Nanos {
        if now > self.free_at() || self.bits == 0 {
            // Idle since the last frame ended: a new busy period.
            self.busy_start = now;
            self.bits = 0;
        }
        self.bits += wire_bits(len);
        now
    }
}

/// What a queue can do right now, as the scheduler asks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueState {
    /// Nothing queued.
    Empty,
    /// Frames queued but not allowed to send (paused).
    Blocked,
    /// The head frame, of this many bytes, may go.
    Ready(u64),
}

/// Strict priority over DWRR, for one port.
#[derive(Debug, Clone)]
pub struct Scheduler {
    /// Strict queues, highest first.
    strict: Vec<usize>,
    /// DWRR queues, in round-robin order.
    dwrr: Vec<usize>,
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
        let dwrr = (0..CLASSES)
            .filter(|&q| matches!(schedules[q], Schedule::Dwrr(_)))
            .collect();
        let quantum = std::array::from_fn(|q| match schedules[q] {
            Schedule::Dwrr(w) => u64::from(w) * base_quantum,
            Schedule::Strict => 0,
        });
        Scheduler {
            strict,
            dwrr,
            quantum,
            deficit: [0; CLASSES],
            current: 0,
            fresh: true,
        }
    }

    /// Picks the queue to send from next, charging DWRR deficits; `None` when no queue
    /// may send.
    #[inline]
    pub fn pick(&mut self, state: impl Fn(usize) -> QueueState) -> Option<usize> {
        for &q in &self.strict {
            if let QueueState::Ready(_) = state(q) {
                return Some(q);
            }
        }
        let n = self.dwrr.len();
        // Each Ready queue can send on its first fresh visit (quantum ≥ largest frame), so
        // two passes are always enough.
        for _ in 0..2 * n + 1 {
            let q = self.dwrr[self.current];
            match state(q) {
                QueueState::Ready(len) => {
                    if self.fresh {
                        self.deficit[q] += self.quantum[q];
                        self.fresh = false;
                    }
                    if len <= self.deficit[q] {
                        self.deficit[q] -= len;
                        return Some(q);
                    }
                    self.advance();
                }
                QueueState::Empty => {
                    // DRR: an empty queue keeps no credit.
                    self.deficit[q] = 0;
                    self.advance();
                }
                // A paused queue keeps its credit for when it resumes.
                QueueState::Blocked => self.advance(),
            }
        }
        None
    }

    fn advance(&mut self) {
        self.current = (self.current + 1) % self.dwrr.len();
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
            let q = sched
                .pick(|q| {
                    if q <= 1 {
                        QueueState::Ready(1000)
                    } else {
                        QueueState::Empty
                    }
                })
                .unwrap();
            sent[q] += 1000;
        }
        let share = sent[1] as f64 / (sent[0] + sent[1]) as f64;
        assert!((share - 0.75).abs() < 0.01, "{share}");
        assert_eq!(
            sched.pick(|q| if q == 7 || q == 0 {
                QueueState::Ready(64)
            } else {
                QueueState::Empty
            }),
            Some(7)
        );
        assert_eq!(sched.pick(|_| QueueState::Blocked), None);
    }
}

//! Egress scheduling: each port's transmitter ([`crate::link::Transmitter`]) runs at the
//! emulated line rate, and the scheduler picks the next queue by strict priority (highest queue first), then deficit weighted round
//! robin (Shreedhar and Varghese's DRR, with per-queue quanta in proportion to weights).

use crate::config::{CLASSES, Schedule};

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

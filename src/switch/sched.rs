//! Egress scheduling: each port's transmitter ([`crate::link::Transmitter`]) runs at the
//! emulated line rate, and the scheduler picks the next queue by strict priority (highest queue first), then deficit weighted round
//! robin (Shreedhar and Varghese's DRR, with per-queue quanta in proportion to weights);
//! on an InfiniBand fabric, by the IBA's VL arbitration tables instead ([`VlArbiter`]).

use crate::config::{CLASSES, Schedule};

/// Strict priority over DWRR, for one port.
///
/// Held in the port, not behind a pointer, and in C's layout with what every pick reads
/// first: a frame sent reads it, and a switch's ports are more than its cache holds.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct Scheduler {
    /// InfiniBand VL arbitration, which replaces the rest when set.
    vl_arb: Option<Box<VlArbiter>>,
    /// Bit q set: queue q is a strict-priority queue (the highest ready one goes first).
    strict_mask: u8,
    /// Bit q set: queue q is a DWRR queue; the round goes through them in queue order.
    dwrr_mask: u8,
    fresh: bool,
    /// The DWRR queue whose turn it is.
    current: u8,
    deficit: [u64; CLASSES],
    quantum: [u64; CLASSES],
}

impl Scheduler {
    /// A scheduler for `schedules`; a DWRR queue of weight w gets w × `base_quantum` bytes
    /// a round (`base_quantum` at least the largest frame, so every visit can send).
    pub fn new(schedules: &[Schedule; CLASSES], base_quantum: u64) -> Scheduler {
        let strict_mask = (0..CLASSES)
            .filter(|&q| schedules[q] == Schedule::Strict)
            .fold(0u8, |m, q| m | (1 << q));
        let dwrr_mask = (0..CLASSES)
            .filter(|&q| matches!(schedules[q], Schedule::Dwrr(_)))
            .fold(0u8, |m, q| m | (1 << q));
        let quantum = std::array::from_fn(|q| match schedules[q] {
            Schedule::Dwrr(w) => u64::from(w) * base_quantum,
            Schedule::Strict => 0,
        });
        Scheduler {
            strict_mask,
            dwrr_mask,
            quantum,
            deficit: [0; CLASSES],
            current: dwrr_mask.trailing_zeros().min(7) as u8,
            fresh: true,
            vl_arb: None,
        }
    }

    /// Arbitrates between queues (VLs) by the IBA's VL arbitration tables from now on.
    pub fn set_vl_arbitration(&mut self, cfg: &VlArbConfig) {
        self.vl_arb = Some(Box::new(VlArbiter::new(cfg)));
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
        if let Some(arb) = self.vl_arb.as_mut() {
            return arb.pick(ready, head_len);
        }
        let strict = ready & self.strict_mask;
        if strict != 0 {
            return Some((u8::BITS - 1 - strict.leading_zeros()) as usize);
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
        let n = self.dwrr_mask.count_ones() as usize;
        // A ready queue can send on its first fresh visit (quantum ≥ largest frame), so
        // two passes are always enough.
        for _ in 0..2 * n + 1 {
            let q = usize::from(self.current);
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
        if usize::from(self.current) == q && self.dwrr_mask & (1 << q) != 0 {
            self.advance();
        }
    }

    /// The turn goes to the next DWRR queue in queue order, wrapping.
    fn advance(&mut self) {
        let later = self.dwrr_mask & !((2u16 << self.current) - 1) as u8;
        let next = if later != 0 { later } else { self.dwrr_mask };
        if next != 0 {
            self.current = next.trailing_zeros() as u8;
        }
        self.fresh = true;
    }
}

/// The VL arbitration of an InfiniBand port (IBA vol. 1, 7.6.9): a high- and a
/// low-priority table of (VL, weight) entries, the weight in 64-byte units, and the limit
/// of high priority.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VlArbConfig {
    /// The high-priority table, in order.
    pub high: Vec<(u8, u8)>,
    /// The low-priority table, in order.
    pub low: Vec<(u8, u8)>,
    /// High-priority bytes, in 4096-byte units, that may go before a waiting
    /// low-priority packet must: 0 lets one packet go, 255 is no limit.
    pub high_limit: u8,
}

impl Default for VlArbConfig {
    /// OpenSM's defaults (its `qos_vlarb_high`, `qos_vlarb_low` and `qos_high_limit`),
    /// over VL0–VL7: VL0 alone in the high table, every other VL in the low table, each
    /// entry weight 4 (256 bytes), and a limit of 0.
    fn default() -> VlArbConfig {
        VlArbConfig {
            high: vec![(0, 4)],
            low: (1..CLASSES as u8).map(|vl| (vl, 4)).collect(),
            high_limit: 0,
        }
    }
}

/// Where one table's arbitration stands.
#[derive(Debug, Clone, Default)]
struct TableState {
    entry: usize,
    /// Weight left to the current entry, bytes; its packets go while it is above 0 (the
    /// one that takes it below 0 still goes).
    left: i64,
    fresh: bool,
}

/// IBA VL arbitration for one port: the high-priority table while it has a ready VL and
/// the limit allows, the low-priority one otherwise; within a table, entry by entry, each
/// sending packets of its VL while weight is left.
#[derive(Debug, Clone)]
pub struct VlArbiter {
    cfg: VlArbConfig,
    /// Bit v set: VL v has an entry of nonzero weight in the table.
    high_mask: u8,
    low_mask: u8,
    high: TableState,
    low: TableState,
    /// High-priority bytes sent since the last low-priority packet, and whether any was.
    high_sent: u64,
    high_any: bool,
}

impl VlArbiter {
    /// An arbiter for `cfg`, at the start of both tables.
    pub fn new(cfg: &VlArbConfig) -> VlArbiter {
        let mask = |t: &[(u8, u8)]| {
            t.iter()
                .filter(|e| e.1 > 0 && usize::from(e.0) < CLASSES)
                .fold(0u8, |m, e| m | 1 << e.0)
        };
        VlArbiter {
            high_mask: mask(&cfg.high),
            low_mask: mask(&cfg.low),
            cfg: cfg.clone(),
            high: TableState {
                fresh: true,
                ..TableState::default()
            },
            low: TableState {
                fresh: true,
                ..TableState::default()
            },
            high_sent: 0,
            high_any: false,
        }
    }

    /// The VL to send from next among `ready`; `head_len(v)` is VL v's next packet.
    pub fn pick(&mut self, ready: u8, head_len: impl Fn(usize) -> u64) -> Option<usize> {
        let high_ready = ready & self.high_mask != 0;
        let low_ready = ready & self.low_mask != 0;
        let limited = match self.cfg.high_limit {
            255 => false,
            0 => self.high_any,
            units => self.high_sent >= u64::from(units) * 4096,
        };
        if high_ready && !(limited && low_ready) {
            let vl = serve(&mut self.high, &self.cfg.high, ready, &head_len)?;
            self.high_sent += head_len(vl);
            self.high_any = true;
            return Some(vl);
        }
        if low_ready {
            let vl = serve(&mut self.low, &self.cfg.low, ready, &head_len)?;
            self.high_sent = 0;
            self.high_any = false;
            return Some(vl);
        }
        None
    }
}

/// The next VL of `table` among `ready`, charging its entry's weight.
fn serve(
    state: &mut TableState,
    table: &[(u8, u8)],
    ready: u8,
    head_len: &impl Fn(usize) -> u64,
) -> Option<usize> {
    let n = table.len();
    // Every entry once, and the current one again.
    for _ in 0..=n {
        let (vl, weight) = *table.get(state.entry)?;
        let vl = usize::from(vl);
        if weight > 0 && vl < CLASSES && ready & (1 << vl) != 0 {
            if state.fresh {
                state.left = i64::from(weight) * 64;
                state.fresh = false;
            }
            if state.left > 0 {
                state.left -= head_len(vl) as i64;
                if state.left <= 0 {
                    next_entry(state, n);
                }
                return Some(vl);
            }
        }
        next_entry(state, n);
    }
    None
}

fn next_entry(state: &mut TableState, n: usize) {
    state.entry = (state.entry + 1) % n.max(1);
    state.fresh = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes per VL over `picks` packets of 4096 bytes with every VL of `ready` busy.
    fn shares(cfg: &VlArbConfig, ready: u8, picks: usize) -> [u64; CLASSES] {
        let mut arb = VlArbiter::new(cfg);
        let mut sent = [0u64; CLASSES];
        for _ in 0..picks {
            let vl = arb.pick(ready, |_| 4096).expect("a ready VL");
            sent[vl] += 4096;
        }
        sent
    }

    #[test]
    fn low_table_weights_share_the_link() {
        // 64 and 192 units: one 4 KiB packet and three per turn.
        let cfg = VlArbConfig {
            high: vec![],
            low: vec![(1, 64), (3, 192)],
            high_limit: 0,
        };
        let sent = shares(&cfg, 0b1010, 4000);
        assert_eq!(sent[3], 3 * sent[1]);
        // An entry's last packet may overrun its weight: weight 1 still sends one.
        let cfg = VlArbConfig {
            high: vec![],
            low: vec![(1, 1), (3, 1)],
            high_limit: 0,
        };
        let sent = shares(&cfg, 0b1010, 1000);
        assert_eq!(sent[1], sent[3]);
    }

    #[test]
    fn the_high_limit_lets_low_priority_through() {
        let cfg = |limit| VlArbConfig {
            high: vec![(0, 255)],
            low: vec![(1, 4)],
            high_limit: limit,
        };
        // Limit 0: one high packet, then a low one.
        let sent = shares(&cfg(0), 0b11, 1000);
        assert_eq!(sent[0], sent[1]);
        // Limit 2: 8 KiB of high, then a low packet.
        let sent = shares(&cfg(2), 0b11, 900);
        assert_eq!(sent[0], 2 * sent[1]);
        // 255: high alone while it is ready.
        let sent = shares(&cfg(255), 0b11, 100);
        assert_eq!(sent[1], 0);
        // Low goes whenever high has nothing.
        let sent = shares(&cfg(255), 0b10, 10);
        assert_eq!(sent[1], 40960);
    }

    #[test]
    fn opensm_defaults_put_vl0_high_and_share_the_rest() {
        let sent = shares(&VlArbConfig::default(), 0b1000_1000, 1000);
        assert_eq!(sent[3], sent[7]);
        assert_eq!(
            VlArbiter::new(&VlArbConfig::default()).pick(0, |_| 64),
            None
        );
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

//! The engine's event queue: a 4-ary min-heap of event keys.
//!
//! Every event goes through one push and one pop, and with a hundred links the queue holds
//! hundreds of events. A binary heap's pop walks log2(n) levels, each a dependent load and
//! a 24-byte move; four children per node halve the levels, and the four sit in one or
//! two cache lines. The order is the same as a binary heap's: by time, then by
//! [`QueueKey::seq`], unique (the engine makes it from the node that caused the event and
//! that node's count of them), so runs stay deterministic.

/// An event's place in the queue: ordered by `time`, then `seq`. The event itself (a
/// frame's buffer with its node and port, a node's wake-up) waits in the engine's slab at
/// `slot`, so the queue moves these 24 bytes rather than the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct QueueKey {
    /// When the event happens, ns.
    pub time: u64,
    /// The tie-break: unique among the queued keys.
    pub seq: u64,
    /// Where the event waits. A whole word: a 4-byte slot left padding, which the queue's
    /// moves read back as part of an 8-byte load right after the 4-byte store that wrote
    /// the slot, and the CPU cannot forward that (a stall on every push).
    pub slot: u64,
}

impl QueueKey {
    /// Time and seq as one number, compared in one step.
    #[inline(always)]
    fn order(&self) -> u128 {
        (u128::from(self.time) << 64) | u128::from(self.seq)
    }

    #[inline(always)]
    fn before(&self, other: &QueueKey) -> bool {
        self.order() < other.order()
    }
}

const ARITY: usize = 4;

/// The queue: see the module documentation.
#[derive(Debug, Default)]
pub(super) struct EventQueue {
    keys: Vec<QueueKey>,
}

impl EventQueue {
    /// The earliest event.
    #[inline]
    pub(super) fn peek(&self) -> Option<&QueueKey> {
        self.keys.first()
    }

    /// Events queued.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when no event is queued.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Queues `key`.
    #[inline]
    pub(super) fn push(&mut self, key: QueueKey) {
        let mut hole = self.keys.len();
        self.keys.push(key);
        while hole > 0 {
            let parent = (hole - 1) / ARITY;
            if !key.before(&self.keys[parent]) {
                break;
            }
            self.keys[hole] = self.keys[parent];
            hole = parent;
        }
        self.keys[hole] = key;
    }

    /// Takes the earliest event.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<QueueKey> {
        let last = self.keys.pop()?;
        let Some(&top) = self.keys.first() else {
            return Some(last);
        };
        // `last` sinks from the root through a hole, each level's earliest child moving up.
        let n = self.keys.len();
        let mut hole = 0;
        loop {
            let first = hole * ARITY + 1;
            if first >= n {
                break;
            }
            let child = if first + ARITY <= n {
                // All four: two independent pairs, then their winners.
                let k = &self.keys[first..first + ARITY];
                let a = usize::from(k[1].before(&k[0]));
                let b = 2 + usize::from(k[3].before(&k[2]));
                first + if k[b].before(&k[a]) { b } else { a }
            } else {
                let mut child = first;
                for c in first + 1..n {
                    if self.keys[c].before(&self.keys[child]) {
                        child = c;
                    }
                }
                child
            };
            if !self.keys[child].before(&last) {
                break;
            }
            self.keys[hole] = self.keys[child];
            hole = child;
        }
        self.keys[hole] = last;
        Some(top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[test]
    fn pops_in_the_order_of_a_binary_heap_of_time_then_seq() {
        let mut q = EventQueue::default();
        let mut model = BinaryHeap::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut seq = 0;
        let mut now = 0;
        for step in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Pushes outnumber pops at first, then pops catch up; many equal times.
            let push = if step < 10_000 {
                !x.is_multiple_of(3)
            } else {
                x.is_multiple_of(3)
            };
            if push || q.is_empty() {
                seq += 1;
                let key = QueueKey {
                    time: now + (x >> 40) % 50,
                    seq,
                    slot: x >> 58,
                };
                q.push(key);
                model.push(Reverse((key.time, key.seq, key.slot)));
            } else {
                let got = q.pop().unwrap();
                let Reverse(want) = model.pop().unwrap();
                assert_eq!((got.time, got.seq, got.slot), want, "step {step}");
                now = got.time;
            }
            assert_eq!(q.len(), model.len());
            assert_eq!(
                q.peek().map(|k| (k.time, k.seq, k.slot)),
                model.peek().map(|r| r.0)
            );
        }
        while let Some(Reverse(want)) = model.pop() {
            let got = q.pop().unwrap();
            assert_eq!((got.time, got.seq, got.slot), want);
        }
        assert!(q.pop().is_none());
    }
}

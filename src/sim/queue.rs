//! The engine's event queue: a calendar of nanosecond buckets for the events of the next
//! few microseconds, and a 4-ary min-heap of event keys for those further off.
//!
//! Every event goes through one push and one pop, and with a hundred links the queue holds
//! thousands of events, nearly all of them due within a link's delay and a frame's time
//! on the wire: a frame arriving, a transmitter or a pacer coming free. A heap's pop walks
//! its levels, each a dependent load and a few comparisons of 16-byte keys, some 190
//! instructions an event on a 128-host fabric. The calendar files such an event under its
//! time modulo the calendar's span, one bucket per nanosecond, and finds the next one by a
//! bit per bucket: a push and a pop cost a few dozen instructions however many events
//! wait. Events past the span (retransmission and rate timers, a wake-up far off) go to
//! the heap, and each pop takes the earlier of the two heads.
//!
//! The order is exactly a binary heap's: by time, then by [`QueueKey::seq`], unique (the
//! engine makes it from the node that caused the event and that node's count of them),
//! so runs stay deterministic and the same as with a heap alone.

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

/// The calendar's span, ns: a power of two. It covers a 4 KB frame's time on a 25 Gb/s
/// wire (1.3 µs) and up to 2.7 µs of propagation, what most events wait; on longer links
/// a frame's arrival waits in the heap, as every event did before the calendar.
const SPAN: usize = 4096;
const WORDS: usize = SPAN / 64;

/// No entry: the end of a bucket's list.
const NIL: u32 = u32::MAX;

/// A calendar event and the next of its bucket.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: QueueKey,
    next: u32,
}

/// The queue: see the module documentation.
#[derive(Debug)]
pub(super) struct EventQueue {
    /// Each bucket's first entry. A bucket holds the events due at one time in
    /// `[base, base + SPAN)` that is `b` modulo `SPAN` (a later time of the same residue
    /// is past the span), listed by seq, earliest first.
    first: Box<[u32; SPAN]>,
    /// The entries, and the free ones' list through `next`.
    entries: Vec<Entry>,
    free: u32,
    /// One bit per non-empty bucket.
    occupied: Box<[u64; WORDS]>,
    /// Events in the calendar.
    held: usize,
    /// The bucket of the calendar's earliest event, when it holds any.
    head: usize,
    /// No event is queued earlier: the time of the last pop.
    base: u64,
    /// Events past the calendar's span when they were pushed.
    far: Heap,
}

impl Default for EventQueue {
    fn default() -> EventQueue {
        EventQueue {
            first: Box::new([NIL; SPAN]),
            entries: Vec::new(),
            free: NIL,
            occupied: Box::new([0; WORDS]),
            held: 0,
            head: 0,
            base: 0,
            far: Heap::default(),
        }
    }
}

impl EventQueue {
    /// The earliest event.
    #[inline]
    pub(super) fn peek(&self) -> Option<&QueueKey> {
        let near = self.near();
        match (near, self.far.peek()) {
            (Some(n), Some(f)) => Some(if f.before(n) { f } else { n }),
            (near, far) => near.or(far),
        }
    }

    /// The calendar's earliest event.
    #[inline(always)]
    fn near(&self) -> Option<&QueueKey> {
        if self.held == 0 {
            return None;
        }
        Some(&self.entries[self.first[self.head] as usize].key)
    }

    /// Events queued.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.held + self.far.keys.len()
    }

    /// True when no event is queued.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queues `key`.
    #[inline]
    pub(super) fn push(&mut self, key: QueueKey) {
        // An event before `base` (none the engine makes) goes to the heap, which orders
        // anything.
        if key.time < self.base || key.time - self.base >= SPAN as u64 {
            self.far.push(key);
            return;
        }
        let e = if self.free == NIL {
            self.entries.push(Entry { key, next: NIL });
            u32::try_from(self.entries.len() - 1).expect("fewer than 2^32 events near")
        } else {
            let e = self.free;
            self.free = self.entries[e as usize].next;
            self.entries[e as usize].key = key;
            e
        };
        let b = key.time as usize & (SPAN - 1);
        // Most buckets hold one event or none: the walk is short.
        let mut after = NIL;
        let mut next = self.first[b];
        while next != NIL && self.entries[next as usize].key.seq < key.seq {
            after = next;
            next = self.entries[next as usize].next;
        }
        self.entries[e as usize].next = next;
        match after {
            NIL => self.first[b] = e,
            a => self.entries[a as usize].next = e,
        }
        if self.held == 0 || key.time < self.entries[self.first[self.head] as usize].key.time {
            self.head = b;
        }
        self.occupied[b / 64] |= 1 << (b % 64);
        self.held += 1;
    }

    /// Takes the earliest event.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<QueueKey> {
        let key = match (self.near(), self.far.peek()) {
            (Some(n), Some(f)) if f.before(n) => self.far.pop(),
            (Some(_), _) => Some(self.pop_near()),
            (None, _) => self.far.pop(),
        }?;
        self.base = key.time;
        Some(key)
    }

    /// Takes the calendar's earliest event (there is one), and finds the next.
    #[inline]
    fn pop_near(&mut self) -> QueueKey {
        let b = self.head;
        let e = self.first[b];
        let Entry { key, next } = self.entries[e as usize];
        self.entries[e as usize].next = self.free;
        self.free = e;
        self.first[b] = next;
        self.held -= 1;
        if next == NIL {
            self.occupied[b / 64] &= !(1 << (b % 64));
            if self.held > 0 {
                self.head = self.next_occupied(b);
            }
        }
        key
    }

    /// The first non-empty bucket from `from` on, wrapping: the next time in the span,
    /// since every event in the calendar lies within `SPAN` of the one just taken.
    fn next_occupied(&self, from: usize) -> usize {
        let w = from / 64;
        let here = self.occupied[w] & (!0u64 << (from % 64));
        if here != 0 {
            return w * 64 + here.trailing_zeros() as usize;
        }
        for k in 1..=WORDS {
            let i = (w + k) % WORDS;
            if self.occupied[i] != 0 {
                return i * 64 + self.occupied[i].trailing_zeros() as usize;
            }
        }
        unreachable!("held > 0: some bucket is occupied")
    }
}

const ARITY: usize = 4;

/// The events past the calendar: a 4-ary min-heap. A binary heap's pop walks log2(n)
/// levels, each a dependent load and a 24-byte move; four children per node halve the
/// levels, and the four sit in one or two cache lines.
#[derive(Debug, Default)]
struct Heap {
    keys: Vec<QueueKey>,
}

impl Heap {
    #[inline]
    fn peek(&self) -> Option<&QueueKey> {
        self.keys.first()
    }

    #[inline]
    fn push(&mut self, key: QueueKey) {
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

    #[inline]
    fn pop(&mut self) -> Option<QueueKey> {
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
        let mut count = 0u64;
        let mut now = 0;
        for step in 0..60_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Pushes outnumber pops at first, then pops catch up.
            let push = if step % 20_000 < 10_000 {
                !x.is_multiple_of(3)
            } else {
                x.is_multiple_of(3)
            };
            if push || q.is_empty() {
                count += 1;
                // Many at one instant, most within the calendar's span, some past it (and
                // some of those within it by the time they are due).
                let ahead = match (x >> 32) % 8 {
                    0..=3 => (x >> 40) % 50,
                    4..=6 => (x >> 40) % (2 * SPAN as u64),
                    _ => (x >> 40) % 100_000,
                };
                let key = QueueKey {
                    time: now + ahead,
                    // Unique, in no order: a bijection of the count.
                    seq: count.wrapping_mul(0x9e37_79b9_7f4a_7c15),
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
                model.peek().map(|r| r.0),
                "step {step}"
            );
        }
        while let Some(Reverse(want)) = model.pop() {
            let got = q.pop().unwrap();
            assert_eq!((got.time, got.seq, got.slot), want);
        }
        assert!(q.pop().is_none());
        assert!(q.peek().is_none());
    }
}

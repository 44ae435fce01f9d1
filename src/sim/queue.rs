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
//! The order is exactly a binary heap's: by time, then by seq, unique (the engine makes
//! it from the node that caused the event and that node's count of them), so runs stay
//! deterministic and the same as with a heap alone.
//!
//! A calendar entry holds its event, not a pointer to it: the engine's next event is then
//! one load away (the head bucket's earliest entry, which the queue keeps) instead of two
//! (the entry, then the event in a slab), and the engine can start loading the frame it
//! delivers while the current event runs. Those loads miss the cache on a fabric of any
//! size (thousands of events wait, each queued a link's delay ago), and with a slab the
//! second one, the event's slot, was the loop's costliest instruction. An entry is one
//! cache line. The heap moves 24-byte keys and keeps its events aside, by slot: few events
//! are that far off.

/// A far event's place in the heap: ordered by `time`, then `seq`. The event waits in
/// [`EventQueue::far_items`] at `slot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FarKey {
    /// When the event happens, ns.
    time: u64,
    /// The tie-break: unique among the queued events.
    seq: u64,
    /// Where the event waits. A whole word: a 4-byte slot left padding, which the heap's
    /// moves read back as part of an 8-byte load right after the 4-byte store that wrote
    /// the slot, and the CPU cannot forward that (a stall on every push).
    slot: u64,
}

/// Time and seq as one number, compared in one step.
#[inline(always)]
fn order(time: u64, seq: u64) -> u128 {
    (u128::from(time) << 64) | u128::from(seq)
}

impl FarKey {
    #[inline(always)]
    fn before(&self, other: &FarKey) -> bool {
        order(self.time, self.seq) < order(other.time, other.seq)
    }
}

/// The calendar's span, ns: a power of two. It covers a 4 KB frame's time on a 25 Gb/s
/// wire (1.3 µs) and up to 2.7 µs of propagation, what most events wait; on longer links
/// a frame's arrival waits in the heap, as every event did before the calendar.
const SPAN: usize = 4096;
const WORDS: usize = SPAN / 64;

/// No entry: the end of a bucket's list.
const NIL: u32 = u32::MAX;

/// A calendar event and the next of its bucket; a free entry holds `T::default()`.
/// Aligned to a cache line: the engine's event is 40 bytes, and the entry then fills one
/// line and never straddles two.
#[derive(Debug)]
#[repr(align(64))]
struct Entry<T> {
    time: u64,
    seq: u64,
    next: u32,
    item: T,
}

/// Which queue holds the earliest event.
#[derive(Clone, Copy)]
enum Head {
    Near,
    Far,
}

/// The queue: see the module documentation.
#[derive(Debug)]
pub(super) struct EventQueue<T> {
    /// Each bucket's first entry. A bucket holds the events due at one time in
    /// `[base, base + SPAN)` that is `b` modulo `SPAN` (a later time of the same residue
    /// is past the span), last pushed first: a push reads no other entry.
    first: Box<[u32; SPAN]>,
    /// The entries, and the free ones' list through `next`.
    entries: Vec<Entry<T>>,
    free: u32,
    /// One bit per non-empty bucket.
    occupied: Box<[u64; WORDS]>,
    /// Events in the calendar.
    held: usize,
    /// The bucket of the calendar's earliest event, when it holds any.
    head: usize,
    /// That event's entry (the least seq of its bucket), and the entry before it in the
    /// bucket's list (`NIL`: it is the first).
    head_entry: u32,
    head_prev: u32,
    /// No event is queued earlier: the time of the last pop.
    base: u64,
    /// Events past the calendar's span when they were pushed.
    far: Heap,
    /// The heap's events, by their keys' slots; a free one holds `T::default()`.
    far_items: Vec<T>,
    /// Free slots of `far_items`.
    far_free: Vec<u64>,
}

impl<T> Default for EventQueue<T> {
    fn default() -> EventQueue<T> {
        EventQueue {
            first: Box::new([NIL; SPAN]),
            entries: Vec::new(),
            free: NIL,
            occupied: Box::new([0; WORDS]),
            held: 0,
            head: 0,
            head_entry: NIL,
            head_prev: NIL,
            base: 0,
            far: Heap::default(),
            far_items: Vec::new(),
            far_free: Vec::new(),
        }
    }
}

impl<T: Default> EventQueue<T> {
    /// The earliest event: its time, and the event.
    #[inline]
    pub(super) fn peek(&self) -> Option<(u64, &T)> {
        match self.earliest()? {
            Head::Near => {
                let e = self.near();
                Some((e.time, &e.item))
            }
            Head::Far => {
                let k = self.far.peek()?;
                Some((k.time, &self.far_items[k.slot as usize]))
            }
        }
    }

    /// Which queue holds the earliest event, if any does.
    #[inline(always)]
    fn earliest(&self) -> Option<Head> {
        let far = self.far.peek();
        if self.held == 0 {
            return far.map(|_| Head::Far);
        }
        let n = self.near();
        Some(match far {
            Some(f) if order(f.time, f.seq) < order(n.time, n.seq) => Head::Far,
            _ => Head::Near,
        })
    }

    /// The calendar's earliest entry (it holds one).
    #[inline(always)]
    fn near(&self) -> &Entry<T> {
        &self.entries[self.head_entry as usize]
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

    /// Queues `item` at `time` with tie-break `seq`. Inlined, so that the item is built
    /// where it waits rather than built by the caller and copied (wide loads of narrow
    /// stores just made: a store-forwarding stall on every event).
    #[inline(always)]
    pub(super) fn push(&mut self, time: u64, seq: u64, item: T) {
        // An event before `base` (none the engine makes) goes to the heap, which orders
        // anything.
        if time < self.base || time - self.base >= SPAN as u64 {
            let slot = match self.far_free.pop() {
                Some(slot) => {
                    self.far_items[slot as usize] = item;
                    slot
                }
                None => {
                    self.far_items.push(item);
                    (self.far_items.len() - 1) as u64
                }
            };
            self.far.push(FarKey { time, seq, slot });
            return;
        }
        let b = time as usize & (SPAN - 1);
        let first = self.first[b];
        let e = if self.free == NIL {
            self.entries.push(Entry {
                time,
                seq,
                next: first,
                item,
            });
            u32::try_from(self.entries.len() - 1).expect("fewer than 2^32 events near")
        } else {
            let e = self.free;
            let entry = &mut self.entries[e as usize];
            self.free = entry.next;
            entry.time = time;
            entry.seq = seq;
            entry.next = first;
            entry.item = item;
            e
        };
        self.first[b] = e;
        // A bucket holds one time: an event earlier than the head has a bucket of its
        // own, and one at the head's time joins the head's bucket, ahead of the rest.
        if self.held == 0 || time < self.near().time {
            self.head = b;
            self.head_entry = e;
            self.head_prev = NIL;
        } else if b == self.head {
            if seq < self.near().seq {
                self.head_entry = e;
                self.head_prev = NIL;
            } else if self.head_prev == NIL {
                self.head_prev = e;
            }
        }
        self.occupied[b / 64] |= 1 << (b % 64);
        self.held += 1;
    }

    /// Takes the earliest event if it is due before `end`: its time, and the event.
    #[inline]
    pub(super) fn pop_before(&mut self, end: u64) -> Option<(u64, T)> {
        let (time, item) = match self.earliest()? {
            Head::Near if self.near().time < end => self.pop_near(),
            Head::Far if self.far.peek()?.time < end => {
                let key = self.far.pop()?;
                let item = std::mem::take(&mut self.far_items[key.slot as usize]);
                self.far_free.push(key.slot);
                (key.time, item)
            }
            _ => return None,
        };
        // Not back: the calendar's events stay within its span of `base` when an event
        // queued before it (in the heap) is taken.
        self.base = self.base.max(time);
        Some((time, item))
    }

    /// Takes the earliest event: its time, and the event.
    #[cfg(test)]
    pub(super) fn pop(&mut self) -> Option<(u64, T)> {
        self.pop_before(u64::MAX)
    }

    /// Takes the calendar's earliest event (there is one), and finds the next.
    #[inline]
    fn pop_near(&mut self) -> (u64, T) {
        let b = self.head;
        let e = self.head_entry;
        let free = self.free;
        let entry = &mut self.entries[e as usize];
        let (time, next) = (entry.time, entry.next);
        let item = std::mem::take(&mut entry.item);
        entry.next = free;
        self.free = e;
        match self.head_prev {
            NIL => self.first[b] = next,
            prev => self.entries[prev as usize].next = next,
        }
        self.held -= 1;
        if self.first[b] == NIL {
            self.occupied[b / 64] &= !(1 << (b % 64));
            if self.held == 0 {
                return (time, item);
            }
            self.head = self.next_occupied(b);
        }
        self.find_head_entry();
        (time, item)
    }

    /// Finds the head bucket's earliest event: the least seq on its list. The walk reads
    /// the entries that are taken next.
    #[inline]
    fn find_head_entry(&mut self) {
        let mut at = self.first[self.head];
        let (mut best, mut best_prev, mut prev) = (at, NIL, NIL);
        let mut least = u64::MAX;
        while at != NIL {
            let entry = &self.entries[at as usize];
            if entry.seq < least {
                (least, best, best_prev) = (entry.seq, at, prev);
            }
            (prev, at) = (at, entry.next);
        }
        self.head_entry = best;
        self.head_prev = best_prev;
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

/// The events past the calendar: a 4-ary min-heap of their keys. A binary heap's pop
/// walks log2(n) levels, each a dependent load and a 24-byte move; four children per node
/// halve the levels, and the four sit in one or two cache lines.
#[derive(Debug, Default)]
struct Heap {
    keys: Vec<FarKey>,
}

impl Heap {
    #[inline]
    fn peek(&self) -> Option<&FarKey> {
        self.keys.first()
    }

    #[inline]
    fn push(&mut self, key: FarKey) {
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
    fn pop(&mut self) -> Option<FarKey> {
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
                // some of those within it by the time they are due), a few before the
                // last event taken (which the engine never queues).
                let time = match (x >> 32) % 16 {
                    0..=6 => now + (x >> 40) % 50,
                    7..=12 => now + (x >> 40) % (2 * SPAN as u64),
                    13 | 14 => now + (x >> 40) % 100_000,
                    _ => now.saturating_sub((x >> 40) % 200),
                };
                // Unique seq, in no order: a bijection of the count.
                let seq = count.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let item = (seq, x >> 58);
                q.push(time, seq, item);
                model.push(Reverse((time, seq, item.1)));
            } else {
                let Reverse(want) = model.pop().unwrap();
                // Nothing before the earliest event's time; it, when its time is in.
                assert!(q.pop_before(want.0).is_none(), "step {step}");
                let (time, (seq, tag)) = q.pop_before(want.0 + 1).unwrap();
                assert_eq!((time, seq, tag), want, "step {step}");
                now = time;
            }
            assert_eq!(q.len(), model.len());
            assert_eq!(
                q.peek().map(|(time, &(seq, tag))| (time, seq, tag)),
                model.peek().map(|r| r.0),
                "step {step}"
            );
        }
        while let Some(Reverse(want)) = model.pop() {
            let (time, (seq, tag)) = q.pop().unwrap();
            assert_eq!((time, seq, tag), want);
        }
        assert!(q.pop().is_none());
        assert!(q.peek().is_none());
    }
}

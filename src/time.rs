//! Time as the cores see it: [`Nanos`], nanoseconds on whichever clock the driver runs
//! (monotonic, capture timestamps, or virtual time).

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time or a duration, in nanoseconds.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl Nanos {
    /// The start of every run's clock, or an empty duration.
    pub const ZERO: Nanos = Nanos(0);
    /// The largest representable time (year 2554 as a Unix timestamp).
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// From whole seconds, saturating at [`Nanos::MAX`].
    pub const fn from_secs(secs: u64) -> Nanos {
        Nanos(secs.saturating_mul(1_000_000_000))
    }

    /// From whole microseconds, saturating at [`Nanos::MAX`].
    pub const fn from_micros(micros: u64) -> Nanos {
        Nanos(micros.saturating_mul(1_000))
    }

    /// From whole milliseconds, saturating at [`Nanos::MAX`].
    pub const fn from_millis(millis: u64) -> Nanos {
        Nanos(millis.saturating_mul(1_000_000))
    }

    /// The value in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The value in seconds, as a float for display.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// `self - earlier`, or zero if `earlier` is later.
    pub const fn saturating_sub(self, earlier: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, or [`Nanos::MAX`] on overflow.
    pub const fn saturating_add(self, d: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(d.0))
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 + rhs.0)
    }
}

impl AddAssign for Nanos {
    fn add_assign(&mut self, rhs: Nanos) {
        self.0 += rhs.0;
    }
}

impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 - rhs.0)
    }
}

impl fmt::Display for Nanos {
    /// Seconds with nine decimals, as tshark prints times.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09}",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

impl Nanos {
    /// For people: the largest unit of ns, µs, ms and s that keeps the value at 1 or more,
    /// with up to three decimals ("1 µs", "20 ms", "1.234 s").
    pub fn human(self) -> String {
        let (scale, unit) = match self.0 {
            0..1_000 => return format!("{} ns", self.0),
            1_000..1_000_000 => (1e3, "µs"),
            1_000_000..1_000_000_000 => (1e6, "ms"),
            _ => (1e9, "s"),
        };
        let v = format!("{:.3}", self.0 as f64 / scale);
        let v = v.trim_end_matches('0').trim_end_matches('.');
        format!("{v} {unit}")
    }
}

/// The latest time a driver passed to a core. Cores take `now` from their drivers, and
/// time must not go backwards from one call to the next: checked in debug builds (tests
/// run with them), free in release.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LastTime(Nanos);

impl LastTime {
    /// The latest time.
    pub fn get(self) -> Nanos {
        self.0
    }

    /// Moves to `now`, which must not be before the latest time.
    #[inline]
    pub fn advance(&mut self, now: Nanos) {
        debug_assert!(
            now >= self.0,
            "time went backwards: {now:?} after {:?}",
            self.0
        );
        self.0 = now;
    }
}

/// The total time of a state that frames set, extend or end: a pause whose time a later
/// PFC frame replaces (a longer one extends it, XON ends it now), or an XOFF held until
/// its XON. Overlapping settings count once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    from: Nanos,
    until: Nanos,
    /// Time of the intervals that ended.
    closed: u64,
}

impl Span {
    /// From `now` the state lasts until `until` (`now` ends it; [`Nanos::MAX`]: until
    /// set again).
    pub fn set(&mut self, now: Nanos, until: Nanos) {
        if self.until > now {
            self.until = until.max(now);
        } else {
            self.closed += self.until.0.saturating_sub(self.from.0);
            self.from = now;
            self.until = until.max(now);
        }
    }

    /// Total time in the state up to `now`.
    pub fn total(&self, now: Nanos) -> Nanos {
        Nanos(self.closed + self.until.min(now).0.saturating_sub(self.from.0))
    }

    /// Whether the state holds at `now`.
    pub fn holds(&self, now: Nanos) -> bool {
        self.until > now
    }
}

/// The earlier of two optional times (`None`: no time). A match, not an array of options
/// and `min`: the array is built on the stack and read back at once with wider loads, a
/// store-forwarding stall, and the simulator asks every node after every event.
#[inline]
pub fn earliest(a: Option<Nanos>, b: Option<Nanos>) -> Option<Nanos> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Nanoseconds since the Unix epoch as exact decimal seconds (`"1700000000.123456789"`):
/// JSON readers that hold numbers as doubles (jq, JavaScript) round integers above 2^53,
/// which every epoch time in nanoseconds is, so reports give this string beside `*_ns`.
pub fn epoch_seconds_string(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_counts_overlaps_once_and_ends_early_on_xon() {
        let mut s = Span::default();
        s.set(Nanos(100), Nanos(300)); // pause 100..300
        s.set(Nanos(200), Nanos(400)); // extended to 400
        assert_eq!(s.total(Nanos(250)), Nanos(150));
        s.set(Nanos(350), Nanos(350)); // XON at 350
        assert_eq!(s.total(Nanos(1000)), Nanos(250));
        s.set(Nanos(500), Nanos::MAX); // held until further notice
        assert!(s.holds(Nanos(900)));
        assert_eq!(s.total(Nanos(600)), Nanos(350));
        s.set(Nanos(700), Nanos(700));
        assert_eq!(s.total(Nanos(2000)), Nanos(450));
        assert!(!s.holds(Nanos(700)));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "time went backwards")]
    fn time_going_backwards_is_caught() {
        let mut t = LastTime::default();
        t.advance(Nanos(10));
        t.advance(Nanos(10));
        t.advance(Nanos(9));
    }

    #[test]
    fn human_picks_the_unit() {
        assert_eq!(Nanos(999).human(), "999 ns");
        assert_eq!(Nanos(1000).human(), "1 µs");
        assert_eq!(Nanos(20_000_000).human(), "20 ms");
        assert_eq!(Nanos(1_234_600_000).human(), "1.235 s");
        assert_eq!(Nanos(1_500).human(), "1.5 µs");
    }

    #[test]
    fn display_is_seconds_with_nine_decimals() {
        assert_eq!(Nanos(1_500_000_007).to_string(), "1.500000007");
        assert_eq!(Nanos::from_micros(55).to_string(), "0.000055000");
    }
}

/// The deadlines of many items (a switch's ports, an endpoint's QPs), at most one each,
/// kept so that the earliest is at hand.
///
/// Up to [`FLAT`](Self::FLAT) items a tournament tree holds them: each node the earlier
/// of its two children, the root the earliest, so that a change walks one path up, four
/// levels for a 16-port switch, with nothing stale to skip later. Past that size a heap
/// keeps every deadline, its entries going stale when an item's deadline moves and skipped
/// when they reach the top, so that the cost of a change or a lookup does not grow with
/// the number of items.
#[derive(Debug, Clone, Default)]
pub struct Deadlines {
    /// Each item's deadline in ns, `u64::MAX` without one; `held` tells a deadline at
    /// [`Nanos::MAX`] from none.
    at: Vec<u64>,
    /// The items with a deadline, one bit each.
    held: Bits,
    /// Up to `FLAT` items: the tournament tree, `2 * FLAT` nodes, its root at 1 and its
    /// leaves, one per item, from `width` on; each node a [`Deadlines::packed`] word.
    tree: Vec<u64>,
    /// The tree's leaves: the number of items rounded up to a power of two.
    width: usize,
    /// Past `FLAT` items: every deadline, with stale entries.
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>>,
}

/// A set of indices, one bit each.
#[derive(Debug, Clone, Default)]
struct Bits {
    words: Vec<u64>,
}

impl Bits {
    #[inline]
    fn set(&mut self, i: usize, on: bool) {
        let (w, bit) = (i / 64, 1u64 << (i % 64));
        if w >= self.words.len() {
            if !on {
                return;
            }
            self.words.resize(w + 1, 0);
        }
        if on {
            self.words[w] |= bit;
        } else {
            self.words[w] &= !bit;
        }
    }

    #[inline]
    fn has(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// The first member, in turn from `start` (then from 0 up to it), that `take` accepts.
    fn first_from(&self, start: usize, mut take: impl FnMut(usize) -> bool) -> Option<usize> {
        let words = self.words.len();
        let first = start / 64;
        // The start's word from its bit, the words after it, the words before it, and the
        // start's word below its bit.
        let above = !0u64 << (start % 64);
        let passes = (first..words)
            .map(|w| (w, if w == first { above } else { !0 }))
            .chain((0..first.min(words)).map(|w| (w, !0)))
            .chain((first < words).then_some((first, !above)));
        for (w, mask) in passes {
            let mut bits = self.words[w] & mask;
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                if take(i) {
                    return Some(i);
                }
                bits &= bits - 1;
            }
        }
        None
    }
}

impl Deadlines {
    /// Most items kept without the heap: a power of two.
    pub const FLAT: usize = 128;

    /// A tree node's bits of item index: as many as the indices below `FLAT` take.
    const INDEX_BITS: u32 = {
        assert!(Self::FLAT.is_power_of_two());
        Self::FLAT.trailing_zeros()
    };

    /// The latest time a tree node tells apart, in ns (some four and a half years): later
    /// ones tie.
    const SATURATED: u64 = (1 << (64 - Self::INDEX_BITS)) - 2;

    /// Whether the heap keeps the deadlines.
    #[inline]
    fn heaped(&self) -> bool {
        self.at.len() > Self::FLAT
    }

    /// Item `item`'s deadline is now `at` (`None`: it has none).
    #[inline]
    pub fn set(&mut self, item: usize, at: Option<Nanos>) {
        let key = at.map_or(u64::MAX, |t| t.0);
        if self.at.get(item) != Some(&key) || self.held.has(item) != at.is_some() {
            self.change(item, key, at.is_some());
        }
    }

    /// [`set`](Self::set) when the deadline changes.
    fn change(&mut self, item: usize, key: u64, held: bool) {
        if item >= self.at.len() {
            self.grow(item + 1);
        }
        self.at[item] = key;
        self.held.set(item, held);
        if self.heaped() {
            if held {
                self.heap.push(std::cmp::Reverse((key, item)));
            }
            self.trim();
        } else {
            self.climb(item, Self::word(item, key, held));
        }
    }

    /// Room for `len` items: a wider tree, or past `FLAT` the heap for every deadline.
    #[cold]
    fn grow(&mut self, len: usize) {
        let was_heaped = self.heaped();
        self.at.resize(len, u64::MAX);
        if self.heaped() {
            if !was_heaped {
                self.tree = Vec::new();
                for (i, &t) in self.at.iter().enumerate() {
                    if self.held.has(i) {
                        self.heap.push(std::cmp::Reverse((t, i)));
                    }
                }
            }
            return;
        }
        let width = len.next_power_of_two();
        if self.width != width {
            self.width = width;
            self.tree = vec![u64::MAX; 2 * Self::FLAT];
            for i in 0..len {
                self.tree[width + i] = self.packed(i);
            }
            for node in (1..width).rev() {
                self.tree[node] = self.tree[2 * node].min(self.tree[2 * node + 1]);
            }
        }
    }

    /// Item `item`'s tree word: its time (saturated at [`SATURATED`](Self::SATURATED))
    /// above its index, so that the least word is the earliest deadline and, among those
    /// due together, the lowest index; `u64::MAX` without a deadline.
    #[inline]
    fn packed(&self, item: usize) -> u64 {
        Self::word(item, self.at[item], self.held.has(item))
    }

    /// [`packed`](Self::packed) of an item whose deadline is `at` if it is `held`.
    #[inline]
    fn word(item: usize, at: u64, held: bool) -> u64 {
        if held {
            (at.min(Self::SATURATED) << Self::INDEX_BITS) | item as u64
        } else {
            u64::MAX
        }
    }

    /// Item `item`'s leaf is now `word`: each node on its path to the root again the
    /// earlier of its children.
    #[inline]
    fn climb(&mut self, item: usize, word: u64) {
        // A tree of fixed size, its indices masked to it: no bounds to check on the way.
        const NODES: usize = 2 * Deadlines::FLAT;
        let Ok(tree) = <&mut [u64; NODES]>::try_from(&mut self.tree[..]) else {
            unreachable!("a flat set of deadlines has its tree");
        };
        let mut node = (self.width + item) % NODES;
        tree[node] = word;
        let mut least = word;
        while node > 1 {
            least = least.min(tree[(node ^ 1) % NODES]);
            node /= 2;
            if tree[node] == least {
                // The nodes above depend on this one alone: they stand.
                break;
            }
            tree[node] = least;
        }
    }

    /// Item `item`'s deadline.
    pub fn get(&self, item: usize) -> Option<Nanos> {
        self.held.has(item).then(|| Nanos(self.at[item]))
    }

    /// The earliest deadline of any item, and its item.
    #[inline(always)]
    fn earliest(&self) -> Option<(u64, usize)> {
        if self.heaped() {
            let (t, item) = self.heap.peek()?.0;
            return Some((t, item));
        }
        let root = *self.tree.get(1)?;
        if root == u64::MAX {
            return None;
        }
        if root >> Self::INDEX_BITS < Self::SATURATED {
            let item = (root & ((1 << Self::INDEX_BITS) - 1)) as usize;
            return Some((root >> Self::INDEX_BITS, item));
        }
        self.earliest_exact()
    }

    /// [`earliest`](Self::earliest) when nothing is due within four and a half years,
    /// which the tree does not tell apart.
    #[cold]
    fn earliest_exact(&self) -> Option<(u64, usize)> {
        (0..self.at.len())
            .filter(|&i| self.held.has(i))
            .map(|i| (self.at[i], i))
            .min()
    }

    /// The earliest deadline of any item.
    #[inline]
    pub fn first(&self) -> Option<Nanos> {
        self.earliest().map(|(t, _)| Nanos(t))
    }

    /// An item whose deadline is at or before `now`, earliest first (then lowest index);
    /// its deadline is cleared.
    #[inline]
    pub fn pop_due(&mut self, now: Nanos) -> Option<usize> {
        let (t, item) = self.earliest()?;
        if t > now.0 {
            return None;
        }
        self.take(item);
        Some(item)
    }

    /// Clears the earliest deadline, item `item`'s.
    fn take(&mut self, item: usize) {
        self.at[item] = u64::MAX;
        self.held.set(item, false);
        if self.heaped() {
            self.heap.pop();
            self.trim();
        } else {
            self.climb(item, u64::MAX);
        }
    }

    /// The first item in turn from `start` (wrapping past the last to 0) whose deadline
    /// is at or before `now`: what a look at every item in that order would find, looking
    /// only at those with a deadline (a sender's QPs take turns this way).
    pub fn first_due_in_turn(&self, start: usize, now: Nanos) -> Option<usize> {
        self.held.first_from(start, |i| self.at[i] <= now.0)
    }

    /// Drops stale entries from the heap's top, so that [`first`](Self::first) is exact.
    fn trim(&mut self) {
        while let Some(&std::cmp::Reverse((t, item))) = self.heap.peek() {
            if self.at[item] == t && self.held.has(item) {
                break;
            }
            self.heap.pop();
        }
    }
}

#[cfg(test)]
mod deadline_tests {
    use super::*;

    /// The item a look at every one finds due first at `now`: the earliest, then the
    /// lowest index.
    fn due_first(model: &[Option<Nanos>], now: Nanos) -> Option<usize> {
        model
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.filter(|&t| t <= now).map(|t| (t, i)))
            .min()
            .map(|(_, i)| i)
    }

    /// The earliest deadline, the item due first and `first_due_in_turn` are what a look
    /// at every item finds, through deadlines set, moved, cleared and popped, on the flat
    /// size and past it, with deadlines years away and at the end of time (`Nanos::MAX`,
    /// which is not none) among them.
    #[test]
    fn every_answer_is_what_a_look_at_every_item_finds() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..300 {
            let n = 1 + (next() % 200) as usize;
            let mut d = Deadlines::default();
            let mut model: Vec<Option<Nanos>> = vec![None; n];
            for step in 0..400 {
                let r = next();
                let item = (r % n as u64) as usize;
                let now = if r % 61 == 0 {
                    Nanos::MAX
                } else {
                    Nanos((r >> 20) % 100)
                };
                match (r >> 40) % 4 {
                    0 => {
                        d.set(item, None);
                        model[item] = None;
                    }
                    3 => {
                        let want = due_first(&model, now);
                        assert_eq!(d.pop_due(now), want, "round {round} step {step}");
                        if let Some(i) = want {
                            model[i] = None;
                        }
                    }
                    _ => {
                        let t = Some(match r % 53 {
                            0 => Nanos::MAX,
                            // Past the years that a tree word tells apart.
                            1..=3 => Nanos((1 << 60) + (r >> 30) % 4),
                            _ => Nanos((r >> 30) % 100),
                        });
                        d.set(item, t);
                        model[item] = t;
                    }
                }
                assert_eq!(
                    d.first(),
                    model.iter().flatten().min().copied(),
                    "round {round} step {step}"
                );
                assert_eq!(d.get(item), model[item]);
                let start = ((r >> 50) % n as u64) as usize;
                let want = (0..n)
                    .map(|k| (start + k) % n)
                    .find(|&i| model[i].is_some_and(|t| t <= now));
                assert_eq!(
                    d.first_due_in_turn(start, now),
                    want,
                    "round {round} step {step}"
                );
            }
        }
    }

    #[test]
    fn the_first_deadline_follows_every_change() {
        let mut d = Deadlines::default();
        assert_eq!(d.first(), None);
        d.set(3, Some(Nanos(30)));
        d.set(1, Some(Nanos(10)));
        d.set(2, Some(Nanos(20)));
        assert_eq!(d.first(), Some(Nanos(10)));
        d.set(1, Some(Nanos(40)));
        assert_eq!(d.first(), Some(Nanos(20)));
        d.set(2, None);
        assert_eq!(d.first(), Some(Nanos(30)));
        assert_eq!(d.get(2), None);
        assert_eq!(d.get(9), None);
        assert_eq!(d.pop_due(Nanos(29)), None);
        assert_eq!(d.pop_due(Nanos(50)), Some(3));
        assert_eq!(d.pop_due(Nanos(50)), Some(1));
        assert_eq!(d.pop_due(Nanos(50)), None);
        assert_eq!(d.first(), None);
    }

    #[test]
    fn past_the_flat_size_the_heap_keeps_every_deadline() {
        let mut d = Deadlines::default();
        let mut model: Vec<Option<Nanos>> = Vec::new();
        let mut x = 12345u64;
        for step in 0..2_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Items grow past FLAT partway through.
            let items = if step < 500 { 6 } else { Deadlines::FLAT + 8 };
            let item = (x >> 33) as usize % items;
            let at = (!(x >> 20).is_multiple_of(4)).then_some(Nanos((x >> 40) % 1000));
            d.set(item, at);
            if model.len() <= item {
                model.resize(item + 1, None);
            }
            model[item] = at;
            assert_eq!(
                d.first(),
                model.iter().flatten().min().copied(),
                "step {step}"
            );
            if step.is_multiple_of(7) {
                let now = Nanos((x >> 12) % 1000);
                let want = due_first(&model, now);
                assert_eq!(d.pop_due(now), want, "step {step}");
                if let Some(i) = want {
                    model[i] = None;
                }
            }
        }
    }

    #[test]
    fn items_due_together_come_lowest_index_first() {
        let mut d = Deadlines::default();
        for item in [5, 0, 3] {
            d.set(item, Some(Nanos(7)));
        }
        let due: Vec<usize> = std::iter::from_fn(|| d.pop_due(Nanos(7))).collect();
        assert_eq!(due, [0, 3, 5]);
    }
}

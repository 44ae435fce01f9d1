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
/// kept so that the earliest is found without looking at every item: a heap whose
/// entries go stale when an item's deadline moves, skipped when they reach the top. The
/// cost of a change or a lookup does not grow with the number of items. Up to
/// [`SCANNED`](Self::SCANNED) items there is no heap: looking at each costs less than
/// keeping it (a two-port switch moves a port's deadline with every frame).
#[derive(Debug, Clone, Default)]
pub struct Deadlines {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(Nanos, usize)>>,
    at: Vec<Option<Nanos>>,
    /// The items with a deadline, one bit each, for
    /// [`first_due_in_turn`](Self::first_due_in_turn).
    held: Bits,
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
    /// Most items looked at one by one, without the heap.
    pub const SCANNED: usize = 8;

    /// Item `item`'s deadline is now `at` (`None`: it has none).
    #[inline]
    pub fn set(&mut self, item: usize, at: Option<Nanos>) {
        let scanned = self.at.len() <= Self::SCANNED;
        match self.at.get_mut(item) {
            Some(old) if *old == at => return,
            Some(old) if scanned => *old = at,
            _ => self.change(item, at),
        }
        self.held.set(item, at.is_some());
    }

    /// [`set`](Self::set) when the deadline moves and the heap may need to know.
    fn change(&mut self, item: usize, at: Option<Nanos>) {
        if item >= self.at.len() {
            let scanned = self.at.len() <= Self::SCANNED;
            self.at.resize(item + 1, None);
            if scanned && self.at.len() > Self::SCANNED {
                // Past the scanned size: the heap takes over every deadline.
                for (i, t) in self.at.iter().enumerate() {
                    if let Some(t) = *t {
                        self.heap.push(std::cmp::Reverse((t, i)));
                    }
                }
            }
        }
        self.at[item] = at;
        if self.at.len() <= Self::SCANNED {
            return;
        }
        if let Some(t) = at {
            self.heap.push(std::cmp::Reverse((t, item)));
        }
        self.trim();
    }

    /// Item `item`'s deadline.
    pub fn get(&self, item: usize) -> Option<Nanos> {
        self.at.get(item).copied().flatten()
    }

    /// The earliest deadline of any item.
    pub fn first(&self) -> Option<Nanos> {
        if self.at.len() <= Self::SCANNED {
            return self.at.iter().flatten().min().copied();
        }
        self.heap.peek().map(|r| r.0.0)
    }

    /// An item whose deadline is at or before `now`, earliest first (then lowest index);
    /// its deadline is cleared.
    pub fn pop_due(&mut self, now: Nanos) -> Option<usize> {
        if self.at.len() <= Self::SCANNED {
            let (item, _) = self
                .at
                .iter()
                .enumerate()
                .filter_map(|(i, t)| t.filter(|&t| t <= now).map(|t| (i, t)))
                .min_by_key(|&(i, t)| (t, i))?;
            self.at[item] = None;
            self.held.set(item, false);
            return Some(item);
        }
        let &std::cmp::Reverse((t, item)) = self.heap.peek()?;
        if t > now {
            return None;
        }
        self.heap.pop();
        self.at[item] = None;
        self.held.set(item, false);
        self.trim();
        Some(item)
    }

    /// The first item in turn from `start` (wrapping past the last to 0) whose deadline
    /// is at or before `now`: what a look at every item in that order would find, looking
    /// only at those with a deadline (a sender's QPs take turns this way).
    pub fn first_due_in_turn(&self, start: usize, now: Nanos) -> Option<usize> {
        self.held
            .first_from(start, |i| self.at[i].is_some_and(|t| t <= now))
    }

    /// Drops stale entries from the top, so that [`first`](Self::first) is exact.
    fn trim(&mut self) {
        while let Some(&std::cmp::Reverse((t, item))) = self.heap.peek() {
            if self.at[item] == Some(t) {
                break;
            }
            self.heap.pop();
        }
    }
}

#[cfg(test)]
mod deadline_tests {
    use super::*;

    /// `first_due_in_turn` finds what a look at every item from `start` (wrapping) finds,
    /// through deadlines set, moved, cleared and popped, on the scanned size and past it.
    #[test]
    fn the_first_due_in_turn_is_what_a_look_at_every_item_finds() {
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
                let now = Nanos((r >> 20) % 100);
                match (r >> 40) % 4 {
                    0 => {
                        d.set(item, None);
                        model[item] = None;
                    }
                    3 => {
                        if let Some(i) = d.pop_due(now) {
                            assert!(model[i].is_some_and(|t| t <= now));
                            model[i] = None;
                        }
                    }
                    _ => {
                        let t = Some(Nanos((r >> 30) % 100));
                        d.set(item, t);
                        model[item] = t;
                    }
                }
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
    fn past_the_scanned_size_the_heap_keeps_every_deadline() {
        let mut d = Deadlines::default();
        let mut model: Vec<Option<Nanos>> = Vec::new();
        let mut x = 12345u64;
        for step in 0..2_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Items grow past SCANNED partway through.
            let items = if step < 500 { 6 } else { 40 };
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
                let want = model
                    .iter()
                    .enumerate()
                    .filter_map(|(i, t)| t.filter(|&t| t <= now).map(|t| (t, i)))
                    .min()
                    .map(|(_, i)| i);
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

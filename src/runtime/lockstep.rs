//! Emulated time that dilates instead of breaking, for threads that emulate one fabric
//! together (the lab's switch and its hosts).
//!
//! Two bounds hold the threads together, those of a conservative parallel simulation.
//!
//! - **The cores' safe time.** Each thread says, before it reads its ports, from what
//!   emulated time on it may still release a frame ([`Lockstep::running`]: its cores'
//!   time), and when it waits, its next own event ([`Lockstep::waiting`]). A peer's
//!   driver runs a core's event only when no frame can still land before it (see
//!   `Driver::safe_time` in [`super::ports`]), with the frames' departures carried beside
//!   the veths ([`super::departures`]). This is what makes the lab its twin.
//! - **The pacing clock.** Each thread paces its rounds by one shared clock: the wall
//!   clock less a lag ([`Dilation`]) that only grows. After every round a thread publishes
//!   the emulated time up to which it has read its ports and safely run its cores; no
//!   thread runs its clock more than a lookahead past the slowest peer's published time. A
//!   thread that would pass the bound (its peer was descheduled, or waits on it) raises
//!   the lag so that the clock reads the bound, and waits. The stalled thread, when it runs
//!   again, finds the clock where it left off: the stall cost wall time, not fidelity.
//!   Without this, a host thread kept sending on its own clock while the switch's thread
//!   was stalled, and frames that a pause should have stopped were already in when the
//!   switch woke: a queue past its buffer that no switch can have.
//!
//! A frame nobody recorded a departure for carries the kernel's receive time, a
//! wall-clock time; [`Dilation::emulated`] maps it to the emulated time of that instant,
//! with the lag then in force (a frame that waited in a socket while the lag grew keeps
//! the time it was sent at).
//!
//! Sleeping threads publish too: a thread in lockstep wakes at least every
//! [`REFRESH`] to say it has seen everything up to then, so that an idle peer holds
//! nobody back, while a descheduled one does.

use crate::time::Nanos;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A thread in lockstep sleeps at most this long between rounds: its published time stays
/// within this (plus its wake-up latency) of the clock while it is idle.
pub const REFRESH: Duration = Duration::from_micros(50);
/// How often a held thread looks whether its peers have moved on.
pub const HOLD_POLL: Duration = Duration::from_micros(10);
/// Lag changes this close together (wall-clock ns) are one entry of the history: a
/// receive time in between maps to up to this much earlier than it was.
const COALESCE_NS: u64 = 20_000;
/// Entries of the lag's history kept (with [`COALESCE_NS`], at least 80 ms of changes):
/// older receive times map with the oldest lag kept.
const HISTORY: usize = 4096;

/// How far an emulated clock lags the wall clock, and since when each lag held.
#[derive(Debug, Default)]
pub struct Dilation {
    /// The lag now, ns.
    lag: AtomicU64,
    /// (wall-clock time since the origin, the lag from then on), oldest first.
    history: Mutex<VecDeque<(u64, u64)>>,
}

impl Dilation {
    /// The lag now.
    pub fn lag(&self) -> Nanos {
        Nanos(self.lag.load(Ordering::Acquire))
    }

    /// Raises the lag to `lag` at wall-clock time `wall` (since the origin); a smaller
    /// lag changes nothing.
    pub fn raise(&self, wall: Nanos, lag: Nanos) {
        if self.lag.fetch_max(lag.0, Ordering::AcqRel) >= lag.0 {
            return;
        }
        let mut h = self
            .history
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match h.back_mut() {
            Some(last) if wall.0.saturating_sub(last.0) < COALESCE_NS => {
                last.1 = last.1.max(lag.0);
            }
            _ => {
                if h.len() == HISTORY {
                    h.pop_front();
                }
                h.push_back((wall.0, lag.0));
            }
        }
    }

    /// The emulated time of wall-clock time `wall` (since the origin): less the lag in
    /// force then.
    pub fn emulated(&self, wall: Nanos) -> Nanos {
        let h = self
            .history
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let k = h.partition_point(|&(at, _)| at <= wall.0);
        let lag = match k {
            0 => 0,
            k => h[k - 1].1,
        };
        Nanos(wall.0.saturating_sub(lag))
    }
}

/// What one thread has published.
#[derive(Debug)]
struct Party {
    /// The emulated time up to which it has read its ports and run its cores.
    through: AtomicU64,
    /// Until it has joined and once it has left: it holds nobody back then.
    gone: AtomicBool,
    /// The earliest time on the emulated clock at which it may still release a frame:
    /// while it runs a round, the time its cores are at; while it waits ([`IDLE`] set),
    /// its cores' next own event, before anything a peer sends it.
    promise: AtomicU64,
}

/// The bit of [`Party::promise`] that says the party is waiting for frames or its next
/// event rather than running a round.
const IDLE: u64 = 1 << 63;

/// Threads that emulate one fabric together, each no more than `lookahead` ahead of the
/// slowest of the others.
#[derive(Debug)]
pub struct Lockstep {
    lookahead: Nanos,
    parties: Vec<Party>,
    dilation: Arc<Dilation>,
}

impl Lockstep {
    /// `parties` threads, none to run more than `lookahead` ahead of another.
    pub fn new(parties: usize, lookahead: Nanos) -> Arc<Lockstep> {
        Arc::new(Lockstep {
            lookahead,
            parties: (0..parties)
                .map(|_| Party {
                    through: AtomicU64::new(0),
                    gone: AtomicBool::new(true),
                    promise: AtomicU64::new(0),
                })
                .collect(),
            dilation: Arc::new(Dilation::default()),
        })
    }

    /// The shared lag of the parties' clock.
    pub fn dilation(&self) -> &Arc<Dilation> {
        &self.dilation
    }

    /// Party `me` has read its ports and run its cores up to `t`.
    pub fn publish(&self, me: usize, t: Nanos) {
        if let Some(p) = self.parties.get(me) {
            p.through.fetch_max(t.0, Ordering::AcqRel);
        }
    }

    /// Party `me` runs from `t` on: it holds the others back from now on.
    pub fn join(&self, me: usize, t: Nanos) {
        if let Some(p) = self.parties.get(me) {
            p.through.fetch_max(t.0, Ordering::AcqRel);
            p.promise.store(t.0.min(IDLE - 1), Ordering::SeqCst);
            p.gone.store(false, Ordering::Release);
        }
    }

    /// Party `me` runs a round with its cores at `t` and up: it may release frames from
    /// `t` on. Said before it reads its ports, so that a peer that finds a frame it sent
    /// read also finds this.
    pub fn running(&self, me: usize, t: Nanos) {
        if let Some(p) = self.parties.get(me) {
            p.promise.store(t.0.min(IDLE - 1), Ordering::SeqCst);
        }
    }

    /// Party `me` waits: of its own accord it releases nothing before `next` (a timer, a
    /// frame on its emulated wire), only in answer to what a peer sends it.
    pub fn waiting(&self, me: usize, next: Nanos) {
        if let Some(p) = self.parties.get(me) {
            p.promise
                .store(next.0.min(IDLE - 1) | IDLE, Ordering::SeqCst);
        }
    }

    /// The earliest time any other party may release a frame (`None`: no other party),
    /// given that nothing party `me` sends reaches a waiting peer before `answer`: a
    /// waiting party releases nothing before its next event or that.
    pub fn earliest_release(&self, me: usize, answer: Nanos) -> Option<Nanos> {
        self.parties
            .iter()
            .enumerate()
            .filter(|&(k, p)| k != me && !p.gone.load(Ordering::SeqCst))
            .map(|(_, p)| {
                let promise = p.promise.load(Ordering::SeqCst);
                if promise & IDLE != 0 {
                    Nanos(promise & !IDLE).min(answer)
                } else {
                    Nanos(promise)
                }
            })
            .min()
    }

    /// Party `me` has stopped: it holds nobody back from now on.
    pub fn leave(&self, me: usize) {
        if let Some(p) = self.parties.get(me) {
            p.gone.store(true, Ordering::Release);
        }
    }

    /// The latest emulated time party `me` may run to: a lookahead past the slowest other
    /// party's published time (`None`: no other party holds it back).
    pub fn bound(&self, me: usize) -> Option<Nanos> {
        self.parties
            .iter()
            .enumerate()
            .filter(|&(k, p)| k != me && !p.gone.load(Ordering::Acquire))
            .map(|(_, p)| Nanos(p.through.load(Ordering::Acquire)))
            .min()
            .map(|t| t + self.lookahead)
    }
}

/// A thread's place in a [`Lockstep`]: the shared clock's origin, and its index. It
/// joins when its driver starts and leaves when the driver is taken apart or dropped
/// (also on an early return), so that it never holds the others back once it has gone.
#[derive(Debug, Clone)]
pub struct Member {
    /// The threads in lockstep.
    pub lockstep: Arc<Lockstep>,
    /// This thread's index among them.
    pub me: usize,
    /// The instant every member's clock reads 0 (less the lag).
    pub origin: std::time::Instant,
}

impl Member {
    /// This member's clock: from the shared origin, dilated by the shared lag.
    pub fn clock(&self) -> super::Clock {
        super::Clock::from_origin(self.origin).dilated(Arc::clone(&self.lockstep.dilation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A receive time maps with the lag in force when it was taken, not with the lag the
    /// clock has when the frame is read.
    #[test]
    fn a_receive_time_keeps_the_lag_of_its_instant() {
        let d = Dilation::default();
        assert_eq!(d.emulated(Nanos(1_000)), Nanos(1_000));
        d.raise(Nanos(100_000), Nanos(30_000));
        d.raise(Nanos(500_000), Nanos(80_000));
        // A smaller lag is no change.
        d.raise(Nanos(600_000), Nanos(10_000));
        assert_eq!(d.lag(), Nanos(80_000));
        assert_eq!(d.emulated(Nanos(50_000)), Nanos(50_000));
        assert_eq!(d.emulated(Nanos(200_000)), Nanos(170_000));
        assert_eq!(d.emulated(Nanos(700_000)), Nanos(620_000));
        // Raises close together are one step, at the first one's time, to the larger lag.
        d.raise(Nanos(705_000), Nanos(90_000));
        d.raise(Nanos(710_000), Nanos(95_000));
        assert_eq!(d.emulated(Nanos(720_000)), Nanos(625_000));
    }

    /// A party is held to a lookahead past the slowest other one, until that one leaves.
    #[test]
    fn the_slowest_party_bounds_the_others() {
        let l = Lockstep::new(3, Nanos(100));
        // Until they join, parties hold nobody back.
        assert_eq!(l.bound(0), None);
        for k in 0..3 {
            l.join(k, Nanos::ZERO);
        }
        l.publish(0, Nanos(5_000));
        l.publish(1, Nanos(2_000));
        l.publish(2, Nanos(9_000));
        assert_eq!(l.bound(0), Some(Nanos(2_100)));
        assert_eq!(l.bound(1), Some(Nanos(5_100)));
        // Published times only move forward.
        l.publish(1, Nanos(1_000));
        assert_eq!(l.bound(0), Some(Nanos(2_100)));
        l.leave(1);
        assert_eq!(l.bound(0), Some(Nanos(9_100)));
        l.leave(2);
        assert_eq!(l.bound(0), None);
    }
}

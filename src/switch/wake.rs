//! When each port next needs the switch, kept up to date as ports change, so that the
//! next deadline and the next port free to transmit are found without scanning every port
//! and queue: the cost of an event does not grow with the port count.
//!
//! Every change to what a port's deadlines depend on (its queues, control frames, the
//! pause it received, its refresh timers, its watchdog state, its transmitter) *touches*
//! the port; every public entry point of the switch *settles* before it returns, which
//! recomputes the touched ports' deadlines and files those that moved in two
//! [`Deadlines`] (transmit and timers): a tournament tree up to 128 ports, a heap past
//! that. In debug builds [`Switch::poll_timeout`] checks the result against a scan of
//! every port.
//!
//! [`Switch::poll_timeout`]: super::Switch::poll_timeout

use super::Port;
use crate::time::{Deadlines, Nanos};

/// What the deadlines depend on besides the ports.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rules {
    /// The watchdog's forward action: a stormed queue ignores pause.
    pub forward_stormed: bool,
    /// Whether the watchdog runs at all.
    pub watchdog: bool,
    /// The queues that carry a lossless class (the ones the watchdog watches), as bits.
    pub lossless_queues: u8,
}

/// The ports' deadlines: see the module documentation.
#[derive(Debug, Default)]
pub(super) struct Wakes {
    /// When each port may next transmit (a control frame, or a data queue's ready head).
    tx: Deadlines,
    /// Each port's next PFC refresh or flow-control packet.
    timers: Deadlines,
    /// Whether the watchdog must poll for each port (a stormed queue, or a paused lossless
    /// queue holding frames).
    watchdog: Vec<bool>,
    /// Ports touched since the last settle, each once (`touched[p]` says whether it is in).
    dirty: Vec<usize>,
    touched: Vec<bool>,
    /// Ports whose `watchdog` is set.
    watchdog_ports: usize,
}

impl Wakes {
    /// Deadlines for `ports` ports, all idle.
    pub(super) fn new(ports: usize) -> Wakes {
        Wakes {
            watchdog: vec![false; ports],
            touched: vec![false; ports],
            ..Wakes::default()
        }
    }

    /// Port `port` changed: recompute its deadlines at the next settle.
    #[inline]
    pub(super) fn touch(&mut self, port: usize) {
        if let Some(t) = self.touched.get_mut(port)
            && !*t
        {
            *t = true;
            self.dirty.push(port);
        }
    }

    /// Recomputes the touched ports' deadlines, so that [`next`](Self::next) is exact.
    /// Inlined for the common case of nothing touched (a frame queued behind a head).
    #[inline]
    pub(super) fn settle(&mut self, ports: &[Port], rules: Rules) {
        if !self.dirty.is_empty() {
            self.settle_touched(ports, rules);
        }
    }

    fn settle_touched(&mut self, ports: &[Port], rules: Rules) {
        for port in self.dirty.drain(..) {
            self.touched[port] = false;
            let p = &ports[port];
            self.tx.set(port, p.tx_wake(rules.forward_stormed));
            self.timers.set(port, p.timer_wake());
            let watchdog = rules.watchdog && p.wants_watchdog(rules.lossless_queues);
            let old = std::mem::replace(&mut self.watchdog[port], watchdog);
            self.watchdog_ports = self.watchdog_ports + usize::from(watchdog) - usize::from(old);
        }
    }

    /// The earliest transmit and timer deadlines, and whether the watchdog must poll.
    pub(super) fn next(&self) -> (Option<Nanos>, Option<Nanos>, bool) {
        (
            self.tx.first(),
            self.timers.first(),
            self.watchdog_ports > 0,
        )
    }

    /// Whether a port's transmit deadline has come by `now` (the deadlines settled).
    #[inline]
    pub(super) fn tx_due(&self, now: Nanos) -> bool {
        debug_assert!(self.dirty.is_empty(), "asked before a settle");
        self.tx.first().is_some_and(|t| t <= now)
    }

    /// A port free to transmit at `now`, earliest deadline first (then lowest index). It
    /// is touched: whatever it does next, its deadline is recomputed at the next settle.
    pub(super) fn pop_tx_due(&mut self, now: Nanos) -> Option<usize> {
        self.tx.pop_due(now).inspect(|&p| self.touch(p))
    }

    /// A port with a refresh timer due at `now`, touched as [`pop_tx_due`](Self::pop_tx_due)'s.
    pub(super) fn pop_timer_due(&mut self, now: Nanos) -> Option<usize> {
        self.timers.pop_due(now).inspect(|&p| self.touch(p))
    }
}

impl Port {
    /// When the port may next transmit: a control frame as soon as the transmitter is
    /// free, data once a queue's head is also no longer paused; `None` when nothing waits
    /// or its transmit side is shut.
    pub(super) fn tx_wake(&self, forward_stormed: bool) -> Option<Nanos> {
        if !self.tx.enabled {
            return None;
        }
        let free = self.tx.free_at();
        if !self.control.is_empty() {
            return Some(free);
        }
        let mut ready: Option<Nanos> = None;
        let mut busy = self.nonempty;
        while busy != 0 {
            let q = busy.trailing_zeros() as usize;
            busy &= busy - 1;
            if !self.head_has_credit(q) {
                // It waits for the peer's flow-control packet, which touches the port.
                continue;
            }
            let at = if forward_stormed && self.is_stormed(q) {
                Nanos::ZERO
            } else {
                self.paused_until(q)
            }
            .max(self.head_ready_at(q));
            ready = Some(ready.map_or(at, |r| r.min(at)));
        }
        ready.map(|r| r.max(free))
    }

    /// The port's next PFC refresh, if it holds its peer in XOFF, or its next
    /// flow-control packet, with credit flow control.
    pub(super) fn timer_wake(&self) -> Option<Nanos> {
        let refresh = if self.refreshing == 0 {
            None
        } else {
            self.refresh_at.iter().flatten().min().copied()
        };
        match self.credit.as_ref().and_then(|c| c.next_due()) {
            Some(fc) => Some(refresh.map_or(fc, |r| r.min(fc))),
            None => refresh,
        }
    }

    /// PG `pg`'s next XOFF refresh is at `at` (`None`: it holds no XOFF).
    pub(super) fn set_refresh(&mut self, pg: usize, at: Option<Nanos>) {
        self.refresh_at[pg] = at;
        let bit = 1 << pg;
        if at.is_some() {
            self.refreshing |= bit;
        } else {
            self.refreshing &= !bit;
        }
    }

    /// Whether the watchdog has something to watch on this port: a stormed queue, or a
    /// lossless queue holding frames that is paused past its last progress.
    pub(super) fn wants_watchdog(&self, lossless_queues: u8) -> bool {
        if self.stormed != 0 {
            return true;
        }
        let mut held = self.nonempty & lossless_queues;
        while held != 0 {
            let q = held.trailing_zeros() as usize;
            held &= held - 1;
            if self.paused_until(q) > self.queues[q].last_progress {
                return true;
            }
        }
        false
    }
}

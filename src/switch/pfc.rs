//! PFC: pausing the ingress peer when a lossless priority group fills (XOFF, refreshed
//! while it holds, XON when it drains), honouring the PFC and PAUSE frames the switch
//! receives, and the PFC watchdog that breaks pause storms.

use super::{DropCause, Entry, Incoming, Note, Switch};
use crate::config::WatchdogAction;
use crate::time::Nanos;
use crate::wire::pfc::{MacControl, PfcRepr, PrioritySet, pause_duration};
use crate::wire::{self, FrameMeta};

impl super::Port {
    /// Holds queue `q` as stormed, or no longer.
    pub(super) fn set_stormed(&mut self, q: usize, stormed: bool) {
        let bit = 1 << q;
        if stormed {
            self.stormed |= bit;
        } else {
            self.stormed &= !bit;
        }
    }

    /// Whether the watchdog holds queue `q` as stormed.
    #[inline]
    pub(super) fn is_stormed(&self, q: usize) -> bool {
        self.stormed & (1 << q) != 0
    }
}

/// A storm the watchdog detected: on which queue, when, and when it restored it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StormRecord {
    /// The egress port.
    pub port: usize,
    /// The queue.
    pub queue: usize,
    /// The poll that detected it.
    pub detected: Nanos,
    /// The poll that restored it, if one did.
    pub restored: Option<Nanos>,
}

/// Storms kept in [`Switch::storms`]; later ones are only counted.
pub const MAX_STORM_RECORDS: usize = 4096;

impl Switch {
    /// The storms the watchdog detected, in order (the first [`MAX_STORM_RECORDS`]).
    pub fn storms(&self) -> &[StormRecord] {
        &self.storms
    }

    fn queue_pfc(&mut self, now: Nanos, port: usize, pg: usize, quanta: u16, note: Option<Note>) {
        let pfc = MacControl::Pfc(PfcRepr::new(PrioritySet::single(pg as u8), quanta));
        let mac = self.ports[port].mac;
        let explain = self.explain;
        let slot = self.packets.insert(None);
        let packet = self.packets.get_mut(slot);
        packet.buf.resize(wire::pfc::FRAME_LEN, 0);
        // The buffer has room for the frame: emit cannot fail.
        let _ = pfc.emit(&mut packet.buf, mac);
        packet.meta = wire::parse_meta(&packet.buf);
        packet.note = note.filter(|_| explain).map(Box::new);
        self.wakes.touch(port);
        self.ports[port].control.push_back(Entry {
            arrived: now,
            slot,
            len: wire::pfc::FRAME_LEN as u32,
            blocks: 0,
            int: false,
            ingress: port as u32,
            class: pg as u8,
        });
    }

    fn refresh_interval(&self, port: usize) -> Nanos {
        pause_duration(self.cfg.refresh_quanta, self.ports[port].tx.bits_per_sec())
    }

    fn pg_bytes(&self, port: usize, pg: usize) -> u64 {
        let s = self.mmu.pg(port, pg);
        s.shared + s.headroom + s.late
    }

    /// A lossless PG of `port` reached its XOFF point: pause the peer's priority.
    pub(super) fn send_xoff(&mut self, now: Nanos, port: usize, pg: usize) {
        self.mmu.set_xoff(port, pg, true);
        self.ports[port].xoff_held[pg].set(now, Nanos::MAX);
        self.pause_leaves(now, port, pg);
        let quanta = self.cfg.pause_quanta;
        let note = Note::PfcXoff {
            priority: pg as u8,
            pg_bytes: self.pg_bytes(port, pg),
            threshold_bytes: self.mmu.xoff_threshold(pg),
            quanta,
        };
        self.queue_pfc(now, port, pg, quanta, Some(note));
        let at = now + self.refresh_interval(port);
        self.ports[port].set_refresh(pg, Some(at));
    }

    /// A paused PG drained to its XON point: resume the peer (time 0).
    pub(super) fn send_xon(&mut self, now: Nanos, port: usize, pg: usize) {
        self.mmu.set_xoff(port, pg, false);
        self.ports[port].xoff_held[pg].set(now, now);
        let note = Note::PfcXon {
            priority: pg as u8,
            pg_bytes: self.pg_bytes(port, pg),
            threshold_bytes: self.mmu.xon_threshold(pg),
        };
        self.queue_pfc(now, port, pg, 0, Some(note));
        self.ports[port].set_refresh(pg, None);
    }

    /// XOFF still holds: re-send the pause before the peer's copy of it runs out.
    pub(super) fn send_refresh(&mut self, now: Nanos, port: usize, pg: usize) {
        if !self.mmu.pg(port, pg).xoff {
            self.ports[port].set_refresh(pg, None);
            self.wakes.touch(port);
            return;
        }
        let quanta = self.cfg.pause_quanta;
        let note = Note::PfcRefresh {
            priority: pg as u8,
            pg_bytes: self.pg_bytes(port, pg),
            quanta,
        };
        self.queue_pfc(now, port, pg, quanta, Some(note));
        self.pause_leaves(now, port, pg);
        let at = now + self.refresh_interval(port);
        self.ports[port].set_refresh(pg, Some(at));
    }

    /// A PFC or PAUSE frame arrived on `port`: pause (or resume) its egress queues for
    /// exactly time × 512 bit times at the port's rate, a new frame replacing the time
    /// left. PFC is honoured for the lossless priorities (PFC-enabled, as on a switch);
    /// PAUSE stops every data queue of the port.
    pub(super) fn receive_mac_control(
        &mut self,
        now: Nanos,
        port: usize,
        frame: &[u8],
        meta: &FrameMeta,
    ) {
        let lossless = self.cfg.lossless;
        let tc_to_queue = self.cfg.tc_to_queue;
        self.wakes.touch(port);
        let p = &mut self.ports[port];
        let rate = p.tx.bits_per_sec();
        match MacControl::parse_frame(frame, meta) {
            Ok(MacControl::Pfc(pfc)) => {
                for prio in pfc.priorities().iter() {
                    let quanta = pfc.quanta[usize::from(prio)];
                    let c = &mut p.counters.classes[usize::from(prio)];
                    c.rx_pause_frames += 1;
                    c.rx_xon_frames += u64::from(quanta == 0);
                    if !lossless.contains(prio) {
                        continue;
                    }
                    let q = usize::from(tc_to_queue[usize::from(prio)]);
                    let until = now + pause_duration(quanta, rate);
                    p.queues[q].pause_until = until;
                    p.paused[q].set(now, until);
                    if quanta > 0 {
                        p.last_pause_rx[q] = now;
                    }
                }
            }
            Ok(MacControl::Pause { quanta }) => {
                p.counters.rx_link_pause_frames += 1;
                p.link_pause_until = now + pause_duration(quanta, rate);
                p.link_paused.set(now, p.link_pause_until);
            }
            Ok(MacControl::Other { .. }) | Err(_) => {}
        }
    }

    /// The next watchdog poll: polls tick at `anchor + k × poll`, the anchor being the
    /// first time the switch saw.
    pub(super) fn next_watchdog_poll(&self) -> Option<Nanos> {
        let anchor = self.watchdog_anchor?;
        let poll = self.cfg.watchdog.poll.0.max(1);
        Some(anchor + Nanos(poll * (self.watchdog_ticks_done + 1)))
    }

    /// Runs the watchdog poll due by `now`, at its tick time: a lossless queue that is
    /// paused, holds frames and has sent nothing for the detection time is stormed; a
    /// stormed queue that has received no pause for the restoration time is restored.
    /// Ticks skipped while nothing could storm (no timer was asked for them) are not
    /// replayed: only the latest due tick runs.
    pub(super) fn run_watchdog(&mut self, now: Nanos) {
        let (Some(anchor), true) = (self.watchdog_anchor, self.cfg.watchdog.enabled) else {
            return;
        };
        let poll = self.cfg.watchdog.poll.0.max(1);
        let latest = now.saturating_sub(anchor).0 / poll;
        if latest > self.watchdog_ticks_done {
            self.watchdog_ticks_done = latest;
            self.watchdog_poll(anchor + Nanos(latest * poll));
        }
    }

    fn watchdog_poll(&mut self, tick: Nanos) {
        let wd = self.cfg.watchdog;
        for port in 0..self.ports.len() {
            for q in 0..self.ports[port].queues.len() {
                // The queue PFC for a lossless priority pauses (`tc_to_queue`), which need
                // not have the priority's number.
                if self.lossless_queues & (1 << q) == 0 {
                    continue;
                }
                self.wakes.touch(port);
                let p = &mut self.ports[port];
                if p.is_stormed(q) {
                    if tick.saturating_sub(p.last_pause_rx[q]) >= wd.restoration {
                        p.set_stormed(q, false);
                        p.counters.classes[q].storms_restored += 1;
                        if let Some(s) = self
                            .storms
                            .iter_mut()
                            .rev()
                            .find(|s| s.port == port && s.queue == q && s.restored.is_none())
                        {
                            s.restored = Some(tick);
                        }
                        if wd.action == WatchdogAction::Drop {
                            self.resume_pfc(tick, port, q);
                        }
                    }
                    continue;
                }
                let paused = p.paused_until(q) > tick;
                let waiting = !p.queues[q].frames.is_empty();
                if paused
                    && waiting
                    && tick.saturating_sub(p.queues[q].last_progress) >= wd.detection
                {
                    p.set_stormed(q, true);
                    p.counters.classes[q].storms_detected += 1;
                    if self.storms.len() < MAX_STORM_RECORDS {
                        self.storms.push(StormRecord {
                            port,
                            queue: q,
                            detected: tick,
                            restored: None,
                        });
                    }
                    if wd.action == WatchdogAction::Drop {
                        self.flush_queue(tick, port, q);
                        self.stop_pfc(tick, port, q);
                    }
                }
            }
        }
    }

    /// The lossless PGs whose priority goes to queue `q` (`tc_to_queue`): on the port
    /// whose queue `q` is stormed, the ingress PGs that match it.
    fn pgs_of_queue(&self, q: usize) -> impl Iterator<Item = usize> + use<> {
        let tc_to_queue = self.cfg.tc_to_queue;
        self.cfg
            .lossless
            .iter()
            .map(usize::from)
            .filter(move |&pg| usize::from(tc_to_queue[pg]) == q)
    }

    /// Whether PG `pg` of `port` sends no PFC: the watchdog, with action drop, holds the
    /// queue its priority goes to on that port as stormed.
    #[inline]
    pub(super) fn pfc_stopped(&self, port: usize, pg: usize) -> bool {
        self.ports[port].stormed != 0
            && self.cfg.watchdog.action == WatchdogAction::Drop
            && self.ports[port].is_stormed(usize::from(self.cfg.tc_to_queue[pg]))
    }

    /// Queue `q` of `port` was found stormed with action drop: the matching ingress PGs
    /// stop generating PFC, XON included, as SONiC's drop action takes the priority out
    /// of the port's PFC enable mask. A PG that held its peer in XOFF leaves that state
    /// and refreshes no more: the peer's last pause runs out by itself (within
    /// `pause_quanta`). Until restoration such a PG is lossy: what does not fit its
    /// shared share and headroom is dropped at ingress.
    fn stop_pfc(&mut self, now: Nanos, port: usize, q: usize) {
        let rate = self.ports[port].tx.bits_per_sec();
        let pause = pause_duration(self.cfg.pause_quanta, rate);
        for pg in self.pgs_of_queue(q) {
            if !self.mmu.pg(port, pg).xoff {
                continue;
            }
            self.mmu.set_xoff(port, pg, false);
            let p = &mut self.ports[port];
            p.set_refresh(pg, None);
            let runs_out = p.pause_left[pg] + pause;
            p.xoff_held[pg].set(now, runs_out);
            self.wakes.touch(port);
        }
    }

    /// Queue `q` of `port` was restored (action drop): its PGs generate PFC again, and one
    /// that filled past its XOFF point meanwhile pauses its peer now.
    fn resume_pfc(&mut self, now: Nanos, port: usize, q: usize) {
        for pg in self.pgs_of_queue(q) {
            if self.mmu.needs_xoff(port, pg) {
                self.send_xoff(now, port, pg);
            }
        }
    }

    /// Drops everything queued on `q` of `port` (watchdog drop action).
    fn flush_queue(&mut self, now: Nanos, port: usize, q: usize) {
        self.wakes.touch(port);
        let frames = std::mem::take(&mut self.ports[port].queues[q].frames);
        self.ports[port].queues[q].bytes = 0;
        self.ports[port].nonempty &= !(1 << q);
        self.ports[port].sched.emptied(q);
        for entry in frames {
            let packet = self.packets.get_mut(entry.slot);
            let (ingress, class, elided) = (entry.ingress as usize, entry.class, packet.elided);
            // Out of its slot while the record (which borrows the switch) reads it.
            let buf = std::mem::take(&mut packet.buf);
            let frame = Incoming::Borrowed(&buf, elided);
            self.ports[port]
                .counters
                .drop(q, DropCause::Watchdog, frame.len());
            self.record_drop(
                now,
                port,
                ingress,
                class,
                q,
                port,
                DropCause::Watchdog,
                &frame,
            );
            self.packets.get_mut(entry.slot).buf = buf;
            self.release(now, &entry);
            self.packets.remove(entry.slot);
        }
    }
}

//! The egress side of the switch: picking and sending frames at the line rate, and the
//! timers (when to call again, PFC refresh, watchdog polls).

use super::packets::Entry;
use super::{Note, red};
use super::{Port, Switch, Transmit};
use crate::config::MarkAt;
use crate::hint::prefetch;
use crate::link::{self, Framing};
use crate::time::{Nanos, earliest};
use crate::wire::elide::Elided;
use crate::wire::int::{INT_REQUEST, IntHop, TRAILER_LEN, push_hop};
use crate::wire::pfc::MacControl;
use crate::wire::{self, CeMark, FrameMeta};

impl Port {
    /// When queue `q`'s head is through the forwarding pipeline (its arrival plus the
    /// forwarding latency); `Nanos::ZERO` for an empty queue.
    #[inline]
    pub(super) fn head_ready_at(&self, q: usize) -> Nanos {
        self.queues[q]
            .frames
            .front()
            .map_or(Nanos::ZERO, |e| e.arrived + self.latency)
    }

    /// Whether a frame RED hit on queue `q` is marked, with `marking_rate` frames left
    /// unmarked between two marks: the first is marked, then `marking_rate` are not, and
    /// so on. With 0 every one is.
    #[inline]
    pub(super) fn spaced_mark(&mut self, q: usize, marking_rate: u16) -> bool {
        if marking_rate == 0 {
            return true;
        }
        let left = &mut self.marks_to_skip[q];
        if *left == 0 {
            *left = marking_rate;
            true
        } else {
            *left -= 1;
            false
        }
    }

    /// When PFC (or an 802.3x PAUSE) from the peer stops holding queue `q`.
    pub(super) fn paused_until(&self, q: usize) -> Nanos {
        self.queues[q].pause_until.max(self.link_pause_until)
    }
}

impl Switch {
    pub(super) fn forward_stormed(&self) -> bool {
        self.cfg.watchdog.action == crate::config::WatchdogAction::Forward
    }

    /// The next frame to leave any port at `now`, if a port is free and has one.
    /// Call repeatedly until `None`, then again at [`poll_timeout`](Self::poll_timeout).
    #[must_use]
    pub fn poll_transmit(&mut self, now: Nanos) -> Option<Transmit<'_>> {
        self.advance_to(now);
        self.recycle_last();
        let (port, slot) = self.next_packet(now)?;
        self.last_tx = Some(slot);
        // Whole, for whoever borrows it: a short frame handed in (by a simulator) is
        // restored in its slot.
        let packet = self.packets.get_mut(slot);
        let restored = wire::elide::restore(&mut packet.buf, packet.elided);
        debug_assert!(restored.is_ok(), "a short frame handed in restores");
        packet.elided = Elided::NONE;
        let packet = self.packets.get(slot);
        Some(Transmit {
            port,
            time: now,
            frame: &packet.buf,
            note: packet.note.as_deref(),
        })
    }

    /// As [`poll_transmit`](Self::poll_transmit), but hands over the frame's buffer with
    /// its egress port, for a driver that passes frames on without copying them (and
    /// gives buffers back through [`handle_owned_frame`](Self::handle_owned_frame)).
    /// The frame is always whole.
    #[must_use]
    pub fn poll_transmit_owned(&mut self, now: Nanos) -> Option<(usize, Vec<u8>)> {
        loop {
            let (port, mut frame, elided) = self.poll_transmit_elided(now)?;
            // Only a short frame handed in (by a simulator) comes out short.
            let restored = wire::elide::restore(&mut frame, elided);
            debug_assert!(restored.is_ok(), "a short frame handed in restores");
            if restored.is_ok() {
                return Some((port, frame));
            }
            self.packets.recycle(frame);
        }
    }

    /// As [`poll_transmit_owned`](Self::poll_transmit_owned), but a short frame comes out
    /// short, with what it elides (see [`handle_elided_frame`](Self::handle_elided_frame)).
    ///
    /// Inlined for the answer most calls get, nothing due: a driver calls until `None`,
    /// so every port that sends is asked once more than it has frames, and on a fabric
    /// that is more calls than frames. The deadlines are settled (every entry point
    /// settles before it returns), so the earliest says it without a walk.
    #[must_use]
    #[inline]
    pub fn poll_transmit_elided(&mut self, now: Nanos) -> Option<(usize, Vec<u8>, Elided)> {
        self.advance_to(now);
        self.recycle_last();
        self.anchor(now);
        if !self.wakes.tx_due(now) {
            return None;
        }
        self.transmit_elided(now)
    }

    /// [`poll_transmit_elided`](Self::poll_transmit_elided) once a port is due.
    fn transmit_elided(&mut self, now: Nanos) -> Option<(usize, Vec<u8>, Elided)> {
        let (port, slot) = self.next_packet(now)?;
        let elided = self.packets.get(slot).elided;
        Some((port, self.packets.take(slot), elided))
    }

    /// The next frame to leave at `now`: from the port whose transmit deadline is the
    /// earliest (the lowest-numbered among equals), if that deadline has come.
    fn next_packet(&mut self, now: Nanos) -> Option<(usize, u32)> {
        self.anchor(now);
        while let Some(port) = self.wakes.pop_tx_due(now) {
            let packet = self.dequeue(now, port);
            self.settle();
            if let Some(packet) = packet {
                return Some((port, packet));
            }
        }
        self.settle();
        None
    }

    /// Takes the next frame of `port` if its transmitter is free at `now`: its slot.
    fn dequeue(&mut self, now: Nanos, port_index: usize) -> Option<u32> {
        let forward_stormed = self.forward_stormed();
        let packets = &mut self.packets;
        let port = &mut self.ports[port_index];
        if !port.tx.enabled
            || port.tx.free_at() > now
            || (port.nonempty == 0 && port.control.is_empty())
        {
            return None;
        }
        if let Some(entry) = port.control.pop_front() {
            let packet = packets.get(entry.slot);
            port.tx.start(now, &packet.buf);
            if let Some(meta) = packet.meta
                && let Ok(MacControl::Pfc(pfc)) = MacControl::parse_frame(&packet.buf, &meta)
            {
                for p in pfc.priorities().iter() {
                    let c = &mut port.counters.classes[usize::from(p)];
                    c.tx_pause_frames += 1;
                    c.tx_xon_frames += u64::from(pfc.quanta[usize::from(p)] == 0);
                }
            }
            return Some(entry.slot);
        }
        let mut ready = 0u8;
        let mut busy = port.nonempty;
        while busy != 0 {
            let q = busy.trailing_zeros() as usize;
            busy &= busy - 1;
            let ignore_pause = forward_stormed && port.is_stormed(q);
            if (ignore_pause || port.paused_until(q) <= now) && port.head_ready_at(q) <= now {
                if port.head_has_credit(q) {
                    ready |= 1 << q;
                } else if let Some(c) = port.credit.as_mut() {
                    c.wait(now, q);
                }
            }
        }
        let queues = &port.queues;
        let q = port.sched.pick(ready, |q| {
            queues[q].frames.front().map_or(0, |e| u64::from(e.len))
        })?;
        let queue = &mut port.queues[q];
        let entry = queue.frames.pop_front()?;
        let packet = packets.get_mut(entry.slot);
        let len = entry.len as usize;
        debug_assert_eq!(len, packet.len(), "the queue entry's length");
        queue.bytes -= len as u64;
        let depth_after = queue.bytes;
        if queue.frames.is_empty() {
            port.nonempty &= !(1 << q);
            port.sched.emptied(q);
        }
        // An Ethernet frame's wire bits follow from its length (a short frame keeps at
        // least the minimum frame, so what it elides adds as it does to the length): the
        // frame's slot, long out of the cache, is not read for them.
        let bits = match port.tx.framing() {
            Framing::Ethernet => link::wire_bits(len),
            framing => framing.wire_bits_elided(&packet.buf, packet.elided),
        };
        port.tx.start_bits(now, bits);
        if let Some(c) = port.credit.as_mut() {
            c.sent(
                now,
                q,
                super::ib_switch::frame_blocks(&packet.buf, packet.elided),
            );
            port.note_credit_wait(now, q);
        }
        let stormed = port.is_stormed(q);
        port.queues[q].last_progress = now;
        let c = &mut port.counters.classes[q];
        c.tx_frames += 1;
        c.tx_bytes += len as u64;
        c.tx_during_storm += u64::from(stormed);
        port.counters.sojourn_ns[q].record(now.saturating_sub(entry.arrived).0);
        let queue_cfg = self.cfg.queues[q];
        if let (Some(profile), MarkAt::Dequeue, Some(meta)) =
            (queue_cfg.ecn, queue_cfg.mark_at, packet.meta)
        {
            let decision = red::decide(&profile, depth_after, &mut self.rng);
            if decision.hit
                && meta.ecn().is_ect()
                && port.spaced_mark(q, queue_cfg.marking_rate)
                && wire::mark_ce(&mut packet.buf, &meta) == CeMark::Marked
            {
                self.ports[port_index].counters.classes[q].ecn_marked += 1;
                if self.explain {
                    packet.note = Some(Box::new(Note::CeMarked {
                        queue: q as u8,
                        depth_bytes: depth_after,
                        kmin_bytes: profile.kmin_bytes,
                        kmax_bytes: profile.kmax_bytes,
                        probability: decision.probability,
                    }));
                }
            }
        }
        if entry.int
            && let Some(meta) = self.packets.get(entry.slot).meta
        {
            let port = &self.ports[port_index];
            let packet = self.packets.get_mut(entry.slot);
            append_int(&mut packet.buf, &meta, || {
                // HPCC's hop (the simulator's SwitchNotifyDequeue): the port's rate, the
                // time, the bytes it has sent and the bytes still queued on it.
                let sent: u64 = port.counters.classes.iter().map(|c| c.tx_bytes).sum();
                let queued: u64 = port.queues.iter().map(|q| q.bytes).sum();
                IntHop::new(port.tx.bits_per_sec(), now.0, sent, queued)
            });
        }
        // The frames behind it leave a frame time from now at the soonest, and what was
        // written for them when they came in (the new head's slot, the entry after it) is
        // long out of the cache by then: start loading it. Those loads missed on nearly
        // every frame of a simulated fabric, a tenth of its time.
        let port = &self.ports[port_index];
        let frames = &port.queues[q].frames;
        if let Some(next) = frames.front() {
            self.packets.prefetch(next.slot);
            // Its sojourn's bucket too, as the time it would have waited were it to leave
            // once this frame is out (a bucket's line holds eight, 1 % apart).
            let leaves = port.tx.free_at().saturating_sub(next.arrived);
            port.counters.sojourn_ns[q].prefetch(leaves.0);
        }
        if let Some(after) = frames.get(1) {
            prefetch(std::ptr::from_ref(after).cast());
        }
        self.release(now, &entry);
        Some(entry.slot)
    }

    /// Returns the buffer charge of the queued frame `entry`; its ingress PG may now send
    /// XON. Only an InfiniBand ingress reads the frame's slot (for its credit blocks).
    pub(super) fn release(&mut self, now: Nanos, entry: &Entry) {
        let (ingress, class, len) = (entry.ingress as usize, entry.class, entry.len);
        let pg = usize::from(class);
        if self.ports[ingress].credit.is_some() {
            let vl = self.classifier.queue(class);
            let packet = self.packets.get(entry.slot);
            let blocks = super::ib_switch::frame_blocks(&packet.buf, packet.elided);
            self.credit_release(now, ingress, blocks, vl);
            return;
        }
        self.mmu.release(ingress, pg, len);
        if self.mmu.needs_xon(ingress, pg) {
            self.send_xon(now, ingress, pg);
        }
    }

    /// When to call [`poll_transmit`](Self::poll_transmit) or
    /// [`handle_timeout`](Self::handle_timeout) next; `None` when the switch is idle. Its
    /// cost does not grow with the number of ports: each port's deadlines are kept up to date
    /// as it changes, not found by a scan.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Nanos> {
        let (tx, timer, watchdog) = self.wakes.next();
        let mut next = earliest(tx, timer);
        if watchdog {
            next = earliest(next, self.next_watchdog_poll());
        }
        debug_assert_eq!(next, self.poll_timeout_by_scan(), "the ports' deadlines");
        next
    }

    /// [`poll_timeout`](Self::poll_timeout) by looking at every port: what the kept
    /// deadlines must equal.
    fn poll_timeout_by_scan(&self) -> Option<Nanos> {
        let rules = self.wake_rules();
        let mut watchdog = false;
        let mut next = None;
        for port in &self.ports {
            watchdog |= rules.watchdog && port.wants_watchdog(rules.lossless_queues);
            next = [next, port.tx_wake(rules.forward_stormed), port.timer_wake()]
                .into_iter()
                .flatten()
                .min();
        }
        let watchdog = if watchdog {
            self.next_watchdog_poll()
        } else {
            None
        };
        [next, watchdog].into_iter().flatten().min()
    }

    /// Runs the timers due at `now`: PFC refreshes and watchdog polls.
    pub fn handle_timeout(&mut self, now: Nanos) {
        self.advance_to(now);
        self.recycle_last();
        self.anchor(now);
        while let Some(port) = self.wakes.pop_timer_due(now) {
            for pg in 0..self.ports[port].refresh_at.len() {
                if self.ports[port].refresh_at[pg].is_some_and(|t| t <= now) {
                    self.send_refresh(now, port, pg);
                }
            }
            self.flush_credit(now, port);
        }
        self.run_watchdog(now);
        self.settle();
    }
}

/// Whether the RoCE frame `buf` asks the switches for HPCC's telemetry (its BTH flag).
pub(super) fn int_requested(buf: &[u8], meta: &FrameMeta) -> bool {
    let flags = meta.bth_offset() + wire::bth::FECN_BECN_OFFSET;
    buf.get(flags).is_some_and(|f| f & INT_REQUEST != 0)
}

/// HPCC's telemetry: appends the hop `hop` makes to the trailer of the RoCE frame `buf`
/// (one that [asks for it](int_requested)), before the ICRC, and writes the ICRC again
/// unless the sender left it zero (a simulator's frames without ICRC).
fn append_int(buf: &mut [u8], meta: &FrameMeta, hop: impl FnOnce() -> IntHop) {
    let end = meta.icrc_offset();
    let Some(start) = end.checked_sub(TRAILER_LEN) else {
        return;
    };
    if start < meta.bth_offset() + wire::bth::HEADER_LEN || end > buf.len() {
        return;
    }
    let had_icrc = wire::icrc::stored(buf, meta).is_some_and(|c| c != 0);
    if push_hop(&mut buf[start..end], &hop()) && had_icrc {
        wire::icrc::fill(buf, meta);
    }
}

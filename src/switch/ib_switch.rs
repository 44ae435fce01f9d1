//! The switch on an InfiniBand fabric: credit flow control per port and VL
//! ([`crate::credit`]) in place of PFC, ECN drops and the shared-buffer MMU.
//!
//! A frame's VL is its class's egress queue (the scenario sets `tc_to_queue` from the
//! SL-to-VL table). A received data packet adds its blocks to its ingress port's ABR and
//! holds them in that port's buffer of its VL until it leaves by an egress port; a
//! queue whose head has no credit on its egress port's VL waits, as a paused queue does,
//! and its port wakes again when the peer's flow-control packet arrives.

use super::{Entry, Port, Switch};
use crate::credit::{self, CreditConfig, CreditLink, FcPacket, LaneStats};
use crate::link::{Framing, Transmitter, ib_packet_bytes};
use crate::time::Nanos;
use crate::wire::elide::Elided;

/// Credit blocks of a frame, with the payload it elides (see [`crate::wire::elide`]).
#[inline]
pub(super) fn frame_blocks(frame: &[u8], elided: Elided) -> u16 {
    credit::blocks(ib_packet_bytes(frame) + u64::from(elided.len))
}

impl Port {
    /// Whether queue `q`'s head has credit to go (always, without credit flow control).
    #[inline]
    pub(super) fn head_has_credit(&self, q: usize) -> bool {
        match (&self.credit, self.queues[q].frames.front()) {
            (Some(c), Some(e)) => c.can_send(q, e.blocks),
            _ => true,
        }
    }
}

impl Port {
    /// Starts counting queue `q`'s wait for credit if its head has none.
    #[inline]
    pub(super) fn note_credit_wait(&mut self, now: Nanos, q: usize) {
        if self.credit.is_some()
            && !self.head_has_credit(q)
            && let Some(c) = self.credit.as_mut()
        {
            c.wait(now, q);
        }
    }
}

impl Switch {
    /// Runs every port with InfiniBand framing and credit flow control as `cfg` says:
    /// no PFC, no drops for lack of buffer. Call before the first frame.
    pub fn set_credit(&mut self, cfg: CreditConfig) {
        for (i, port) in self.ports.iter_mut().enumerate() {
            port.tx = Transmitter::with_framing(port.tx.bits_per_sec(), Framing::InfiniBand);
            port.credit = Some(Box::new(CreditLink::new(cfg)));
            self.wakes.touch(i);
        }
        self.settle();
    }

    /// Arbitrates every port's egress queues (VLs) by the IBA's tables from now on.
    pub fn set_vl_arbitration(&mut self, cfg: &super::sched::VlArbConfig) {
        for port in &mut self.ports {
            port.sched.set_vl_arbitration(cfg);
        }
    }

    /// Whether the ports run credit flow control.
    pub fn has_credit(&self) -> bool {
        self.ports.first().is_some_and(|p| p.credit.is_some())
    }

    /// What VL `vl` of `port` did up to `now`, with credit flow control.
    pub fn credit_stats(&self, port: usize, vl: usize, now: Nanos) -> Option<LaneStats> {
        self.ports[port].credit.as_ref().map(|c| c.stats(vl, now))
    }

    /// A flow-control packet from `port`'s peer: new credit for its queues, and perhaps a
    /// reply.
    pub(super) fn receive_link_packet(&mut self, now: Nanos, port: usize, frame: &[u8]) {
        let Some(fc) = FcPacket::parse_frame(frame) else {
            return;
        };
        let p = &mut self.ports[port];
        let Some(c) = p.credit.as_mut() else { return };
        c.on_fc(now, fc);
        let q = usize::from(fc.vl & 7);
        if let Some(head) = p.queues[q].frames.front() {
            c.resume_if_ready(now, q, head.blocks);
        }
        self.flush_credit(now, port);
    }

    /// A data frame arrived on `port` for VL `vl`: its blocks count as received.
    #[inline]
    pub(super) fn credit_received(&mut self, port: usize, vl: usize, frame: &[u8], elided: Elided) {
        if let Some(c) = self.ports[port].credit.as_mut() {
            c.received(vl, frame_blocks(frame, elided));
        }
    }

    /// Queues the flow-control packets due on `port` at `now` ahead of its data.
    pub(super) fn flush_credit(&mut self, now: Nanos, port: usize) {
        let mac = self.ports[port].mac.0;
        while let Some(fc) = self.ports[port]
            .credit
            .as_mut()
            .and_then(|c| c.take_due(now))
        {
            let slot = self.packets.insert(None);
            let buf = &mut self.packets.get_mut(slot).buf;
            fc.emit_frame(mac, buf);
            let len = buf.len() as u32;
            self.ports[port].control.push_back(Entry {
                arrived: now,
                slot,
                len,
                blocks: 0,
                int: false,
                // Never released (control frames hold no buffer): a VL, not a PG.
                ingress: port as u32,
                class: fc.vl,
            });
        }
        self.wakes.touch(port);
    }

    /// A frame of `blocks` holding buffer on VL `vl` of its ingress port left: the credit
    /// comes back.
    pub(super) fn credit_release(&mut self, now: Nanos, ingress: usize, blocks: u16, vl: usize) {
        if let Some(c) = self.ports[ingress].credit.as_mut() {
            c.free(vl, blocks);
            self.flush_credit(now, ingress);
        }
    }
}

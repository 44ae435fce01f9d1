//! The NIC on an InfiniBand fabric: credit flow control on its port ([`crate::credit`])
//! in place of PFC. Every data, ACK and CNP packet goes on the VL its DSCP maps to (the
//! switches' table, so both ends of a link agree) only with credit for it; received
//! packets give their credit back as soon as they are taken in, or, on a slow receiver,
//! as its receive buffer drains.

use super::Endpoint;
use crate::credit::{self, CreditConfig, CreditLink, FcPacket, LaneStats};
use crate::link::{Framing, Transmitter, ib_packet_bytes};
use crate::time::Nanos;

/// Credit flow control on the NIC's port.
#[derive(Debug, Clone)]
pub(super) struct NicCredit {
    pub(super) link: CreditLink,
    /// The VL of each DSCP.
    dscp_to_vl: [u8; 64],
}

impl NicCredit {
    /// The VL of a frame the NIC sends or receives: that of its DSCP.
    #[inline]
    pub(super) fn vl(&self, frame: &[u8]) -> usize {
        let dscp = match frame.get(12..14) {
            Some([0x08, 0x00]) => frame.get(15).map_or(0, |tos| tos >> 2),
            Some([0x86, 0xdd]) => match frame.get(14..16) {
                Some(&[a, b]) => ((a & 0x0f) << 2) | (b >> 6),
                _ => 0,
            },
            _ => 0,
        };
        usize::from(self.dscp_to_vl[usize::from(dscp & 63)])
    }

    /// Whether `frame` may go now, as far as credit goes.
    #[inline]
    pub(super) fn allows(&self, frame: &[u8]) -> bool {
        self.link.can_send(self.vl(frame), blocks(frame))
    }
}

/// Credit blocks of a frame.
#[inline]
pub(super) fn blocks(frame: &[u8]) -> u16 {
    credit::blocks(ib_packet_bytes(frame))
}

impl Endpoint {
    /// Runs the NIC's port with InfiniBand framing and credit flow control as `cfg`
    /// says, sending each DSCP on the VL `dscp_to_vl` gives it; PFC is never sent. Call
    /// before the first frame.
    pub fn set_credit(&mut self, cfg: CreditConfig, dscp_to_vl: [u8; 64]) {
        self.link = Transmitter::with_framing(self.link.bits_per_sec(), Framing::InfiniBand);
        self.credit = Some(Box::new(NicCredit {
            link: CreditLink::new(cfg),
            dscp_to_vl,
        }));
    }

    /// What VL `vl` of the NIC's port did up to `now`, with credit flow control.
    pub fn credit_stats(&self, vl: usize, now: Nanos) -> Option<LaneStats> {
        self.credit.as_ref().map(|c| c.link.stats(vl, now))
    }

    /// Whether data waits for credit (until the peer's next flow-control packet).
    pub(super) fn data_waits_for_credit(&self) -> bool {
        self.credit.as_ref().is_some_and(|c| {
            c.link
                .waiting(usize::from(c.dscp_to_vl[usize::from(self.cfg.dscp & 63)]))
        })
    }

    /// The peer's flow-control packet: new credit (whatever waited tries again), and
    /// perhaps a reply.
    pub(super) fn receive_link_packet(&mut self, now: Nanos, frame: &[u8]) {
        let Some(fc) = FcPacket::parse_frame(frame) else {
            return;
        };
        if let Some(c) = self.credit.as_mut() {
            c.link.on_fc(now, fc);
            // What waited is tried again at once, and waits again if still short.
            c.link.resume_if_ready(now, usize::from(fc.vl), 1);
        }
        self.flush_credit(now);
    }

    /// A frame arrived: its blocks count as received, and are held while a slow
    /// receiver's buffer keeps it.
    pub(super) fn credit_on_receive(&mut self, now: Nanos, frame: &[u8], held: bool) {
        if let Some(c) = self.credit.as_mut() {
            let (vl, b) = (c.vl(frame), blocks(frame));
            c.link.received(vl, b);
            if held {
                c.link.hold(vl, b);
            }
            self.flush_credit(now);
        }
    }

    /// A slow receiver's buffer let go of `frame`: its credit comes back.
    pub(super) fn credit_on_drain(&mut self, frame: &[u8]) {
        if let Some(c) = self.credit.as_mut() {
            c.link.free(c.vl(frame), blocks(frame));
        }
    }

    /// Queues the flow-control packets due at `now` ahead of everything.
    pub(super) fn flush_credit(&mut self, now: Nanos) {
        while let Some(fc) = self.credit.as_mut().and_then(|c| c.link.take_due(now)) {
            let mut buf = self.spare.pop().unwrap_or_default();
            fc.emit_frame(self.mac.0, &mut buf);
            self.mac_control.push_back(buf);
        }
    }
}

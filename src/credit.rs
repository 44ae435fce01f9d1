//! InfiniBand link-level flow control (IBA vol. 1, 7.9): a sender puts a data packet on a
//! virtual lane (VL) only when the receiver has advertised buffer for it, so nothing is
//! ever dropped for lack of buffer. The switch and the endpoint cores both keep one
//! [`CreditLink`] per port when the fabric is InfiniBand (a leaf module, as
//! [`link`](crate::link) is, so that neither core imports the other).
//!
//! Credits are counted in 64-byte blocks, in 12-bit counters, per VL:
//! - the sender counts the blocks it sent (FCTBS, flow control total blocks sent);
//! - the receiver counts the blocks it received (ABR, adjusted blocks received) and
//!   advertises a credit limit FCCL = ABR + the blocks it has free, at most 2048 ahead;
//! - each side sends, per VL, a 6-byte flow-control packet that carries both: its FCTBS
//!   as a sender and its FCCL as a receiver. The peer takes the FCCL as its limit and
//!   sets its ABR to the FCTBS, which gives back the credit of a data packet lost on the
//!   way.
//!
//! A packet of `b` blocks may go when `(FCCL − (FCTBS + b)) mod 4096 ≤ 2048`. The window
//! a receiver can advertise is therefore at most 2048 blocks (128 KiB): a link whose
//! credit round trip carries more than that cannot run at its line rate, as on real
//! InfiniBand without range extenders.
//!
//! The IBA asks for a flow-control packet on every VL at least every 65,536 symbol times
//! and leaves the rest to the implementation. rocelab sends one:
//! - per VL in use when the link starts (`Op` = initialisation);
//! - when the limit it would advertise has changed, no sooner than `update` after its
//!   last one on that VL (the coalescing every implementation does);
//! - `refresh` after its last one while it has sent blocks it has not yet told of, or a
//!   packet waits for credit;
//! - in reply to the peer's when its own last one is older than `refresh`, so that a lost
//!   update cannot leave the peer waiting for ever.
//!
//! Simplifications, each documented in docs/infiniband.md: the LPCRC is sent as zero (the
//! simulator's links lose packets, they do not corrupt bits), and the buffer is a fixed
//! number of blocks per VL, not a pool shared between VLs.

use crate::link::IB_LINK_PACKET_ETHERTYPE;
use crate::time::{Nanos, Span};

/// Bytes per credit block.
pub const BLOCK_BYTES: u64 = 64;
/// Data VLs (VL0–VL7; VL15, the management lane, carries nothing in the simulator).
pub const DATA_VLS: usize = 8;
/// The most blocks a receiver may advertise ahead of what it received.
pub const MAX_WINDOW_BLOCKS: u16 = 2048;
/// The 12-bit counters' modulus.
const MASK: u16 = 0x0fff;
/// Length of the Ethernet envelope the simulator carries a link packet in: the 14-byte
/// header and the 6-byte packet.
pub const FC_FRAME_LEN: usize = 20;
/// The envelope's destination: a reserved IEEE 802.1 link-local address, so that no
/// bridge would ever relay it.
pub const FC_DESTINATION: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x0f];

/// Credit blocks a packet of `ib_bytes` (LRH to VCRC) takes.
#[inline]
pub fn blocks(ib_bytes: u64) -> u16 {
    ib_bytes.div_ceil(BLOCK_BYTES).min(u64::from(MASK)) as u16
}

/// A flow-control link packet (IBA vol. 1, 7.9.4): `Op` (4 bits), FCTBS (12), VL (4),
/// FCCL (12), LPCRC (16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FcPacket {
    /// Sent while the link starts (`Op` 1) rather than in normal operation (`Op` 0).
    pub init: bool,
    /// The lane.
    pub vl: u8,
    /// The sender's total blocks sent on the lane, mod 4096.
    pub fctbs: u16,
    /// The sender's credit limit for the lane as a receiver, mod 4096.
    pub fccl: u16,
}

impl FcPacket {
    /// Writes the packet in its Ethernet envelope from `src` into `buf` (cleared first).
    pub fn emit_frame(&self, src: [u8; 6], buf: &mut Vec<u8>) {
        buf.clear();
        buf.extend_from_slice(&FC_DESTINATION);
        buf.extend_from_slice(&src);
        buf.extend_from_slice(&IB_LINK_PACKET_ETHERTYPE.to_be_bytes());
        let op = u16::from(self.init);
        buf.extend_from_slice(&((op << 12) | (self.fctbs & MASK)).to_be_bytes());
        buf.extend_from_slice(
            &((u16::from(self.vl & 0xf) << 12) | (self.fccl & MASK)).to_be_bytes(),
        );
        buf.extend_from_slice(&[0, 0]);
    }

    /// The packet in an envelope, if `frame` is one.
    pub fn parse_frame(frame: &[u8]) -> Option<FcPacket> {
        if frame.len() < FC_FRAME_LEN || frame[12..14] != IB_LINK_PACKET_ETHERTYPE.to_be_bytes() {
            return None;
        }
        let a = u16::from_be_bytes([frame[14], frame[15]]);
        let b = u16::from_be_bytes([frame[16], frame[17]]);
        let op = a >> 12;
        if op > 1 {
            return None;
        }
        Some(FcPacket {
            init: op == 1,
            vl: (b >> 12) as u8,
            fctbs: a & MASK,
            fccl: b & MASK,
        })
    }

    /// Whether `frame` is a link-packet envelope (whatever its contents).
    #[inline]
    pub fn is_envelope(frame: &[u8]) -> bool {
        frame.get(12..14) == Some(&IB_LINK_PACKET_ETHERTYPE.to_be_bytes()[..])
    }
}

/// Credit flow control on one port, as a scenario's `[ib]` table sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CreditConfig {
    /// Receive buffer per VL, bytes (whole blocks; at most 2048 blocks are advertised).
    pub buffer_bytes: u64,
    /// The least time between two updates of one VL's limit.
    #[serde(rename = "update_ns")]
    pub update: Nanos,
    /// The longest a VL with something to tell goes without a flow-control packet.
    #[serde(rename = "refresh_ns")]
    pub refresh: Nanos,
    /// The VLs in use, bit v for VL v: the ones advertised at link start.
    pub vls: u8,
}

impl CreditConfig {
    /// The receive buffer per VL in blocks, as the counters can advertise it.
    pub fn buffer_blocks(&self) -> u16 {
        (self.buffer_bytes / BLOCK_BYTES).min(u64::from(MAX_WINDOW_BLOCKS)) as u16
    }
}

/// One VL of a port, as a sender and as a receiver.
#[derive(Debug, Clone, Default)]
struct Lane {
    /// Blocks sent, mod 4096.
    fctbs: u16,
    /// The limit the peer last advertised.
    fccl: u16,
    /// The FCTBS of our last flow-control packet.
    told_fctbs: u16,
    /// A packet waits for credit (since `stalled`'s open interval began).
    waiting: bool,
    /// Blocks received, mod 4096 (set to the peer's FCTBS by its flow-control packets).
    abr: u16,
    /// Blocks of received packets still held; more than the buffer only when a sender
    /// broke the rule (or a flooded frame holds one copy per egress).
    held: u32,
    /// The most blocks held at once.
    watermark: u32,
    /// The FCCL of our last flow-control packet.
    advertised: u16,
    /// When our last flow-control packet on this lane went; `None` before the first.
    last_fc: Option<Nanos>,
    /// The peer's flow-control packet asks for ours.
    reply: bool,
    /// Time a packet waited for credit.
    stalled: Span,
    /// Packets received beyond the advertised buffer.
    overruns: u64,
    /// Flow-control packets sent and received on the lane.
    fc_sent: u64,
    fc_received: u64,
}

/// What one VL of a port did, for reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaneStats {
    /// The most buffer its received packets held at once, bytes.
    pub buffer_watermark_bytes: u64,
    /// Time a packet waited for credit to be sent on it.
    pub credit_stalled: Nanos,
    /// Packets received beyond the advertised buffer (0 unless a sender broke the rule).
    pub overruns: u64,
    /// Flow-control packets sent.
    pub fc_sent: u64,
    /// Flow-control packets received.
    pub fc_received: u64,
}

/// Credit flow control on one port: its VLs as a sender and as a receiver.
#[derive(Debug, Clone)]
pub struct CreditLink {
    cfg: CreditConfig,
    capacity: u16,
    lanes: [Lane; DATA_VLS],
}

impl CreditLink {
    /// A port that has not yet heard from its peer (so it may send nothing yet) and
    /// advertises `cfg.buffer_bytes` per VL in use at once.
    pub fn new(cfg: CreditConfig) -> CreditLink {
        CreditLink {
            capacity: cfg.buffer_blocks(),
            cfg,
            lanes: Default::default(),
        }
    }

    /// The limit this port advertises for `vl` now: what it received plus what it has
    /// free, at most 2048 blocks ahead.
    fn limit(&self, vl: usize) -> u16 {
        let l = &self.lanes[vl];
        let free = u32::from(self.capacity).saturating_sub(l.held);
        l.abr
            .wrapping_add(free.min(u32::from(MAX_WINDOW_BLOCKS)) as u16)
            & MASK
    }

    /// Whether a packet of `blocks` may go on `vl` now.
    #[inline]
    pub fn can_send(&self, vl: usize, blocks: u16) -> bool {
        let l = &self.lanes[vl & 7];
        let after = l.fctbs.wrapping_add(blocks) & MASK;
        l.fccl.wrapping_sub(after) & MASK <= MAX_WINDOW_BLOCKS
    }

    /// Blocks the sender may still send on `vl` before it must wait.
    pub fn available(&self, vl: usize) -> u16 {
        let l = &self.lanes[vl & 7];
        let room = l.fccl.wrapping_sub(l.fctbs) & MASK;
        if room <= MAX_WINDOW_BLOCKS { room } else { 0 }
    }

    /// A packet of `blocks` went on `vl` at `now` (after [`can_send`](Self::can_send)).
    #[inline]
    pub fn sent(&mut self, now: Nanos, vl: usize, blocks: u16) {
        let l = &mut self.lanes[vl & 7];
        l.fctbs = l.fctbs.wrapping_add(blocks) & MASK;
        if l.waiting {
            l.waiting = false;
            l.stalled.set(now, now);
        }
    }

    /// A packet waits for credit on `vl` from `now` (a no-op while it already does).
    pub fn wait(&mut self, now: Nanos, vl: usize) {
        let l = &mut self.lanes[vl & 7];
        if !l.waiting {
            l.waiting = true;
            l.stalled.set(now, Nanos::MAX);
        }
    }

    /// The credit a waiting packet of `blocks` on `vl` needs has come: its wait ends.
    pub fn resume_if_ready(&mut self, now: Nanos, vl: usize, blocks: u16) {
        if self.lanes[vl & 7].waiting && self.can_send(vl, blocks) {
            let l = &mut self.lanes[vl & 7];
            l.waiting = false;
            l.stalled.set(now, now);
        }
    }

    /// Whether a packet waits for credit on `vl`.
    pub fn waiting(&self, vl: usize) -> bool {
        self.lanes[vl & 7].waiting
    }

    /// A data packet of `blocks` arrived on `vl`.
    #[inline]
    pub fn received(&mut self, vl: usize, blocks: u16) {
        let l = &mut self.lanes[vl & 7];
        l.abr = l.abr.wrapping_add(blocks) & MASK;
    }

    /// A received packet of `blocks` now holds buffer on `vl` (once per copy it keeps).
    #[inline]
    pub fn hold(&mut self, vl: usize, blocks: u16) {
        let capacity = u32::from(self.capacity);
        let l = &mut self.lanes[vl & 7];
        l.held += u32::from(blocks);
        l.watermark = l.watermark.max(l.held);
        if l.held > capacity {
            l.overruns += 1;
        }
    }

    /// A held packet of `blocks` left the buffer of `vl`.
    #[inline]
    pub fn free(&mut self, vl: usize, blocks: u16) {
        let l = &mut self.lanes[vl & 7];
        l.held = l.held.saturating_sub(u32::from(blocks));
    }

    /// The peer's flow-control packet arrived at `now`.
    pub fn on_fc(&mut self, now: Nanos, fc: FcPacket) {
        let refresh = self.cfg.refresh;
        let l = &mut self.lanes[usize::from(fc.vl & 7)];
        l.fc_received += 1;
        l.fccl = fc.fccl & MASK;
        l.abr = fc.fctbs & MASK;
        if l.last_fc.is_none_or(|t| t + refresh <= now) {
            l.reply = true;
        }
    }

    /// When a flow-control packet is next due on `vl`, if one is.
    fn due(&self, vl: usize) -> Option<Nanos> {
        if self.cfg.vls & (1 << vl) == 0 {
            return None;
        }
        let l = &self.lanes[vl];
        let Some(last) = l.last_fc else {
            return Some(Nanos::ZERO);
        };
        let mut due = None;
        if l.reply || self.limit(vl) != l.advertised {
            due = Some(last + self.cfg.update);
        }
        if l.told_fctbs != l.fctbs || l.waiting {
            let refresh = last + self.cfg.refresh;
            due = Some(due.map_or(refresh, |d: Nanos| d.min(refresh)));
        }
        due
    }

    /// When the next flow-control packet is due on any VL.
    pub fn next_due(&self) -> Option<Nanos> {
        (0..DATA_VLS).filter_map(|v| self.due(v)).min()
    }

    /// A flow-control packet due at `now`, lowest VL first; taking it records it as sent.
    pub fn take_due(&mut self, now: Nanos) -> Option<FcPacket> {
        let vl = (0..DATA_VLS).find(|&v| self.due(v).is_some_and(|t| t <= now))?;
        let fccl = self.limit(vl);
        let l = &mut self.lanes[vl];
        let fc = FcPacket {
            init: l.last_fc.is_none(),
            vl: vl as u8,
            fctbs: l.fctbs,
            fccl,
        };
        l.told_fctbs = l.fctbs;
        l.advertised = fccl;
        l.last_fc = Some(now);
        l.reply = false;
        l.fc_sent += 1;
        Some(fc)
    }

    /// What VL `vl` did up to `now`.
    pub fn stats(&self, vl: usize, now: Nanos) -> LaneStats {
        let l = &self.lanes[vl & 7];
        LaneStats {
            buffer_watermark_bytes: u64::from(l.watermark) * BLOCK_BYTES,
            credit_stalled: l.stalled.total(now),
            overruns: l.overruns,
            fc_sent: l.fc_sent,
            fc_received: l.fc_received,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(buffer_bytes: u64) -> CreditConfig {
        CreditConfig {
            buffer_bytes,
            update: Nanos(0),
            refresh: Nanos(10_000),
            vls: 1,
        }
    }

    /// Two ports joined back to back: what `a` sends, `b` receives, and the reverse.
    fn exchange(a: &mut CreditLink, b: &mut CreditLink, now: Nanos) {
        while let Some(fc) = a.take_due(now) {
            b.on_fc(now, fc);
        }
        while let Some(fc) = b.take_due(now) {
            a.on_fc(now, fc);
        }
    }

    #[test]
    fn a_sender_waits_for_the_first_advertisement() {
        let (mut a, mut b) = (CreditLink::new(cfg(4096)), CreditLink::new(cfg(4096)));
        assert!(!a.can_send(0, 1));
        exchange(&mut a, &mut b, Nanos(0));
        assert_eq!(a.available(0), 64);
        assert!(a.can_send(0, 64));
        assert!(!a.can_send(0, 65));
    }

    #[test]
    fn credit_comes_back_when_the_receiver_frees_its_buffer_across_the_wrap() {
        let (mut a, mut b) = (CreditLink::new(cfg(1024)), CreditLink::new(cfg(1024)));
        exchange(&mut a, &mut b, Nanos(0));
        // 1000 packets of 3 blocks: FCTBS wraps 4096 several times.
        for i in 0..1000u64 {
            let now = Nanos(i + 1);
            if !a.can_send(0, 3) {
                exchange(&mut a, &mut b, now);
            }
            assert!(a.can_send(0, 3), "packet {i}");
            a.sent(now, 0, 3);
            b.received(0, 3);
            b.hold(0, 3);
            b.free(0, 3);
        }
        assert_eq!(b.stats(0, Nanos(2000)).overruns, 0);
    }

    #[test]
    fn a_full_buffer_stops_the_sender_and_nothing_overruns() {
        let (mut a, mut b) = (CreditLink::new(cfg(640)), CreditLink::new(cfg(640)));
        exchange(&mut a, &mut b, Nanos(0));
        let mut sent = 0;
        while a.can_send(0, 2) {
            a.sent(Nanos(1), 0, 2);
            b.received(0, 2);
            b.hold(0, 2);
            sent += 1;
            exchange(&mut a, &mut b, Nanos(1));
        }
        assert_eq!(sent, 5, "10 blocks of buffer, 2 per packet");
        assert_eq!(b.stats(0, Nanos(1)).overruns, 0);
        assert_eq!(b.stats(0, Nanos(1)).buffer_watermark_bytes, 640);
        b.free(0, 2);
        exchange(&mut a, &mut b, Nanos(2));
        assert!(a.can_send(0, 2));
    }

    #[test]
    fn a_lost_data_packet_gives_its_credit_back_at_the_next_refresh() {
        let (mut a, mut b) = (CreditLink::new(cfg(256)), CreditLink::new(cfg(256)));
        exchange(&mut a, &mut b, Nanos(0));
        a.sent(Nanos(1), 0, 4); // lost: b never receives it
        assert!(!a.can_send(0, 1));
        a.wait(Nanos(1), 0);
        assert_eq!(a.next_due(), Some(Nanos(10_000)), "a refresh while waiting");
        exchange(&mut a, &mut b, Nanos(10_000));
        assert_eq!(a.available(0), 4);
        a.resume_if_ready(Nanos(10_000), 0, 4);
        assert_eq!(a.stats(0, Nanos(20_000)).credit_stalled, Nanos(9_999));
    }

    #[test]
    fn a_lost_update_is_answered_when_the_waiting_sender_refreshes() {
        let (mut a, mut b) = (CreditLink::new(cfg(256)), CreditLink::new(cfg(256)));
        exchange(&mut a, &mut b, Nanos(0));
        a.sent(Nanos(1), 0, 4);
        b.received(0, 4);
        b.hold(0, 4);
        a.wait(Nanos(1), 0);
        b.free(0, 4);
        // b's update is lost.
        assert!(b.take_due(Nanos(5)).is_some());
        assert_eq!(b.next_due(), None, "b has nothing more to say");
        // a's refresh reaches b, whose last packet is older than refresh by then.
        let fc = a
            .take_due(Nanos(20_000))
            .expect("a refreshes while waiting");
        b.on_fc(Nanos(20_000), fc);
        let reply = b.take_due(Nanos(20_000)).expect("b replies");
        a.on_fc(Nanos(20_000), reply);
        assert!(a.can_send(0, 4));
    }

    #[test]
    fn an_idle_link_falls_silent() {
        let (mut a, mut b) = (CreditLink::new(cfg(256)), CreditLink::new(cfg(256)));
        exchange(&mut a, &mut b, Nanos(0));
        exchange(&mut a, &mut b, Nanos(0));
        assert_eq!((a.next_due(), b.next_due()), (None, None));
    }

    /// What one step of the property below does.
    #[derive(Debug, Clone, Copy)]
    enum Op {
        /// `a` sends a packet of this many blocks, if it may.
        Send(u16),
        /// The oldest packet on the wire a → b arrives (or is lost).
        Deliver { lose: bool },
        /// `b` lets go of its oldest held packet.
        Free,
        /// Flow-control packets due at this time go (each may be lost).
        Flush { lose_a: bool, lose_b: bool },
        /// Time passes.
        Wait(u64),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (1u16..70).prop_map(Op::Send),
            any::<bool>().prop_map(|l| Op::Deliver { lose: l }),
            Just(Op::Free),
            (any::<bool>(), any::<bool>()).prop_map(|(a, b)| Op::Flush {
                lose_a: a,
                lose_b: b
            }),
            (1u64..30_000).prop_map(Op::Wait),
        ]
    }

    proptest::proptest! {
        /// However data and flow-control packets are lost and whenever the receiver
        /// frees its buffer, a sender that keeps the rule never overruns the receiver;
        /// and once the losses stop, the refreshes give every block of credit back.
        #[test]
        fn credit_never_overruns_and_recovers_from_any_loss(
            ops in proptest::collection::vec(op(), 1..400)
        ) {
            let cfg = CreditConfig {
                buffer_bytes: 64 * 64,
                update: Nanos(100),
                refresh: Nanos(10_000),
                vls: 1,
            };
            let (mut a, mut b) = (CreditLink::new(cfg), CreditLink::new(cfg));
            let mut now = Nanos(0);
            let mut wire: std::collections::VecDeque<u16> = Default::default();
            let mut held: std::collections::VecDeque<u16> = Default::default();
            for op in ops {
                match op {
                    Op::Send(n) => {
                        if a.can_send(0, n) {
                            a.sent(now, 0, n);
                            wire.push_back(n);
                        } else {
                            a.wait(now, 0);
                        }
                    }
                    Op::Deliver { lose } => {
                        if let Some(n) = wire.pop_front() && !lose {
                            b.received(0, n);
                            b.hold(0, n);
                            held.push_back(n);
                        }
                    }
                    Op::Free => {
                        if let Some(n) = held.pop_front() {
                            b.free(0, n);
                        }
                    }
                    Op::Flush { lose_a, lose_b } => {
                        // Flow-control packets follow the data already on the wire.
                        while let Some(n) = wire.pop_front() {
                            b.received(0, n);
                            b.hold(0, n);
                            held.push_back(n);
                        }
                        while let Some(fc) = a.take_due(now) {
                            if !lose_a {
                                b.on_fc(now, fc);
                            }
                        }
                        while let Some(fc) = b.take_due(now) {
                            if !lose_b {
                                a.on_fc(now, fc);
                                a.resume_if_ready(now, 0, 1);
                            }
                        }
                    }
                    Op::Wait(ns) => now += Nanos(ns),
                }
                proptest::prop_assert_eq!(b.stats(0, now).overruns, 0);
            }
            // No more loss: everything arrives, the receiver drains, and a few refresh
            // rounds later the sender has the whole buffer again.
            while let Some(n) = wire.pop_front() {
                b.received(0, n);
                b.hold(0, n);
                held.push_back(n);
            }
            while let Some(n) = held.pop_front() {
                b.free(0, n);
            }
            a.wait(now, 0);
            for _ in 0..4 {
                now += Nanos(20_000);
                while let Some(fc) = a.take_due(now) {
                    b.on_fc(now, fc);
                }
                while let Some(fc) = b.take_due(now) {
                    a.on_fc(now, fc);
                }
            }
            proptest::prop_assert_eq!(a.available(0), 64);
        }
    }

    #[test]
    fn the_envelope_round_trips_and_other_frames_are_not_link_packets() {
        let fc = FcPacket {
            init: true,
            vl: 3,
            fctbs: 4095,
            fccl: 17,
        };
        let mut buf = Vec::new();
        fc.emit_frame([2, 0, 0, 0, 0, 1], &mut buf);
        assert_eq!(buf.len(), FC_FRAME_LEN);
        assert_eq!(FcPacket::parse_frame(&buf), Some(fc));
        assert!(FcPacket::parse_frame(&[0u8; 64]).is_none());
        assert_eq!(crate::link::ib_packet_bytes(&buf), 6);
    }
}

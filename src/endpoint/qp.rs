//! The RC transport of one queue pair: the requester (segmentation to the path MTU, PSNs,
//! AckReq, go-back-N on NAK or timeout, or selective repeat with a
//! [`Scoreboard`]) and the go-back-N responder (in-order
//! acceptance, coalesced ACKs, one NAK per sequence error, duplicate detection; the
//! selective-repeat responder is [`Reorder`](super::selective::Reorder)).
//!
//! PSNs are 24 bits on the wire and wrap; inside they are kept as 64-bit counts that never
//! wrap, and a wire PSN is mapped to the count nearest the one expected.

use super::selective::Scoreboard;
use crate::wire::bth::{MAX_24BIT, Opcode};
use crate::wire::xth::Reth;
use std::collections::VecDeque;
use std::sync::Arc;

/// The data of a WRITE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WrData {
    /// These bytes (shared: one buffer may back many WRITEs).
    Bytes(Arc<[u8]>),
    /// `len` copies of `byte`: data nobody reads (a bulk flow's). An endpoint allowed to
    /// (a simulator's, see [`Endpoint::set_elide`]) sends most of it as its length alone
    /// ([`crate::wire::elide`]); otherwise it goes out like any other bytes.
    ///
    /// [`Endpoint::set_elide`]: super::Endpoint::set_elide
    Fill {
        /// The value.
        byte: u8,
        /// How many.
        len: usize,
    },
}

impl WrData {
    /// All of it, as a [`Chunk`].
    pub fn as_chunk(&self) -> Chunk<'_> {
        match self {
            WrData::Bytes(b) => Chunk::Bytes(b),
            WrData::Fill { byte, len } => Chunk::Fill {
                byte: *byte,
                len: *len,
            },
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.as_chunk().len()
    }

    /// True when it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its first `len` bytes (at most its length), sharing its buffer when that is all
    /// of it.
    pub fn prefix(&self, len: usize) -> WrData {
        match self {
            WrData::Bytes(b) if len >= b.len() => WrData::Bytes(b.clone()),
            WrData::Bytes(b) => WrData::Bytes(b[..len].into()),
            WrData::Fill { byte, len: all } => WrData::Fill {
                byte: *byte,
                len: len.min(*all),
            },
        }
    }

    /// `len` bytes from `offset` (within its length).
    pub fn chunk(&self, offset: usize, len: usize) -> Chunk<'_> {
        self.as_chunk().slice(offset, len)
    }
}

impl From<Arc<[u8]>> for WrData {
    fn from(bytes: Arc<[u8]>) -> WrData {
        WrData::Bytes(bytes)
    }
}

impl From<Vec<u8>> for WrData {
    fn from(bytes: Vec<u8>) -> WrData {
        WrData::Bytes(bytes.into())
    }
}

/// Part of a WRITE's data: one packet's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk<'a> {
    /// These bytes.
    Bytes(&'a [u8]),
    /// `len` copies of `byte`.
    Fill {
        /// The value.
        byte: u8,
        /// How many.
        len: usize,
    },
}

impl Chunk<'_> {
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Chunk::Bytes(b) => b.len(),
            Chunk::Fill { len, .. } => *len,
        }
    }

    /// True when it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `len` bytes from `offset` (within its length).
    pub fn slice(self, offset: usize, len: usize) -> Self {
        match self {
            Chunk::Bytes(b) => Chunk::Bytes(&b[offset..offset + len]),
            Chunk::Fill { byte, .. } => Chunk::Fill { byte, len },
        }
    }

    /// Appends its bytes to `out`.
    pub fn extend(&self, out: &mut Vec<u8>) {
        match *self {
            Chunk::Bytes(b) => out.extend_from_slice(b),
            Chunk::Fill { byte, len } => out.resize(out.len() + len, byte),
        }
    }
}

/// A work request: an RDMA WRITE (with immediate data, if any) of `data` to the peer's
/// memory at (`rkey`, `remote_va`).
#[derive(Debug, Clone)]
pub struct SendWr {
    /// Caller's id, returned in the completion.
    pub id: u64,
    /// What to write.
    pub data: WrData,
    /// Remote virtual address.
    pub remote_va: u64,
    /// R_Key of the peer's registered region, sent in the first packet's RETH.
    pub rkey: u32,
    /// Immediate data (WRITE with Immediate: the responder gets a completion).
    pub imm: Option<u32>,
}

#[derive(Debug)]
struct Posted {
    wr: SendWr,
    first_psn: u64,
    packets: u64,
}

/// One packet the requester is to (re)send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// 64-bit PSN count.
    pub psn: u64,
    /// RC WRITE First, Middle, Last or Only, with Immediate on the last when the WR has it.
    pub opcode: Opcode,
    /// RETH (first and only packets).
    pub reth: Option<Reth>,
    /// Immediate data (last and only packets of a WRITE with Immediate).
    pub imm: Option<u32>,
    /// AckReq: set on a message's last packet and on every `ack_every`-th.
    pub ack_req: bool,
    /// Which posted WR and which bytes of it.
    wr_index: usize,
    offset: usize,
    len: usize,
}

/// The sending side of an RC QP.
#[derive(Debug, Default)]
pub struct Requester {
    posted: VecDeque<Posted>,
    /// PSN the next posted WR starts at.
    next_new: u64,
    /// Oldest unacknowledged PSN.
    una: u64,
    /// Next PSN to send (go-back-N moves it back to `una`; with selective repeat, the
    /// next new one).
    send: u64,
    /// One past the highest PSN ever sent.
    highest: u64,
    /// First PSN count, so that PSNs start where the QP was told (0 here).
    base: u64,
    /// Where in `posted` the WR of `send` probably is (a hint: checked before use), so
    /// that the next segment is found without a search.
    send_wr: usize,
    /// Selective repeat's view of the outstanding packets; `None`: go-back-N.
    selective: Option<Scoreboard>,
}

/// Packets a message of `len` bytes takes at `mtu`.
pub fn packets_for(len: usize, mtu: usize) -> u64 {
    len.div_ceil(mtu).max(1) as u64
}

/// The 24-bit wire PSN of a count.
pub fn wire_psn(count: u64) -> u32 {
    (count & u64::from(MAX_24BIT)) as u32
}

/// The count nearest `reference` whose low 24 bits are `psn`.
pub fn count_near(psn: u32, reference: u64) -> u64 {
    let r = wire_psn(reference);
    let d = psn.wrapping_sub(r) & MAX_24BIT;
    if d < 1 << 23 {
        reference + u64::from(d)
    } else {
        reference.saturating_sub(u64::from((1u32 << 24) - d))
    }
}

impl Requester {
    /// A requester whose first PSN is `start` (24 bits).
    pub fn new(start: u32) -> Requester {
        let base = u64::from(start);
        Requester {
            next_new: base,
            una: base,
            send: base,
            highest: base,
            base,
            ..Requester::default()
        }
    }

    /// A requester with selective repeat, keeping at most `cap` payload bytes in flight
    /// (0: no cap) and tolerating `reorder` sends of reordering (1: none).
    pub fn selective(start: u32, cap: u64, reorder: u64) -> Requester {
        Requester {
            selective: Some(Scoreboard::new(cap).with_reorder(reorder)),
            ..Requester::new(start)
        }
    }

    /// Queues a WRITE.
    pub fn post(&mut self, wr: SendWr, mtu: usize) {
        let packets = packets_for(wr.data.len(), mtu);
        self.posted.push_back(Posted {
            wr,
            first_psn: self.next_new,
            packets,
        });
        self.next_new += packets;
    }

    /// Packets sent and not yet acknowledged.
    pub fn outstanding(&self) -> u64 {
        self.send - self.una
    }

    /// True when every posted WR is acknowledged.
    pub fn idle(&self) -> bool {
        self.posted.is_empty()
    }

    /// Packets in flight: outstanding, less those the responder selectively acknowledged.
    pub fn in_flight(&self) -> u64 {
        self.selective
            .as_ref()
            .map_or_else(|| self.outstanding(), Scoreboard::in_flight)
    }

    /// True when there is a packet to send and the window allows it: with selective
    /// repeat, a lost packet, or a new one within the window and the cap on packets in
    /// flight.
    pub fn can_send(&self, window: u64) -> bool {
        let new = self.send < self.next_new && self.send - self.una < window;
        match &self.selective {
            None => new,
            Some(board) => board.lost().is_some() || (new && board.allows_new()),
        }
    }

    /// The next packet to send (call [`sent`](Self::sent) once it is on its way): with
    /// selective repeat, the lowest lost one before any new one.
    pub fn next_segment(&self, mtu: usize, ack_every: u64) -> Option<Segment> {
        let psn = self
            .selective
            .as_ref()
            .and_then(Scoreboard::lost)
            .unwrap_or(self.send);
        if psn >= self.next_new {
            return None;
        }
        let holds = |i: usize| {
            self.posted
                .get(i)
                .is_some_and(|p| p.first_psn <= psn && psn < p.first_psn + p.packets)
        };
        let wr_index = if holds(self.send_wr) {
            self.send_wr
        } else {
            self.posted
                .partition_point(|p| p.first_psn + p.packets <= psn)
        };
        let p = self.posted.get(wr_index)?;
        let i = psn - p.first_psn;
        let offset = (i as usize) * mtu;
        let len = mtu.min(p.wr.data.len().saturating_sub(offset));
        let (first, last) = (i == 0, i + 1 == p.packets);
        let imm = p.wr.imm;
        let opcode = match (first, last, imm.is_some()) {
            (true, true, false) => Opcode::RC_WRITE_ONLY,
            (true, true, true) => Opcode::RC_WRITE_ONLY_IMM,
            (true, false, _) => Opcode::RC_WRITE_FIRST,
            (false, true, false) => Opcode::RC_WRITE_LAST,
            (false, true, true) => Opcode::RC_WRITE_LAST_IMM,
            (false, false, _) => Opcode::RC_WRITE_MIDDLE,
        };
        Some(Segment {
            psn,
            opcode,
            reth: first.then_some(Reth {
                va: p.wr.remote_va,
                rkey: p.wr.rkey,
                dma_len: p.wr.data.len() as u32,
            }),
            imm: last.then_some(imm).flatten(),
            // Selective repeat asks for every packet's ACK, as IRN does: its cap on
            // packets in flight is about one BDP, and only ACKs that come back as fast
            // as packets leave keep it full.
            ack_req: last || (i + 1).is_multiple_of(ack_every.max(1)) || self.selective.is_some(),
            wr_index,
            offset,
            len,
        })
    }

    /// The payload of a segment.
    pub fn payload(&self, s: &Segment) -> Chunk<'_> {
        self.posted[s.wr_index].wr.data.chunk(s.offset, s.len)
    }

    /// The segment went out; returns true if it was a retransmission.
    pub fn sent(&mut self, s: &Segment) -> bool {
        if let Some(board) = &mut self.selective {
            board.sent(self.una, s.psn, s.len);
            if s.psn < self.send {
                return true;
            }
        }
        self.send = s.psn + 1;
        let last_of_wr = self
            .posted
            .get(s.wr_index)
            .is_some_and(|p| s.psn + 1 == p.first_psn + p.packets);
        self.send_wr = s.wr_index + usize::from(last_of_wr);
        let retransmission = s.psn < self.highest;
        self.highest = self.highest.max(self.send);
        retransmission
    }

    /// An ACK for wire PSN `psn`: everything up to it is delivered. Appends the ids of
    /// the WRs now complete to `done`.
    pub fn on_ack(&mut self, psn: u32, done: &mut Vec<u64>) {
        let acked = count_near(psn, self.una);
        if acked < self.una || acked >= self.highest {
            return; // stale, or for something never sent
        }
        if let Some(board) = &mut self.selective {
            board.acked(self.una, acked + 1);
        }
        self.una = acked + 1;
        if self.send < self.una {
            self.send = self.una;
        }
        while let Some(p) = self.posted.front() {
            if p.first_psn + p.packets <= self.una {
                done.push(p.wr.id);
                self.posted.pop_front();
                self.send_wr = self.send_wr.saturating_sub(1);
            } else {
                break;
            }
        }
    }

    /// A NAK (PSN sequence error) naming wire PSN `psn`, the responder's expected PSN:
    /// everything before it is delivered; go back to it. Appends completed WR ids to
    /// `done`.
    pub fn on_nak(&mut self, psn: u32, done: &mut Vec<u64>) {
        let expected = count_near(psn, self.una);
        if expected < self.una || expected > self.highest {
            return;
        }
        if expected > self.una {
            self.on_ack(wire_psn(expected - 1), done);
        }
        self.send = expected;
    }

    /// Selective repeat's NAK: the responder expects wire PSN `expected` (everything
    /// before it is delivered) and has wire PSN `sacked`; a `sacked` before `expected`
    /// names no packet: one came that could not be placed, so `expected` is missing.
    /// Appends completed WR ids to `done`.
    pub fn on_sack(&mut self, expected: u32, sacked: u32, done: &mut Vec<u64>) {
        let expected = count_near(expected, self.una);
        if expected < self.una || expected > self.highest {
            return;
        }
        if expected > self.una {
            self.on_ack(wire_psn(expected - 1), done);
        }
        let sacked = count_near(sacked, self.una);
        if let Some(board) = &mut self.selective {
            if (self.una..self.highest).contains(&sacked) {
                board.sacked(self.una, sacked);
            } else {
                // No packet named: one came that could not be placed.
                board.oldest_lost(self.una);
            }
        }
    }

    /// The retransmission timer fired with packets outstanding: go back to the oldest
    /// (go-back-N), or count every packet not acknowledged as lost (selective repeat).
    pub fn on_timeout(&mut self) {
        match &mut self.selective {
            Some(board) => board.timed_out(self.una),
            None => self.send = self.una,
        }
    }

    /// Gives up: every posted WR is dropped unsent or unacknowledged, and their ids are
    /// returned, oldest first (the QP went to the error state).
    pub fn abort(&mut self) -> Vec<u64> {
        let ids = self.posted.drain(..).map(|p| p.wr.id).collect();
        self.una = self.next_new;
        self.send = self.next_new;
        self.highest = self.next_new;
        self.send_wr = 0;
        if let Some(board) = &mut self.selective {
            *board = board.fresh();
        }
        ids
    }

    /// Whether it runs selective repeat.
    pub fn is_selective(&self) -> bool {
        self.selective.is_some()
    }

    /// Packets acknowledged since the first PSN (the oldest unacknowledged PSN's count).
    pub fn acked_count(&self) -> u64 {
        self.una - self.base
    }

    /// Packets sent since the first PSN: one past the highest sent (`snd_nxt`).
    pub fn sent_count(&self) -> u64 {
        self.highest - self.base
    }

    /// The first PSN count (for tests).
    pub fn base(&self) -> u64 {
        self.base
    }
}

/// What the responder does with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// In order: accept it; ACK it if `ack`.
    Accept {
        /// AckReq was set: send an ACK for this PSN.
        ack: bool,
    },
    /// Ahead of the expected PSN: discard; send a NAK for `expected` if `nak`.
    OutOfOrder {
        /// First time for this expected PSN.
        nak: bool,
        /// The expected wire PSN.
        expected: u32,
    },
    /// Already received: discard; re-ACK the last in-order PSN if `ack`.
    Duplicate {
        /// AckReq was set.
        ack: bool,
        /// The last in-order wire PSN.
        last: u32,
    },
}

/// The receiving side of an RC QP.
#[derive(Debug, Default)]
pub struct Responder {
    expected: u64,
    nak_sent: bool,
    /// Message sequence number: WRITE messages completed.
    msn: u32,
    /// Where the WRITE in progress writes next.
    write_va: u64,
    /// R_Key of the WRITE in progress, from its first packet's RETH.
    write_rkey: u32,
    /// Bytes of the WRITE message in progress accepted so far.
    message_bytes: u64,
}

/// Where an accepted WRITE packet's payload lands, and how far its message has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// Virtual address of the payload's first byte.
    pub va: u64,
    /// The remote key it is written under.
    pub rkey: u32,
    /// Bytes of the message accepted so far, this packet's included.
    pub message_bytes: u64,
}

impl Responder {
    /// A responder expecting wire PSN `start` first.
    pub fn new(start: u32) -> Responder {
        Responder {
            expected: u64::from(start),
            ..Responder::default()
        }
    }

    /// A message completed that selective repeat placed (its MSN counts it).
    pub fn complete_message(&mut self) {
        self.msn = self.msn.wrapping_add(1) & 0x00ff_ffff;
    }

    /// The message sequence number (IBA 9.7.5.1.2): WRITE messages completed, 24 bits.
    pub fn msn(&self) -> u32 {
        self.msn
    }

    /// Places an accepted WRITE packet of `len` payload bytes: a first or only packet
    /// (with a RETH: `va`, `rkey`) starts a message; a last or only one completes it.
    pub fn place_write(&mut self, reth: Option<(u64, u32)>, len: usize, last: bool) -> Placement {
        if let Some((va, rkey)) = reth {
            self.write_va = va;
            self.write_rkey = rkey;
            self.message_bytes = 0;
        }
        let placement = Placement {
            va: self.write_va,
            rkey: self.write_rkey,
            message_bytes: self.message_bytes + len as u64,
        };
        self.write_va = self.write_va.wrapping_add(len as u64);
        self.message_bytes = placement.message_bytes;
        if last {
            self.msn = self.msn.wrapping_add(1) & 0x00ff_ffff;
        }
        placement
    }

    /// Judges a packet with wire PSN `psn`.
    pub fn judge(&mut self, psn: u32, ack_req: bool) -> Verdict {
        let count = count_near(psn, self.expected);
        if count == self.expected {
            self.expected += 1;
            self.nak_sent = false;
            Verdict::Accept { ack: ack_req }
        } else if count > self.expected {
            let nak = !self.nak_sent;
            self.nak_sent = true;
            Verdict::OutOfOrder {
                nak,
                expected: wire_psn(self.expected),
            }
        } else {
            Verdict::Duplicate {
                ack: ack_req,
                last: wire_psn(self.expected.wrapping_sub(1)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(r: &mut Requester, psn: u32) -> Vec<u64> {
        let mut done = Vec::new();
        r.on_ack(psn, &mut done);
        done
    }

    fn nak(r: &mut Requester, psn: u32) -> Vec<u64> {
        let mut done = Vec::new();
        r.on_nak(psn, &mut done);
        done
    }

    fn wr(id: u64, len: usize, imm: Option<u32>) -> SendWr {
        SendWr {
            id,
            data: WrData::from((0..len).map(|i| i as u8).collect::<Vec<u8>>()),
            remote_va: 0x1000,
            rkey: 7,
            imm,
        }
    }

    #[test]
    fn segmentation_opcodes_and_ack_req() {
        let mut r = Requester::new(0);
        r.post(wr(1, 2500, Some(9)), 1024);
        r.post(wr(2, 0, None), 1024);
        let mut seen = Vec::new();
        while let Some(s) = r.next_segment(1024, 2) {
            seen.push((
                s.opcode,
                s.reth.is_some(),
                s.imm,
                s.ack_req,
                r.payload(&s).len(),
            ));
            r.sent(&s);
        }
        assert_eq!(
            seen,
            [
                (Opcode::RC_WRITE_FIRST, true, None, false, 1024),
                (Opcode::RC_WRITE_MIDDLE, false, None, true, 1024),
                (Opcode::RC_WRITE_LAST_IMM, false, Some(9), true, 452),
                (Opcode::RC_WRITE_ONLY, true, None, true, 0),
            ]
        );
    }

    #[test]
    fn ack_completes_and_nak_goes_back() {
        let mut r = Requester::new(0x00ff_fffe); // wraps after two packets
        r.post(wr(1, 3000, None), 1024); // 3 packets
        r.post(wr(2, 100, None), 1024); // 1 packet
        for _ in 0..4 {
            let s = r.next_segment(1024, 1).unwrap();
            r.sent(&s);
        }
        assert!(
            ack(&mut r, 0x00ff_ffff).is_empty(),
            "two of three packets of WR 1"
        );
        // NAK for PSN 0x000001 (the 4th packet): the 3rd (PSN 0) arrived; go back.
        assert_eq!(nak(&mut r, 0x000001), vec![1]);
        let s = r.next_segment(1024, 1).unwrap();
        assert_eq!(wire_psn(s.psn), 1);
        assert!(r.sent(&s), "a retransmission");
        assert_eq!(ack(&mut r, 1), vec![2]);
        assert!(r.idle());
    }

    #[test]
    fn responder_accepts_in_order_naks_once_and_reacks_duplicates() {
        let mut resp = Responder::new(0x00ff_ffff);
        assert_eq!(
            resp.judge(0x00ff_ffff, false),
            Verdict::Accept { ack: false }
        );
        assert_eq!(
            resp.judge(0, true),
            Verdict::Accept { ack: true },
            "PSN wrap"
        );
        assert_eq!(
            resp.judge(2, false),
            Verdict::OutOfOrder {
                nak: true,
                expected: 1
            }
        );
        assert_eq!(
            resp.judge(3, false),
            Verdict::OutOfOrder {
                nak: false,
                expected: 1
            }
        );
        assert_eq!(
            resp.judge(0, true),
            Verdict::Duplicate { ack: true, last: 0 }
        );
        assert_eq!(resp.judge(1, false), Verdict::Accept { ack: false });
        assert_eq!(
            resp.judge(3, false),
            Verdict::OutOfOrder {
                nak: true,
                expected: 2
            }
        );
    }

    #[test]
    fn count_near_handles_the_wrap_both_ways() {
        assert_eq!(count_near(2, 0x00ff_fffe), 0x0100_0002);
        assert_eq!(count_near(0x00ff_fffe, 0x0100_0002), 0x00ff_fffe);
        assert_eq!(count_near(5, 5), 5);
    }
}

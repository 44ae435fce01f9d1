//! Selective repeat for an RC QP, as IRN does it (Mittal et al., "Revisiting Network
//! Support for RDMA", SIGCOMM 2018): the state each side keeps besides go-back-N's.
//!
//! - The responder ([`Reorder`]) accepts a packet up to a window ahead of the PSN it
//!   expects, places its payload at once, and answers each one out of order with a NAK
//!   that names both the PSN it expects (a cumulative acknowledgement) and the PSN that
//!   came (a selective one). A WRITE's middle and last packets carry no address: they are
//!   placed from their message's first packet (its RETH gives the address and the
//!   length), so one that comes before its first packet cannot be placed and is
//!   discarded, as if lost. A message completes, in order, once every packet up to its
//!   last has come.
//! - The requester ([`Scoreboard`]) keeps, for every packet outstanding, whether the
//!   responder has it and the order in which it was last sent. A packet is lost when a
//!   packet sent after it has been acknowledged (IRN's rule, by send order rather than
//!   PSN so that a lost retransmission is found the same way); after a timeout every
//!   packet not acknowledged is. IRN's rule assumes paths that keep order. Where the
//!   fabric sprays packets over several paths, a packet overtaken is not lost: with a
//!   reorder tolerance of k packets, a packet is lost only once a packet sent k or more
//!   sends after it has arrived (TCP's duplicate-ACK threshold, RFC 6675's DupThresh,
//!   counted in sends; k = 1 is IRN's rule). Lost packets go first, then new ones while the packets
//!   in flight (neither acknowledged nor selectively acknowledged, TCP's "pipe" of RFC
//!   6675) stay under the BDP cap. The cap counts payload bytes (IRN's packets of the
//!   path MTU), so that a QP of small messages is not held to a fraction of the BDP.
//!
//! Counts are 64-bit PSN counts, as in [`qp`](super::qp).

use std::collections::{BTreeMap, VecDeque};

/// One outstanding packet, as the requester sees it.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The responder has it (selectively acknowledged).
    sacked: bool,
    /// The send order of its last transmission.
    sent: u64,
    /// Payload bytes.
    len: u32,
    /// Sent more than once.
    resent: bool,
}

/// The requester's view of its outstanding packets.
#[derive(Debug, Default)]
pub struct Scoreboard {
    /// Per PSN count from the oldest unacknowledged one (`una`).
    slots: VecDeque<Slot>,
    /// Of those, selectively acknowledged.
    sacked: u64,
    /// Payload bytes of those neither acknowledged nor selectively acknowledged.
    in_flight_bytes: u64,
    /// Transmissions so far: the send order of the latest.
    sends: u64,
    /// The latest send order known to have arrived: a packet sent `reorder` or more
    /// sends before it and not acknowledged is lost.
    delivered: u64,
    /// A packet sent before this send order and not acknowledged is lost, whatever the
    /// reorder tolerance (a timeout, or the responder's word).
    forced: u64,
    /// The reorder tolerance in sends (at least 1).
    reorder: u64,
    /// Packets below this count are known not lost (the search for one starts here).
    cursor: u64,
    /// The lowest lost packet, once found.
    lost: Option<u64>,
    /// Most payload bytes in flight; 0: no cap.
    cap: u64,
}

impl Scoreboard {
    /// A scoreboard keeping at most `cap` payload bytes in flight (0: no cap).
    pub fn new(cap: u64) -> Scoreboard {
        Scoreboard {
            cap,
            reorder: 1,
            ..Scoreboard::default()
        }
    }

    /// The same, tolerating `sends` of reordering before a packet counts as lost (1:
    /// IRN's rule, none).
    pub fn with_reorder(mut self, sends: u64) -> Scoreboard {
        self.reorder = sends.max(1);
        self
    }

    /// An empty scoreboard with the same cap and tolerance.
    pub fn fresh(&self) -> Scoreboard {
        Scoreboard::new(self.cap).with_reorder(self.reorder)
    }

    /// The cap on payload bytes in flight (0: none).
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// Packets sent and neither acknowledged nor selectively acknowledged.
    pub fn in_flight(&self) -> u64 {
        self.slots.len() as u64 - self.sacked
    }

    /// Whether the cap allows one more new packet in flight.
    pub fn allows_new(&self) -> bool {
        self.cap == 0 || self.in_flight_bytes < self.cap
    }

    /// The lowest lost packet (a PSN count) to send again, if any.
    pub fn lost(&self) -> Option<u64> {
        self.lost
    }

    /// Packet `psn` (outstanding from `una`) of `len` payload bytes went out: a new one
    /// (`psn` one past the last outstanding) or a retransmission.
    pub fn sent(&mut self, una: u64, psn: u64, len: usize) {
        self.sends += 1;
        let i = (psn - una) as usize;
        match self.slots.get_mut(i) {
            Some(slot) => {
                slot.sent = self.sends;
                slot.resent = true;
            }
            None => {
                debug_assert_eq!(i, self.slots.len(), "new packets go in PSN order");
                self.in_flight_bytes += len as u64;
                self.slots.push_back(Slot {
                    sacked: false,
                    sent: self.sends,
                    len: len as u32,
                    resent: false,
                });
            }
        }
        if self.lost == Some(psn) {
            self.cursor = psn + 1;
            self.find_lost(una);
        }
    }

    /// Everything before `new_una` arrived (a cumulative acknowledgement); `una` was the
    /// oldest unacknowledged count.
    pub fn acked(&mut self, una: u64, new_una: u64) {
        let n = ((new_una - una) as usize).min(self.slots.len());
        if n > 0 {
            self.delivered = self.delivered.max(self.slots[n - 1].sent);
        }
        for slot in self.slots.drain(..n) {
            self.sacked -= u64::from(slot.sacked);
            if !slot.sacked {
                self.in_flight_bytes -= u64::from(slot.len);
            }
        }
        self.cursor = new_una;
        self.find_lost(new_una);
    }

    /// The responder has packet `psn` (a selective acknowledgement).
    pub fn sacked(&mut self, una: u64, psn: u64) {
        let Some(slot) = psn
            .checked_sub(una)
            .and_then(|i| self.slots.get_mut(i as usize))
        else {
            return;
        };
        if !slot.sacked {
            slot.sacked = true;
            self.sacked += 1;
            self.in_flight_bytes -= u64::from(slot.len);
        }
        if slot.sent > self.delivered {
            self.delivered = slot.sent;
            self.cursor = una;
        }
        self.find_lost(una);
    }

    /// The responder took a packet after the oldest unacknowledged one without the
    /// oldest: that one is lost, unless it was already sent again (the news may be older
    /// than the resend).
    pub fn oldest_lost(&mut self, una: u64) {
        if let Some(slot) = self.slots.front()
            && !slot.resent
            && !slot.sacked
            && slot.sent >= self.forced
        {
            self.forced = slot.sent + 1;
            self.cursor = una;
            self.find_lost(una);
        }
    }

    /// The retransmission timer fired: every packet not acknowledged is lost.
    pub fn timed_out(&mut self, una: u64) {
        self.forced = self.sends + 1;
        self.cursor = una;
        self.find_lost(una);
    }

    /// Looks for the lowest lost packet from the cursor on.
    fn find_lost(&mut self, una: u64) {
        let from = self.cursor.max(una);
        let start = (from - una) as usize;
        let found = self.slots.iter().skip(start).position(|s| {
            !s.sacked && (s.sent + self.reorder <= self.delivered || s.sent < self.forced)
        });
        self.lost = found.map(|k| from + k as u64);
        self.cursor = self.lost.unwrap_or(una + self.slots.len() as u64);
    }
}

/// A WRITE message whose first packet has come.
#[derive(Debug, Clone, Copy)]
struct Message {
    va: u64,
    rkey: u32,
    packets: u64,
    len: u64,
    /// Its ImmDt, once its last packet has come.
    imm: Option<u32>,
}

/// Where an out-of-order packet's payload goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Virtual address of the payload's first byte.
    pub va: u64,
    /// The remote key it is written under.
    pub rkey: u32,
}

/// A message whose every packet has come, in PSN order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    /// Its payload bytes.
    pub len: u64,
    /// Its ImmDt, for a WRITE with Immediate.
    pub imm: Option<u32>,
}

/// What the responder makes of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Placed; the PSN expected moved on by `advanced` (0: it came out of order).
    Placed {
        /// Packets the expected PSN moved on by.
        advanced: u64,
    },
    /// Had already come (or is behind the expected PSN): discarded.
    Duplicate,
    /// Cannot be placed: too far ahead of the expected PSN, or a middle or last packet
    /// whose message's first packet has not come. Discarded, as if lost.
    Unplaceable,
}

/// The responder's side: which packets ahead of the expected PSN have come, and the
/// messages they belong to.
#[derive(Debug)]
pub struct Reorder {
    /// The PSN count expected next: every packet before it has come.
    expected: u64,
    /// Per PSN count from `expected + 1`: whether it has come.
    received: VecDeque<bool>,
    /// Messages whose first packet has come and which are not yet complete, by first PSN.
    messages: BTreeMap<u64, Message>,
    /// How far ahead of the expected PSN a packet may be.
    window: u64,
    mtu: u64,
    /// The farthest ahead of the expected PSN a packet came (the reorder depth).
    max_depth: u64,
    /// The expected PSN a packet that could not be placed was last reported against.
    reported: Option<u64>,
}

impl Reorder {
    /// A responder expecting count `start` first, taking packets up to `window` ahead,
    /// messages cut at `mtu` bytes a packet.
    pub fn new(start: u64, window: u64, mtu: u64) -> Reorder {
        Reorder {
            expected: start,
            received: VecDeque::new(),
            messages: BTreeMap::new(),
            window: window.max(1),
            mtu: mtu.max(1),
            max_depth: 0,
            reported: None,
        }
    }

    /// A packet ahead of the expected PSN could not be placed: whether to tell the
    /// requester that the expected one is missing (once per expected PSN).
    pub fn report_missing(&mut self) -> bool {
        self.reported.replace(self.expected) != Some(self.expected)
    }

    /// The PSN count expected next.
    pub fn expected(&self) -> u64 {
        self.expected
    }

    /// The farthest ahead of the expected PSN a packet has come.
    pub fn max_depth(&self) -> u64 {
        self.max_depth
    }

    /// Where packet `psn` goes, or why it does not. `reth` is the first or only packet's
    /// (address, key, DMA length); `last` and `imm` are a last or only packet's.
    pub fn place(
        &mut self,
        psn: u64,
        reth: Option<(u64, u32, u32)>,
        last: bool,
        imm: Option<u32>,
    ) -> Result<Place, Arrival> {
        if psn < self.expected || self.has(psn) {
            return Err(Arrival::Duplicate);
        }
        if psn - self.expected >= self.window {
            return Err(Arrival::Unplaceable);
        }
        if let Some((va, rkey, len)) = reth {
            let packets = u64::from(len).div_ceil(self.mtu).max(1);
            self.messages.insert(
                psn,
                Message {
                    va,
                    rkey,
                    packets,
                    len: u64::from(len),
                    imm: None,
                },
            );
        }
        let Some((&first, message)) = self.messages.range_mut(..=psn).next_back() else {
            return Err(Arrival::Unplaceable);
        };
        if psn >= first + message.packets {
            return Err(Arrival::Unplaceable);
        }
        if last {
            message.imm = imm;
        }
        Ok(Place {
            va: message.va.wrapping_add((psn - first) * self.mtu),
            rkey: message.rkey,
        })
    }

    /// Packet `psn`, placed, has come: moves the expected PSN over every packet now in
    /// order and appends the messages that completed to `done`.
    pub fn arrived(&mut self, psn: u64, done: &mut Vec<Delivered>) -> Arrival {
        let ahead = psn - self.expected;
        self.max_depth = self.max_depth.max(ahead);
        if ahead > 0 {
            let i = (ahead - 1) as usize;
            if self.received.len() <= i {
                self.received.resize(i + 1, false);
            }
            self.received[i] = true;
            return Arrival::Placed { advanced: 0 };
        }
        let before = self.expected;
        self.expected += 1;
        while self.received.front() == Some(&true) {
            self.received.pop_front();
            self.expected += 1;
        }
        if self.received.front() == Some(&false) {
            self.received.pop_front();
        }
        while let Some(entry) = self.messages.first_entry() {
            let m = *entry.get();
            if *entry.key() + m.packets > self.expected {
                break;
            }
            entry.remove();
            done.push(Delivered {
                len: m.len,
                imm: m.imm,
            });
        }
        Arrival::Placed {
            advanced: self.expected - before,
        }
    }

    fn has(&self, psn: u64) -> bool {
        psn > self.expected
            && self
                .received
                .get((psn - self.expected - 1) as usize)
                .copied()
                .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends `n` new packets from `una` on.
    fn send_new(s: &mut Scoreboard, una: u64, n: u64) {
        for _ in 0..n {
            let next = una + s.slots.len() as u64;
            s.sent(una, next, 1000);
        }
    }

    #[test]
    fn a_packet_is_lost_when_a_later_one_is_acknowledged() {
        let mut s = Scoreboard::new(0);
        send_new(&mut s, 100, 5); // 100..104
        s.sacked(100, 102);
        assert_eq!(s.lost(), Some(100), "100 and 101 were sent before 102");
        s.sent(100, 100, 1000);
        assert_eq!(s.lost(), Some(101));
        s.sent(100, 101, 1000);
        assert_eq!(s.lost(), None, "both resent after 102's send");
        assert_eq!(s.in_flight(), 4);
        // 103 comes: sent after 100 and 101's first sends but before their resends.
        s.sacked(100, 103);
        assert_eq!(s.lost(), None);
        // 100's resend came. 104 went before it and has not: on a path that keeps
        // order, 104 is lost.
        s.acked(100, 101);
        assert_eq!(s.lost(), Some(104));
        s.sent(101, 104, 1000);
        assert_eq!(s.lost(), None);
        // A new packet sent after 101's resend comes first: 101's resend was lost.
        send_new(&mut s, 101, 1); // 105
        s.sacked(101, 105);
        assert_eq!(
            s.lost(),
            Some(101),
            "a lost retransmission is found by send order"
        );
        assert_eq!(s.in_flight(), 2, "101 and 104");
    }

    #[test]
    fn a_reorder_tolerance_waits_for_k_later_sends() {
        let mut s = Scoreboard::new(0).with_reorder(3);
        send_new(&mut s, 0, 6); // sends 1..6
        s.sacked(0, 1);
        s.sacked(0, 2);
        assert_eq!(s.lost(), None, "0 overtaken by two: within the tolerance");
        s.sacked(0, 3);
        assert_eq!(s.lost(), Some(0), "overtaken by three sent after it: lost");
        s.sent(0, 0, 1000);
        assert_eq!(s.lost(), None, "4 and 5 are within the tolerance");
        let mut t = Scoreboard::new(0).with_reorder(3);
        send_new(&mut t, 0, 4);
        t.timed_out(0);
        assert_eq!(t.lost(), Some(0), "a timeout ignores the tolerance");
    }

    #[test]
    fn news_that_the_oldest_is_missing_counts_once() {
        let mut s = Scoreboard::new(0);
        send_new(&mut s, 0, 3);
        s.oldest_lost(0);
        assert_eq!(s.lost(), Some(0));
        s.sent(0, 0, 1000);
        assert_eq!(s.lost(), None);
        s.oldest_lost(0);
        assert_eq!(s.lost(), None, "the resend may still come");
    }

    #[test]
    fn a_timeout_makes_every_unacknowledged_packet_lost_once() {
        let mut s = Scoreboard::new(0);
        send_new(&mut s, 0, 4);
        s.sacked(0, 2);
        s.timed_out(0);
        let mut resent = Vec::new();
        while let Some(p) = s.lost() {
            s.sent(0, p, 1000);
            resent.push(p);
        }
        assert_eq!(resent, [0, 1, 3], "2 came; each other one once");
    }

    #[test]
    fn the_cap_counts_packets_in_flight_not_the_window() {
        let mut s = Scoreboard::new(3000);
        send_new(&mut s, 0, 3);
        assert!(!s.allows_new());
        s.sacked(0, 2);
        assert!(
            s.allows_new(),
            "a selectively acknowledged packet is not in flight"
        );
        s.acked(0, 2);
        assert_eq!(s.in_flight(), 0);
    }

    #[test]
    fn the_responder_places_out_of_order_and_completes_in_order() {
        let mut r = Reorder::new(10, 64, 1000);
        let mut done = Vec::new();
        // Message A: 10..12 (2500 B, imm 7); message B: 13 (only, 10 B).
        let a = r.place(10, Some((0x1000, 5, 2500)), false, None).unwrap();
        assert_eq!(r.arrived(10, &mut done), Arrival::Placed { advanced: 1 });
        assert_eq!(a.va, 0x1000);
        // 11 is lost; 12 (A's last) and 13 come.
        let last = r.place(12, None, true, Some(7)).unwrap();
        assert_eq!(last.va, 0x1000 + 2000);
        assert_eq!(r.arrived(12, &mut done), Arrival::Placed { advanced: 0 });
        r.place(13, Some((0x9000, 5, 10)), true, None).unwrap();
        r.arrived(13, &mut done);
        assert!(done.is_empty(), "nothing completes past the hole");
        assert_eq!(r.place(12, None, true, Some(7)), Err(Arrival::Duplicate));
        let mid = r.place(11, None, false, None).unwrap();
        assert_eq!(mid.va, 0x1000 + 1000);
        assert_eq!(r.arrived(11, &mut done), Arrival::Placed { advanced: 3 });
        assert_eq!(
            done,
            [
                Delivered {
                    len: 2500,
                    imm: Some(7)
                },
                Delivered { len: 10, imm: None }
            ]
        );
        assert_eq!(r.expected(), 14);
        assert_eq!(r.max_depth(), 2, "13 came while 11 was expected");
    }

    #[test]
    fn a_middle_packet_before_its_first_or_past_the_window_is_unplaceable() {
        let mut r = Reorder::new(0, 4, 1000);
        assert_eq!(r.place(1, None, false, None), Err(Arrival::Unplaceable));
        assert_eq!(
            r.place(4, Some((0, 1, 10)), true, None),
            Err(Arrival::Unplaceable),
            "past the window"
        );
        // A first packet of a 1-packet message does not cover the PSN after it.
        r.place(2, Some((0, 1, 10)), true, None).unwrap();
        assert_eq!(r.place(3, None, true, None), Err(Arrival::Unplaceable));
    }
}

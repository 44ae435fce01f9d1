//! The receiving side of a TCP byte stream: which bytes have arrived, the cumulative ACK,
//! and the SACK blocks (RFC 2018) that tell the sender which out-of-order bytes it need
//! not resend. It tracks sequence ranges, not bytes: iWARP places each FPDU's payload
//! straight into memory as it arrives (RFC 5041), in order or not.

use crate::wire::tcp::{MAX_SACK_BLOCKS, SackBlocks};
use std::collections::BTreeMap;

/// What one segment did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Arrival {
    /// Bytes by which the cumulative ACK advanced (held bytes a filled hole joins to
    /// the in-order stream included).
    pub in_order_bytes: u64,
    /// New bytes held beyond a hole.
    pub out_of_order_bytes: u64,
    /// True when every byte had arrived before.
    pub duplicate: bool,
}

/// A receiver's view of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receiver {
    /// The next byte expected, as a 64-bit stream position (unwrapped sequence number).
    rcv_nxt: u64,
    /// Disjoint, non-adjacent ranges received beyond `rcv_nxt`: start → end.
    above: BTreeMap<u64, u64>,
    /// Starts of blocks, most recently changed first (RFC 2018 4: the first SACK block
    /// holds the latest segment, the others repeat the most recently reported).
    recent: Vec<u64>,
}

impl Receiver {
    /// A receiver expecting sequence number `rcv_nxt` next (the peer's ISN + 1).
    pub fn new(rcv_nxt: u32) -> Receiver {
        Receiver {
            rcv_nxt: u64::from(rcv_nxt),
            above: BTreeMap::new(),
            recent: Vec::new(),
        }
    }

    /// The cumulative acknowledgment number.
    pub fn ack(&self) -> u32 {
        self.rcv_nxt as u32
    }

    /// RCV.NXT as a 64-bit stream position.
    pub fn next_position(&self) -> u64 {
        self.rcv_nxt
    }

    /// The 64-bit stream position of sequence number `seq` (the one nearest RCV.NXT).
    pub fn position(&self, seq: u32) -> u64 {
        self.unwrap(seq)
    }

    /// Bytes held beyond the first hole.
    pub fn out_of_order_bytes(&self) -> u64 {
        self.above.iter().map(|(s, e)| e - s).sum()
    }

    /// The 64-bit stream position of sequence number `seq`: the one nearest `rcv_nxt`
    /// (RFC 9293's comparisons modulo 2^32 hold within 2^31 of it).
    fn unwrap(&self, seq: u32) -> u64 {
        let delta = seq.wrapping_sub(self.rcv_nxt as u32) as i32;
        self.rcv_nxt.saturating_add_signed(i64::from(delta))
    }

    /// Takes a segment of `len` bytes starting at sequence number `seq`.
    pub fn on_segment(&mut self, seq: u32, len: u32) -> Arrival {
        let start = self.unwrap(seq).max(self.rcv_nxt);
        let end = self.unwrap(seq) + u64::from(len);
        if end <= start {
            return Arrival {
                duplicate: len > 0,
                ..Arrival::default()
            };
        }
        if start == self.rcv_nxt {
            let before = self.rcv_nxt;
            self.rcv_nxt = end;
            // Absorb every held range the new edge reaches.
            while let Some((&s, &e)) = self.above.first_key_value() {
                if s > self.rcv_nxt {
                    break;
                }
                self.above.remove(&s);
                self.rcv_nxt = self.rcv_nxt.max(e);
            }
            self.recent.retain(|s| self.above.contains_key(s));
            return Arrival {
                in_order_bytes: self.rcv_nxt - before,
                out_of_order_bytes: 0,
                duplicate: false,
            };
        }
        let held_before = self.out_of_order_bytes();
        let (mut s, mut e) = (start, end);
        // Merge with every range that overlaps or touches [s, e).
        let touching: Vec<(u64, u64)> = self
            .above
            .range(..=e)
            .filter(|&(&rs, &re)| re >= s && rs <= e)
            .map(|(&rs, &re)| (rs, re))
            .collect();
        for (rs, re) in touching {
            self.above.remove(&rs);
            self.recent.retain(|&x| x != rs);
            s = s.min(rs);
            e = e.max(re);
        }
        self.above.insert(s, e);
        self.recent.insert(0, s);
        let new = self.out_of_order_bytes() - held_before;
        Arrival {
            in_order_bytes: 0,
            out_of_order_bytes: new,
            duplicate: new == 0,
        }
    }

    /// The SACK blocks to send, at most `max` (4, or 3 beside timestamps), most recent
    /// first, as 32-bit sequence numbers.
    pub fn sack_blocks(&self, max: usize) -> SackBlocks {
        let mut out = SackBlocks::default();
        for &s in self.recent.iter().take(max.min(MAX_SACK_BLOCKS)) {
            if let Some(&e) = self.above.get(&s) {
                // At most four: `take` bounds the loop.
                let _ = out.push((s as u32, e as u32));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_segments_advance_the_ack_and_a_filled_hole_absorbs_what_was_held() {
        let mut r = Receiver::new(1000);
        assert_eq!(r.on_segment(1000, 100).in_order_bytes, 100);
        let a = r.on_segment(1200, 100);
        assert_eq!((a.in_order_bytes, a.out_of_order_bytes), (0, 100));
        assert_eq!(r.ack(), 1100);
        assert_eq!(r.sack_blocks(4).as_slice(), &[(1200, 1300)]);
        let a = r.on_segment(1100, 100);
        assert_eq!(a.in_order_bytes, 200);
        assert_eq!(r.ack(), 1300);
        assert!(r.sack_blocks(4).is_empty());
        assert!(r.on_segment(1000, 300).duplicate);
        // A segment straddling the edge counts only its new bytes.
        assert_eq!(r.on_segment(1250, 100).in_order_bytes, 50);
    }

    // RFC 2018 section 5, third case: eight 500-byte segments from 5000, the 2nd, 4th,
    // 6th and 8th lost; the ACKs carry the SACK blocks of the RFC's table. Then the 4th
    // arrives: "ACK 5500, first block 6000-7500, second block 8000-8500".
    #[test]
    fn rfc_2018s_example_gives_the_rfcs_sack_blocks() {
        let mut r = Receiver::new(5000);
        r.on_segment(5000, 500);
        assert_eq!(r.ack(), 5500);
        r.on_segment(6000, 500);
        assert_eq!(r.sack_blocks(4).as_slice(), &[(6000, 6500)]);
        r.on_segment(7000, 500);
        assert_eq!(r.sack_blocks(4).as_slice(), &[(7000, 7500), (6000, 6500)]);
        r.on_segment(8000, 500);
        assert_eq!(
            r.sack_blocks(4).as_slice(),
            &[(8000, 8500), (7000, 7500), (6000, 6500)]
        );
        assert_eq!(r.ack(), 5500);
        r.on_segment(6500, 500);
        assert_eq!(r.ack(), 5500);
        assert_eq!(r.sack_blocks(4).as_slice(), &[(6000, 7500), (8000, 8500)]);
        assert_eq!(r.sack_blocks(1).as_slice(), &[(6000, 7500)]);
        assert_eq!(r.out_of_order_bytes(), 2000);
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut r = Receiver::new(u32::MAX - 99);
        assert_eq!(r.on_segment(u32::MAX - 99, 100).in_order_bytes, 100);
        assert_eq!(r.ack(), 0);
        r.on_segment(100, 50);
        assert_eq!(r.sack_blocks(3).as_slice(), &[(100, 150)]);
        assert_eq!(r.on_segment(0, 100).in_order_bytes, 150);
        assert_eq!(r.ack(), 150);
        // Old data from before the wrap is a duplicate, not data 4 GB ahead.
        assert!(r.on_segment(u32::MAX - 50, 20).duplicate);
    }
}

//! The sending side of a TCP stream, sans IO: it cuts queued bytes into segments of at
//! most one MSS, keeps a SACK scoreboard, finds lost segments and recovers them as RFC
//! 6675 does (a segment is lost once more than (DupThresh − 1) × SMSS bytes above it are
//! SACKed; the pipe counts what is still in the network), and resends everything
//! unSACKed after a retransmission timeout (RFC 6298). The driver calls
//! `poll_transmit`, `handle_ack`, `poll_timeout` and `handle_timeout`.

use super::cc::{AckInfo, CongestionControl};
use super::rto::{RtoConfig, RtoEstimator};
use crate::time::Nanos;
use std::collections::{BTreeMap, VecDeque};

/// RFC 6675 2: DupThresh = 3.
pub const DUP_THRESH: u64 = 3;

/// A segment to put on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Sequence number of its first byte.
    pub seq: u32,
    /// The same as a 64-bit stream position (ISS + 1 for the first byte, never wrapping).
    pub pos: u64,
    /// Payload bytes.
    pub len: u32,
    /// True when these bytes were sent before.
    pub retransmission: bool,
}

/// A segment sent and not yet cumulatively acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sent {
    end: u64,
    sent_at: Nanos,
    retransmitted: bool,
    sacked: bool,
    /// Declared lost by an RTO: resend whatever the SACKs say.
    timed_out: bool,
}

/// Counters a report shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SenderStats {
    /// Segments sent for the first time.
    pub segments_sent: u64,
    /// Segments sent again.
    pub retransmissions: u64,
    /// Loss recoveries entered on SACK evidence.
    pub fast_recoveries: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
}

/// The sending side of one connection.
#[derive(Debug, Clone)]
pub struct Sender<C: CongestionControl> {
    mss: u64,
    snd_una: u64,
    snd_nxt: u64,
    /// One past the last byte the application queued.
    stream_end: u64,
    /// Ends of the records queued with [`Sender::queue_record`] above SND.NXT: no new
    /// segment crosses one.
    record_ends: VecDeque<u64>,
    scoreboard: BTreeMap<u64, Sent>,
    /// In recovery until SND.UNA reaches this (RFC 6675 RecoveryPoint).
    recovery_point: Option<u64>,
    cc: C,
    rto: RtoEstimator,
    rto_deadline: Option<Nanos>,
    stats: SenderStats,
}

impl<C: CongestionControl> Sender<C> {
    /// A sender whose first byte has sequence number `iss` + 1 (the SYN took `iss`).
    pub fn new(iss: u32, mss: u32, cc: C, rto: RtoConfig) -> Sender<C> {
        let start = u64::from(iss) + 1;
        Sender {
            mss: u64::from(mss.max(1)),
            snd_una: start,
            snd_nxt: start,
            stream_end: start,
            record_ends: VecDeque::new(),
            scoreboard: BTreeMap::new(),
            recovery_point: None,
            cc,
            rto: RtoEstimator::new(rto),
            rto_deadline: None,
            stats: SenderStats::default(),
        }
    }

    /// Queues `bytes` more bytes of the stream.
    pub fn queue(&mut self, bytes: u64) {
        self.stream_end += bytes;
    }

    /// Queues a record of `bytes` bytes that starts and ends a segment: no segment holds
    /// bytes of it and of another (an iWARP NIC aligns each FPDU to a segment, RFC 5044
    /// 5.2). Records longer than the MSS are cut at the MSS.
    pub fn queue_record(&mut self, bytes: u64) {
        self.stream_end += bytes;
        self.record_ends.push_back(self.stream_end);
    }

    /// The stream position of the next byte to queue (ISS + 1 before any).
    pub fn queued_end(&self) -> u64 {
        self.stream_end
    }

    /// SND.NXT as a sequence number: what a pure ACK carries.
    pub fn next_seq(&self) -> u32 {
        self.snd_nxt as u32
    }

    /// SND.UNA as a stream position: every byte before it is acknowledged.
    pub fn acked_position(&self) -> u64 {
        self.snd_una
    }

    /// Whether [`poll_transmit`](Self::poll_transmit) would give a segment now: the
    /// window has room and a lost segment or new data waits.
    pub fn ready(&self) -> bool {
        let (pipe, next_lost) = self.pipe_and_next_lost();
        pipe + self.mss <= self.cc.cwnd_bytes().max(self.mss)
            && (next_lost.is_some() || self.snd_nxt < self.stream_end)
    }

    /// The smoothed round-trip time, once a sample came.
    pub fn srtt(&self) -> Option<Nanos> {
        self.rto.srtt()
    }

    /// Bytes queued and not yet acknowledged.
    pub fn unacked_bytes(&self) -> u64 {
        self.stream_end - self.snd_una
    }

    /// The congestion controller.
    pub fn cc(&self) -> &C {
        &self.cc
    }

    /// The counters.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// One pass over the scoreboard from the top: RFC 6675's SetPipe (the bytes still
    /// in the network) and NextSeg rule 1 (the first unSACKed segment that IsLost, not
    /// yet resent). IsLost: more than (DupThresh − 1) × SMSS bytes SACKed above it, or
    /// declared lost by a timeout. Linear in the segments outstanding.
    fn pipe_and_next_lost(&self) -> (u64, Option<u64>) {
        let (mut pipe, mut next_lost, mut sacked_above) = (0, None, 0);
        for (&start, s) in self.scoreboard.iter().rev() {
            let len = s.end - start;
            if s.sacked {
                sacked_above += len;
                continue;
            }
            let lost = s.timed_out || sacked_above > (DUP_THRESH - 1) * self.mss;
            if !lost {
                pipe += len;
            }
            if s.retransmitted {
                pipe += len;
            } else if lost {
                next_lost = Some(start);
            }
        }
        (pipe, next_lost)
    }

    /// The next segment to send, if the window allows one.
    pub fn poll_transmit(&mut self, now: Nanos) -> Option<Transmit> {
        let (pipe, next_lost) = self.pipe_and_next_lost();
        if pipe + self.mss > self.cc.cwnd_bytes().max(self.mss) {
            return None;
        }
        let (start, retransmission) = match next_lost {
            Some(start) => (start, true),
            None if self.snd_nxt < self.stream_end => (self.snd_nxt, false),
            None => return None,
        };
        let end = if retransmission {
            let s = self.scoreboard.get_mut(&start)?;
            s.retransmitted = true;
            s.sent_at = now;
            self.stats.retransmissions += 1;
            s.end
        } else {
            while self.record_ends.front().is_some_and(|&e| e <= start) {
                self.record_ends.pop_front();
            }
            let record_end = self.record_ends.front().copied().unwrap_or(self.stream_end);
            let end = (start + self.mss).min(self.stream_end).min(record_end);
            self.scoreboard.insert(
                start,
                Sent {
                    end,
                    sent_at: now,
                    retransmitted: false,
                    sacked: false,
                    timed_out: false,
                },
            );
            self.snd_nxt = end;
            self.stats.segments_sent += 1;
            end
        };
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rto.rto());
        }
        Some(Transmit {
            seq: start as u32,
            pos: start,
            len: (end - start) as u32,
            retransmission,
        })
    }

    /// The stream position of `seq`, the one nearest SND.UNA.
    fn unwrap(&self, seq: u32) -> u64 {
        let delta = seq.wrapping_sub(self.snd_una as u32) as i32;
        self.snd_una.saturating_add_signed(i64::from(delta))
    }

    /// Takes an ACK: its cumulative acknowledgment, its SACK blocks and its ECE flag.
    pub fn handle_ack(&mut self, now: Nanos, ack: u32, sack: &[(u32, u32)], ece: bool) {
        let ack = self.unwrap(ack).min(self.snd_nxt);
        let mut newly = 0;
        let mut sample = None;
        for &(left, right) in sack {
            let (l, r) = (self.unwrap(left), self.unwrap(right));
            for (&start, s) in self.scoreboard.range_mut(l..) {
                if s.end > r {
                    break;
                }
                if !s.sacked {
                    s.sacked = true;
                    newly += s.end - start;
                }
            }
        }
        while let Some((&start, &s)) = self.scoreboard.first_key_value() {
            if s.end > ack {
                break;
            }
            self.scoreboard.remove(&start);
            if !s.sacked {
                newly += s.end - start;
            }
            // Karn's rule: no sample from a resent segment.
            if !s.retransmitted && !s.timed_out {
                sample = Some(now.saturating_sub(s.sent_at));
            }
        }
        let advanced = ack > self.snd_una;
        self.snd_una = self.snd_una.max(ack);
        if let Some(rtt) = sample {
            self.rto.on_sample(rtt);
        }
        if self.recovery_point.is_some_and(|p| self.snd_una >= p) {
            self.recovery_point = None;
        }
        if self.recovery_point.is_none() && self.pipe_and_next_lost().1.is_some() {
            // RFC 6675 5 (4): enter loss recovery once per window.
            self.recovery_point = Some(self.snd_nxt);
            self.stats.fast_recoveries += 1;
            let flight = self.snd_nxt - self.snd_una;
            self.cc.on_loss(now, flight);
        } else if newly > 0 {
            self.cc.on_ack(&AckInfo {
                now,
                acked_bytes: newly,
                ce_bytes: if ece { newly } else { 0 },
                snd_una: self.snd_una,
                snd_nxt: self.snd_nxt,
                srtt: self.rto.srtt().unwrap_or_default(),
            });
        }
        // RFC 6298 5.2 and 5.3: stop the timer when all is acknowledged, restart it
        // when an ACK acknowledges new data.
        if self.snd_una == self.snd_nxt {
            self.rto_deadline = None;
        } else if advanced {
            self.rto_deadline = Some(now + self.rto.rto());
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) is due, if ever.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.rto_deadline
    }

    /// The retransmission timer at `now`: if it expired, back off, tell the congestion
    /// controller, and mark every unSACKed segment for resending (RFC 6675 5.1).
    pub fn handle_timeout(&mut self, now: Nanos) {
        if self.rto_deadline.is_none_or(|d| d > now) {
            return;
        }
        self.stats.timeouts += 1;
        self.rto.on_expiry();
        let flight = self.snd_nxt - self.snd_una;
        self.cc.on_rto(now, flight);
        for s in self.scoreboard.values_mut().filter(|s| !s.sacked) {
            s.timed_out = true;
            s.retransmitted = false;
        }
        self.recovery_point = Some(self.snd_nxt);
        self.rto_deadline = Some(now + self.rto.rto());
    }
}

#[cfg(test)]
mod tests {
    use super::super::cc::{Dctcp, Reno};
    use super::super::receiver::Receiver;
    use super::*;
    use std::collections::VecDeque;

    const MSS: u32 = 1000;

    /// Runs a sender and a receiver over a path that delivers segments one by one in
    /// order, 1 µs apart, dropping the first transmission of the segments in `drop`;
    /// returns the sender once the receiver has all of `segments`.
    fn run<C: CongestionControl>(cc: C, segments: u64, drop: &[u64]) -> (Sender<C>, Receiver) {
        let iss = 0xffff_f000;
        let mut s = Sender::new(iss, MSS, cc, RtoConfig::default());
        let mut r = Receiver::new(iss.wrapping_add(1));
        s.queue(segments * u64::from(MSS));
        let mut path = VecDeque::new();
        let mut now = Nanos(0);
        let mut first_sends = 0;
        for _ in 0..100_000 {
            while let Some(t) = s.poll_transmit(now) {
                if !t.retransmission {
                    first_sends += 1;
                    if drop.contains(&(first_sends - 1)) {
                        continue;
                    }
                }
                path.push_back(t);
            }
            if s.unacked_bytes() == 0 {
                break;
            }
            now += Nanos::from_micros(1);
            match path.pop_front() {
                Some(t) => {
                    r.on_segment(t.seq, t.len);
                    s.handle_ack(now, r.ack(), r.sack_blocks(3).as_slice(), false);
                }
                None => {
                    // Nothing in flight: only the timer can move things on.
                    now = s.poll_timeout().expect("a timer while data is unacked");
                    s.handle_timeout(now);
                }
            }
        }
        (s, r)
    }

    #[test]
    fn a_single_loss_is_recovered_by_sack_without_an_rto() {
        let (s, r) = run(Reno::new(u64::from(MSS), 10), 40, &[3]);
        assert_eq!(s.unacked_bytes(), 0);
        assert_eq!(r.ack(), 0xffff_f001u32.wrapping_add(40 * MSS));
        let st = s.stats();
        assert_eq!(
            (st.retransmissions, st.fast_recoveries, st.timeouts),
            (1, 1, 0)
        );
        assert_eq!(st.segments_sent, 40);
    }

    #[test]
    fn losing_the_last_segments_needs_the_rto_and_still_delivers_everything() {
        // Nothing is SACKed above the last two segments: no SACK evidence, only the RTO.
        let (s, r) = run(Dctcp::new(u64::from(MSS), 10), 12, &[10, 11]);
        assert_eq!(s.unacked_bytes(), 0);
        assert_eq!(r.ack(), 0xffff_f001u32.wrapping_add(12 * MSS));
        let st = s.stats();
        assert_eq!((st.timeouts, st.retransmissions), (1, 2));
        // RFC 5681: after the RTO the window restarts from one segment and grows.
        assert!(s.cc().cwnd_bytes() >= u64::from(MSS));
    }

    #[test]
    fn the_window_bounds_what_is_in_flight() {
        let mut s = Sender::new(0, MSS, Reno::new(u64::from(MSS), 4), RtoConfig::default());
        s.queue(100 * u64::from(MSS));
        let sent = std::iter::from_fn(|| s.poll_transmit(Nanos(0))).count();
        assert_eq!(sent, 4);
        assert_eq!(s.poll_timeout(), Some(Nanos::from_secs(1)));
    }
}

//! What a capture adds up to: per QP (frames, bytes, PSN gaps, retransmissions, CNPs, CE
//! marks), per priority (PFC frames and quanta), PAUSE, and ICRC failures.

use super::record::FrameRecord;
use crate::wire::bth::{MAX_24BIT, Opcode};
use crate::wire::{Ecn, FrameMeta};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// Smallest InfiniBand path MTU: a READ of `len` bytes takes at most `ceil(len / 256)`
/// response PSNs, which the requester skips before its next request.
const MIN_IB_MTU: u32 = 256;

/// The PSN bookkeeping of one sequenced stream (requests, or READ responses, to one QP).
#[derive(Debug, Clone, Copy, Default)]
struct PsnStream {
    highest: Option<u32>,
    /// Extra PSNs a READ request lets the next request skip.
    read_skip: u32,
}

/// The outcome of one PSN against its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PsnEvent {
    InOrder,
    Gap,
    Retransmission,
}

impl PsnStream {
    fn observe(&mut self, psn: u32, read_len: Option<u32>) -> PsnEvent {
        let event = match self.highest {
            None => PsnEvent::InOrder,
            Some(highest) => {
                // Distance in the 24-bit PSN space, taken as signed in (-2^23, 2^23].
                let d = psn.wrapping_sub(highest) & MAX_24BIT;
                if d == 0 || d > 1 << 23 {
                    return PsnEvent::Retransmission;
                }
                if d <= 1 + self.read_skip {
                    PsnEvent::InOrder
                } else {
                    PsnEvent::Gap
                }
            }
        };
        self.highest = Some(psn);
        self.read_skip = read_len.map_or(0, |len| len.div_ceil(MIN_IB_MTU).saturating_sub(1));
        event
    }
}

/// Counters of one destination QP.
#[derive(Debug, Clone, Default, Serialize)]
pub struct QpStats {
    /// Destination IP address.
    pub ip_dst: String,
    /// Destination QP.
    pub dest_qp: u32,
    /// RoCE frames to this QP.
    pub frames: u64,
    /// Their bytes on the wire.
    pub bytes: u64,
    /// Times the PSN jumped forward by more than one (lost or not captured packets).
    pub psn_gaps: u64,
    /// Frames whose PSN was not newer than the highest seen (go-back-N resends).
    pub retransmissions: u64,
    /// CNPs to this QP.
    pub cnps: u64,
    /// Frames to this QP that arrived CE-marked.
    pub ce_marked: u64,
    /// NAKs (AETH NAK or RNR NAK) to this QP.
    pub naks: u64,
    #[serde(skip)]
    requests: PsnStream,
    #[serde(skip)]
    responses: PsnStream,
}

/// PFC counters of one priority.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PriorityStats {
    /// The 802.1p priority.
    pub priority: u8,
    /// PFC frames with this priority's enable bit set.
    pub pfc_frames: u64,
    /// Of those, the ones with time 0 (XON).
    pub xon_frames: u64,
    /// Sum of this priority's pause times, in quanta.
    pub pause_quanta: u64,
}

/// The summary of a capture.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Frames read.
    pub frames: u64,
    /// Bytes on the wire.
    pub bytes: u64,
    /// First timestamp.
    pub first_ts_ns: Option<u64>,
    /// Last timestamp.
    pub last_ts_ns: Option<u64>,
    /// RoCEv2 frames.
    pub roce_frames: u64,
    /// Frames that did not decode (see their `error`).
    pub malformed_frames: u64,
    /// RoCE frames whose ICRC does not verify.
    pub icrc_failures: u64,
    /// Per destination QP, sorted by address and QP.
    pub qps: Vec<QpStats>,
    /// Per priority 0-7.
    pub priorities: Vec<PriorityStats>,
    /// 802.3x PAUSE frames.
    pub pause_frames: u64,
    /// Sum of their times, in quanta.
    pub pause_quanta_total: u64,
    #[serde(skip)]
    qp_index: BTreeMap<(IpAddr, u32), usize>,
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            frames: 0,
            bytes: 0,
            first_ts_ns: None,
            last_ts_ns: None,
            roce_frames: 0,
            malformed_frames: 0,
            icrc_failures: 0,
            qps: Vec::new(),
            priorities: (0..8)
                .map(|priority| PriorityStats {
                    priority,
                    ..PriorityStats::default()
                })
                .collect(),
            pause_frames: 0,
            pause_quanta_total: 0,
            qp_index: BTreeMap::new(),
        }
    }
}

impl Summary {
    /// Adds one decoded frame.
    pub fn add(&mut self, r: &FrameRecord, meta: Option<&FrameMeta>) {
        self.frames += 1;
        self.bytes += u64::from(r.len);
        self.first_ts_ns.get_or_insert(r.ts_ns);
        self.last_ts_ns = Some(r.ts_ns);
        if r.error.is_some() {
            self.malformed_frames += 1;
        }
        if let (Some(enable), Some(quanta)) = (r.pfc_enable, r.pfc_quanta) {
            for p in self.priorities.iter_mut() {
                if enable & (1 << p.priority) != 0 {
                    let q = quanta[usize::from(p.priority)];
                    p.pfc_frames += 1;
                    p.xon_frames += u64::from(q == 0);
                    p.pause_quanta += u64::from(q);
                }
            }
        }
        if let Some(q) = r.pause_quanta {
            self.pause_frames += 1;
            self.pause_quanta_total += u64::from(q);
        }
        let (Some(meta), Some(opcode), Some(psn)) = (meta, r.bth_opcode, r.psn) else {
            return;
        };
        self.roce_frames += 1;
        if r.icrc_ok == Some(false) {
            self.icrc_failures += 1;
        }
        let Some(ip_dst) = r.ip_dst.as_deref().and_then(|s| s.parse::<IpAddr>().ok()) else {
            return;
        };
        let key = (ip_dst, meta.dest_qp());
        let next = self.qps.len();
        let i = *self.qp_index.entry(key).or_insert(next);
        if i == next {
            self.qps.push(QpStats {
                ip_dst: ip_dst.to_string(),
                dest_qp: meta.dest_qp(),
                ..QpStats::default()
            });
        }
        let qp = &mut self.qps[i];
        let opcode = Opcode(opcode);
        qp.frames += 1;
        qp.bytes += u64::from(r.len);
        qp.cnps += u64::from(opcode.is_cnp());
        qp.ce_marked += u64::from(meta.ecn() == Ecn::Ce);
        if r.aeth_syndrome
            .is_some_and(|s| s >> 5 == 0b011 || s >> 5 == 0b001)
        {
            qp.naks += 1;
        }
        if opcode.is_sequenced() {
            let read_len = (opcode.0 & 0x1f == Opcode::RC_READ_REQUEST.0)
                .then_some(r.reth_dma_len)
                .flatten();
            let stream = if opcode.is_response() {
                &mut qp.responses
            } else {
                &mut qp.requests
            };
            match stream.observe(psn, read_len) {
                PsnEvent::InOrder => {}
                PsnEvent::Gap => qp.psn_gaps += 1,
                PsnEvent::Retransmission => qp.retransmissions += 1,
            }
        }
    }

    /// Sorts the per-QP list by address, then QP.
    pub fn finish(&mut self) {
        let order: Vec<usize> = self.qp_index.values().copied().collect();
        let mut sorted: Vec<QpStats> = order.iter().map(|&i| self.qps[i].clone()).collect();
        std::mem::swap(&mut self.qps, &mut sorted);
        self.qp_index = self
            .qp_index
            .keys()
            .enumerate()
            .map(|(i, k)| (*k, i))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_stream_counts_gaps_and_resends_across_the_wrap() {
        let mut s = PsnStream::default();
        let events: Vec<_> = [0xfffffe, 0xffffff, 0, 2, 1, 3]
            .into_iter()
            .map(|psn| s.observe(psn, None))
            .collect();
        use PsnEvent::*;
        assert_eq!(
            events,
            [InOrder, InOrder, InOrder, Gap, Retransmission, InOrder]
        );
    }

    #[test]
    fn a_read_request_lets_the_next_request_skip_its_response_psns() {
        let mut s = PsnStream::default();
        assert_eq!(s.observe(100, Some(4096)), PsnEvent::InOrder);
        // 4096 bytes at a 1024-byte MTU: responses 100..=103, next request 104.
        assert_eq!(s.observe(104, None), PsnEvent::InOrder);
        assert_eq!(s.observe(106, None), PsnEvent::Gap);
    }
}

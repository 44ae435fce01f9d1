//! What a capture adds up to: per QP (frames, bytes, PSN gaps, retransmissions, CNPs, CE
//! marks), per priority (PFC frames and quanta), PAUSE, and ICRC failures.

use super::record::FrameRecord;
use crate::wire::Ecn;
use crate::wire::bth::{MAX_24BIT, Opcode};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// Smallest InfiniBand path MTU: with no full segment seen to tell the path MTU, a READ
/// of `len` bytes may take up to `ceil(len / 256)` response PSNs.
const MIN_IB_MTU: u32 = 256;

/// The PSN bookkeeping of one sequenced stream (requests, or READ responses, to one QP).
#[derive(Debug, Clone, Copy, Default)]
struct PsnStream {
    highest: Option<u32>,
    /// The DMA length of a READ request just seen: the requester's next PSN skips its
    /// response PSNs, which depend on the path MTU.
    pending_read: Option<u32>,
}

/// The outcome of one PSN against its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PsnEvent {
    InOrder,
    Gap,
    Retransmission,
    /// The first PSN after a READ request: `jump` is judged once the path MTU is known.
    AfterRead {
        jump: u32,
        read_len: u32,
    },
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
                match self.pending_read {
                    Some(len) => PsnEvent::AfterRead {
                        jump: d,
                        read_len: len,
                    },
                    None if d == 1 => PsnEvent::InOrder,
                    None => PsnEvent::Gap,
                }
            }
        };
        self.highest = Some(psn);
        self.pending_read = read_len;
        event
    }
}

/// PSNs a READ of `len` bytes takes at path MTU `mtu`.
fn read_psns(len: u32, mtu: u32) -> u32 {
    len.div_ceil(mtu).max(1)
}

/// Counters of one destination QP, as seen on one pcapng interface (a replay's output has
/// one per switch port: a frame and its flooded copies are not retransmissions).
#[derive(Debug, Clone, Default, Serialize)]
pub struct QpStats {
    /// pcapng interface id the frames were captured on (0 in a pcap).
    pub interface_id: u32,
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

/// ECN codepoints of all IP frames (RoCE or not), as tshark's `ip.dsfield.ecn` counts them.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct EcnStats {
    /// IP frames (IPv4 and IPv6).
    pub ip_frames: u64,
    /// Not-ECT.
    pub not_ect_frames: u64,
    /// ECT(1).
    pub ect1_frames: u64,
    /// ECT(0).
    pub ect0_frames: u64,
    /// CE: marked by a switch on the way.
    pub ce_frames: u64,
}

/// The frames of one pcapng interface.
#[derive(Debug, Clone, Default, Serialize)]
pub struct InterfaceStats {
    /// pcapng interface id.
    pub interface_id: u32,
    /// Its `if_name`, when the capture names it.
    pub name: Option<String>,
    /// Frames captured on it.
    pub frames: u64,
    /// Their bytes on the wire.
    pub bytes: u64,
    /// RoCEv2 frames among them.
    pub roce_frames: u64,
    /// CE-marked IP frames among them.
    pub ce_frames: u64,
    /// PFC frames among them.
    pub pfc_frames: u64,
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
    /// Frames read, malformed ones included.
    pub frames: u64,
    /// Bytes on the wire.
    pub bytes: u64,
    /// Timestamp of the first frame in file order that has one, ns since the Unix epoch.
    pub first_ts_ns: Option<u64>,
    /// Timestamp of the last frame in file order that has one, ns since the Unix epoch.
    pub last_ts_ns: Option<u64>,
    /// RoCEv2 frames.
    pub roce_frames: u64,
    /// Frames that did not decode (see their `error`).
    pub malformed_frames: u64,
    /// RoCE frames whose ICRC does not verify.
    pub icrc_failures: u64,
    /// RoCE frames whose ICRC was not checked: the capture cut it off, or IPv6 extension
    /// headers precede UDP.
    pub icrc_unchecked: u64,
    /// Frames the capture cut short (its snap length): fewer bytes captured than sent.
    pub frames_cut: u64,
    /// Frames to UDP 4791 whose BTH the capture cut off: not counted as RoCE.
    pub bth_cut: u64,
    /// pcapng frames on non-Ethernet interfaces, skipped.
    pub skipped_non_ethernet: u64,
    /// Per interface and destination QP, sorted by interface, address and QP.
    pub qps: Vec<QpStats>,
    /// ECN of every IP frame, RoCE or not.
    pub ecn: EcnStats,
    /// Per pcapng interface, by id (one, id 0, for a pcap).
    pub interfaces: Vec<InterfaceStats>,
    /// Per priority 0-7.
    pub priorities: Vec<PriorityStats>,
    /// The path MTU, from the largest First/Middle segment seen (those carry exactly one
    /// MTU); it tells how many PSNs a READ takes.
    pub path_mtu: Option<u32>,
    /// 802.3x PAUSE frames.
    pub pause_frames: u64,
    /// Sum of their times, in quanta.
    pub pause_quanta_total: u64,
    #[serde(skip)]
    qp_index: BTreeMap<(u32, IpAddr, u32), usize>,
    /// (QP, PSN jump, READ length) of each first request after a READ.
    #[serde(skip)]
    read_jumps: Vec<(usize, u32, u32)>,
    #[serde(skip)]
    largest_segment: u32,
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
            icrc_unchecked: 0,
            frames_cut: 0,
            bth_cut: 0,
            skipped_non_ethernet: 0,
            qps: Vec::new(),
            ecn: EcnStats::default(),
            interfaces: Vec::new(),
            priorities: (0..8)
                .map(|priority| PriorityStats {
                    priority,
                    ..PriorityStats::default()
                })
                .collect(),
            path_mtu: None,
            pause_frames: 0,
            pause_quanta_total: 0,
            qp_index: BTreeMap::new(),
            read_jumps: Vec::new(),
            largest_segment: 0,
        }
    }
}

impl Summary {
    /// Adds one decoded frame.
    pub fn add(&mut self, r: &FrameRecord, interface_id: u32) {
        self.frames += 1;
        self.bytes += u64::from(r.len);
        let ce = r.ecn == Some(Ecn::Ce as u8);
        if r.ip_version.is_some()
            && let Some(ecn) = r.ecn
        {
            self.ecn.ip_frames += 1;
            match ecn {
                0 => self.ecn.not_ect_frames += 1,
                1 => self.ecn.ect1_frames += 1,
                2 => self.ecn.ect0_frames += 1,
                _ => self.ecn.ce_frames += 1,
            }
        }
        let iface = match self
            .interfaces
            .iter()
            .position(|i| i.interface_id == interface_id)
        {
            Some(i) => i,
            None => {
                self.interfaces.push(InterfaceStats {
                    interface_id,
                    ..InterfaceStats::default()
                });
                self.interfaces.sort_by_key(|i| i.interface_id);
                self.interfaces
                    .iter()
                    .position(|i| i.interface_id == interface_id)
                    .expect("just inserted")
            }
        };
        let i = &mut self.interfaces[iface];
        i.frames += 1;
        i.bytes += u64::from(r.len);
        i.roce_frames += u64::from(r.bth_opcode.is_some());
        i.ce_frames += u64::from(ce && r.ip_version.is_some());
        i.pfc_frames += u64::from(r.pfc_enable.is_some());
        // A frame without a time (a Simple Packet Block) is left out of the span.
        if let Some(ts) = r.ts_ns {
            self.first_ts_ns.get_or_insert(ts);
            self.last_ts_ns = Some(ts);
        }
        if r.error.is_some() {
            self.malformed_frames += 1;
        }
        self.frames_cut += u64::from(r.cut());
        self.bth_cut += u64::from(r.bth_cut());
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
        let (Some(opcode), Some(psn), Some(dest_qp)) = (r.bth_opcode, r.psn, r.dest_qp) else {
            return;
        };
        self.roce_frames += 1;
        if r.icrc_ok == Some(false) {
            self.icrc_failures += 1;
        }
        self.icrc_unchecked += u64::from(r.icrc_unchecked());
        let Some(ip_dst) = r.ip_dst.as_deref().and_then(|s| s.parse::<IpAddr>().ok()) else {
            return;
        };
        let key = (interface_id, ip_dst, dest_qp);
        let next = self.qps.len();
        let i = *self.qp_index.entry(key).or_insert(next);
        if i == next {
            self.qps.push(QpStats {
                interface_id,
                ip_dst: ip_dst.to_string(),
                dest_qp,
                ..QpStats::default()
            });
        }
        let qp = &mut self.qps[i];
        let opcode = Opcode(opcode);
        qp.frames += 1;
        qp.bytes += u64::from(r.len);
        qp.cnps += u64::from(opcode.is_cnp());
        qp.ce_marked += u64::from(r.ecn == Some(Ecn::Ce as u8));
        if r.aeth_syndrome
            .is_some_and(|s| s >> 5 == 0b011 || s >> 5 == 0b001)
        {
            qp.naks += 1;
        }
        // First and Middle segments (SEND, WRITE, READ response) carry one path MTU.
        if matches!(opcode.0 & 0x1f, 0x00 | 0x01 | 0x06 | 0x07 | 0x0d | 0x0e) && !opcode.is_cnp() {
            let payload = r.payload_len.unwrap_or(0) as u32;
            self.largest_segment = self.largest_segment.max(payload);
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
                PsnEvent::AfterRead { jump, read_len } => self.read_jumps.push((i, jump, read_len)),
            }
        }
    }

    /// Judges the PSN jumps after READs, now that the path MTU is known, and sorts the
    /// per-QP list by address, then QP.
    pub fn finish(&mut self) {
        let mtu = self.largest_segment;
        self.path_mtu = ((256..=4096).contains(&mtu) && mtu.is_power_of_two()).then_some(mtu);
        for (qp, jump, len) in std::mem::take(&mut self.read_jumps) {
            let expected = match self.path_mtu {
                Some(mtu) => read_psns(len, mtu),
                // Unknown MTU: any skip a READ could explain is taken as in order.
                None => read_psns(len, MIN_IB_MTU),
            };
            if jump > expected {
                self.qps[qp].psn_gaps += 1;
            }
        }
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
    fn after_a_read_the_jump_is_left_for_the_path_mtu_to_judge() {
        let mut s = PsnStream::default();
        assert_eq!(s.observe(100, Some(4096)), PsnEvent::InOrder);
        assert_eq!(
            s.observe(104, None),
            PsnEvent::AfterRead {
                jump: 4,
                read_len: 4096
            }
        );
        assert_eq!(s.observe(106, None), PsnEvent::Gap);
        // 4096 bytes at MTU 1024: four response PSNs, so the next request is 100 + 4.
        assert_eq!(read_psns(4096, 1024), 4);
        assert_eq!(read_psns(0, 1024), 1);
        assert_eq!(read_psns(4097, 4096), 2);
    }

    /// A summary judges READ jumps with the path MTU seen in full segments: a jump of 4
    /// after a 4 KiB READ is in order at MTU 1024, a jump of 6 is a gap.
    #[test]
    fn read_jumps_are_judged_with_the_inferred_path_mtu() {
        use crate::inspect::record::FrameRecord;
        let mut s = Summary::default();
        let mut add = |opcode: u8, psn: u32, reth_len: Option<u32>, payload: usize| {
            let r = FrameRecord {
                len: 100,
                ip_dst: Some("198.18.0.2".into()),
                bth_opcode: Some(opcode),
                psn: Some(psn),
                dest_qp: Some(7),
                reth_dma_len: reth_len,
                payload_len: Some(payload),
                ..FrameRecord::default()
            };
            s.add(&r, 0);
        };
        add(0x06, 10, Some(2048), 1024); // WRITE First: one MTU of 1024
        add(0x08, 11, None, 1024); // WRITE Last
        add(0x0c, 12, Some(4096), 0); // READ 4 KiB: PSNs 12..=15
        add(0x0a, 16, Some(8), 8); // next request: in order
        add(0x0c, 17, Some(4096), 0); // READ again: PSNs 17..=20
        add(0x0a, 23, Some(8), 8); // two PSNs missing
        s.finish();
        assert_eq!(s.path_mtu, Some(1024));
        assert_eq!(s.qps[0].psn_gaps, 1);
    }
}

//! The NIC on an iWARP fabric: each QP is an RDMA connection over TCP (RDMAP, DDP and
//! MPA per RFC 5040, 5041 and 5044) instead of RoCE's BTH over UDP. A posted WRITE
//! becomes tagged DDP segments, one FPDU per TCP segment, each carrying its own STag and
//! tagged offset, so the receiver places every one where it belongs as it arrives, in
//! order or not; a WRITE with Immediate is followed by an Immediate Data message (RFC
//! 7306), whose arrival in stream order completes the message at the responder. TCP
//! ([`super::tcp`]) resends what was lost, with SACK, and sets the pace by its congestion
//! window: DCTCP by default, Reno or CUBIC.
//!
//! What is not modelled: the TCP handshake and the MPA Request/Reply exchange (a
//! connection starts established, both sides' initial sequence numbers derived from
//! their QP numbers), the receive window (never the limit), a delayed-ACK timer (an ACK
//! goes every `ack_every` segments and at a message's last segment, so none is needed),
//! MPA markers and TCP timestamps (off, as a Chelsio T6 runs by default).

use super::tcp::{AckInfo, CongestionControl, Cubic, Dctcp, Receiver, Reno, RtoConfig, Sender};
use super::{Chunk, Completion, Endpoint, Peer, WcStatus, qp::SendWr};
use crate::time::Nanos;
use crate::wire::Ecn;
use crate::wire::ddp::{DDP_VERSION, RDMAP_VERSION, TAGGED_HEADER_LEN, UNTAGGED_HEADER_LEN};
use crate::wire::ddp::{DdpRepr, Placement, RdmapOpcode, TerminateControl, queue};
use crate::wire::elide::Elided;
use crate::wire::ipv4::Ipv4Repr;
use crate::wire::iwarp::{FpduRepr, IwarpFrame, IwarpPacket, IwarpRepr, TcpPayload};
use crate::wire::iwarp_goodput::IwarpFraming;
use crate::wire::mpa;
use crate::wire::tcp::{MAX_SACK_BLOCKS, TcpFlags, TcpOptions, TcpRepr};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, VecDeque};

/// TCP congestion control of an iWARP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TcpCc {
    /// DCTCP (RFC 8257): cuts in proportion to the share of CE-marked bytes.
    #[default]
    Dctcp,
    /// Reno (RFC 5681): halves on loss.
    Reno,
    /// CUBIC (RFC 9438).
    Cubic,
}

impl TcpCc {
    /// Every algorithm, as a configuration names them.
    pub const ALL: [TcpCc; 3] = [TcpCc::Dctcp, TcpCc::Reno, TcpCc::Cubic];

    /// Its name in a configuration.
    pub fn name(self) -> &'static str {
        match self {
            TcpCc::Dctcp => "dctcp",
            TcpCc::Reno => "reno",
            TcpCc::Cubic => "cubic",
        }
    }
}

/// How the NIC runs its iWARP connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IwarpConfig {
    /// Congestion control.
    pub cc: TcpCc,
    /// The interface MTU (the largest IP packet): one FPDU fills a segment of it.
    pub interface_mtu: u32,
    /// The initial congestion window, segments (RFC 6928: 10).
    pub initial_window_segments: u32,
    /// The least retransmission timeout, and the timeout before the first RTT sample.
    pub rto_min: Nanos,
    /// Data segments are ECN-capable (ECT(0)): the switches mark rather than drop them.
    pub ecn: bool,
    /// MPA CRC32c on every FPDU, checked on receipt.
    pub crc: bool,
    /// A receiver acknowledges every this many full segments (RFC 5681's delayed ACK:
    /// 2), and at once out of order, on a duplicate and on a message's last segment.
    pub ack_every: u32,
}

impl Default for IwarpConfig {
    fn default() -> IwarpConfig {
        IwarpConfig {
            cc: TcpCc::Dctcp,
            interface_mtu: DEFAULT_INTERFACE_MTU,
            initial_window_segments: 10,
            rto_min: Nanos::from_millis(1),
            ecn: true,
            crc: true,
            ack_every: 2,
        }
    }
}

/// The interface MTU a RoCE fabric configures for a 4096-byte path MTU, and the iWARP
/// NIC's default.
pub const DEFAULT_INTERFACE_MTU: u32 = 4200;

impl IwarpConfig {
    /// A full FPDU's WRITE payload and its bytes on the TCP stream (the MSS it fills),
    /// or `None` when the MTU leaves no room for one.
    pub fn fpdu_sizes(&self) -> Option<(u64, u64)> {
        let s = IwarpFraming::chelsio_t6(self.interface_mtu as usize)
            .segments()
            .first()
            .copied()?;
        Some((s.payload as u64, s.tcp_payload as u64))
    }
}

/// The congestion controller a connection runs.
#[derive(Debug, Clone)]
enum Cc {
    Dctcp(Dctcp),
    Reno(Reno),
    Cubic(Cubic),
}

impl Cc {
    fn new(kind: TcpCc, mss: u64, initial: u64) -> Cc {
        match kind {
            TcpCc::Dctcp => Cc::Dctcp(Dctcp::new(mss, initial)),
            TcpCc::Reno => Cc::Reno(Reno::new(mss, initial)),
            TcpCc::Cubic => Cc::Cubic(Cubic::new(mss, initial)),
        }
    }

    fn get(&self) -> &dyn CongestionControl {
        match self {
            Cc::Dctcp(c) => c,
            Cc::Reno(c) => c,
            Cc::Cubic(c) => c,
        }
    }

    fn get_mut(&mut self) -> &mut dyn CongestionControl {
        match self {
            Cc::Dctcp(c) => c,
            Cc::Reno(c) => c,
            Cc::Cubic(c) => c,
        }
    }
}

impl CongestionControl for Cc {
    fn cwnd_bytes(&self) -> u64 {
        self.get().cwnd_bytes()
    }
    fn ssthresh_bytes(&self) -> u64 {
        self.get().ssthresh_bytes()
    }
    fn on_ack(&mut self, ack: &AckInfo) {
        self.get_mut().on_ack(ack);
    }
    fn on_loss(&mut self, now: Nanos, flight_bytes: u64) {
        self.get_mut().on_loss(now, flight_bytes);
    }
    fn on_rto(&mut self, now: Nanos, flight_bytes: u64) {
        self.get_mut().on_rto(now, flight_bytes);
    }
    fn name(&self) -> &'static str {
        self.get().name()
    }
}

/// An RDMAP message on the sending stream, from queueing until wholly acknowledged.
#[derive(Debug)]
struct Message {
    /// Its first byte's stream position.
    start: u64,
    /// One past its WRITE segments: its Immediate Data, if any, follows.
    writes_end: u64,
    /// One past its last byte (the Immediate Data included).
    end: u64,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// A WRITE, with its Immediate Data message's MSN when it has one.
    Write { wr: SendWr, msn: Option<u32> },
    /// A Terminate: the peer wrote where it may not.
    Terminate(TerminateControl),
}

/// What an FPDU that arrived gives the ULP once the stream reaches it.
#[derive(Debug, Clone, Copy)]
enum Delivery {
    /// WRITE payload placed (bytes).
    Written(u64),
    /// The Immediate Data of a WRITE with Immediate.
    Immediate(u32),
    /// The peer terminated the connection.
    Terminate,
}

/// One QP's connection.
#[derive(Debug)]
struct Conn {
    local_port: u16,
    peer_port: u16,
    sender: Sender<Cc>,
    receiver: Receiver,
    /// Messages queued and not yet wholly acknowledged, in stream order.
    messages: VecDeque<Message>,
    /// The next MSN on the untagged Send queue (RFC 5041: from 1).
    send_msn: u32,
    /// FPDUs received, by stream position, until the stream reaches them: DDP places
    /// data at once, but delivers messages in order (RFC 5041 5.3).
    arrived: BTreeMap<u64, Delivery>,
    /// WRITE payload delivered in order since the last Immediate Data.
    written: u64,
    /// SND.UNA when the last timeout fired: the next one counts as a retry unless the
    /// peer acknowledged something since.
    acked_at_timeout: u64,
    /// Timeouts in a row without progress.
    retries: u8,
    /// Data segments taken since the last ACK this side sent.
    unacked_segments: u32,
    /// Whether the last data segment came CE-marked.
    ce_state: bool,
}

impl Conn {
    /// A TCP header of this connection at `seq` with `flags`: the current cumulative ACK
    /// and a window that never limits (the receive window is not modelled).
    fn header(&self, seq: u32, flags: TcpFlags) -> TcpRepr {
        TcpRepr {
            src_port: self.local_port,
            dst_port: self.peer_port,
            seq,
            ack: self.receiver.ack(),
            flags,
            window: u16::MAX,
            ..TcpRepr::default()
        }
    }
}

/// The iWARP side of a NIC.
#[derive(Debug)]
pub(super) struct IwarpNic {
    cfg: IwarpConfig,
    /// A full FPDU's payload and stream bytes.
    payload: u64,
    fpdu: u64,
    /// One per QP, in QP order.
    conns: Vec<Conn>,
    /// QP of each (local port, peer port).
    by_ports: FxHashMap<(u16, u16), usize>,
}

/// TCP port of a QP: in the ephemeral range, as a RoCE NIC's UDP source port.
fn port_of(qpn: u32) -> u16 {
    0xc000 | (qpn as u16 & 0x3fff)
}

/// Initial sequence number of a QP's stream: derived from its QP number, so that its
/// peer knows it without a handshake.
fn iss_of(qpn: u32) -> u32 {
    qpn.wrapping_mul(0x9e37_79b9)
}

/// Bytes of an Immediate Data message's payload (RFC 7306 4.4).
const IMMEDIATE_DATA_LEN: usize = 8;

/// The largest WRITE an iWARP QP takes: the DDP tagged offset is 64 bits, but the
/// stream positions here are too, so a bound keeps their sums far from overflow.
const MAX_MESSAGE_BYTES: u64 = 1 << 48;

impl IwarpNic {
    fn new(cfg: IwarpConfig) -> Option<IwarpNic> {
        let (payload, fpdu) = cfg.fpdu_sizes()?;
        Some(IwarpNic {
            cfg,
            payload,
            fpdu,
            conns: Vec::new(),
            by_ports: FxHashMap::default(),
        })
    }

    /// Stream bytes of a WRITE of `len` bytes, its Immediate Data excluded.
    fn write_stream_bytes(&self, len: u64) -> u64 {
        let full = len / self.payload;
        let rest = len % self.payload;
        let last = if rest > 0 || len == 0 {
            mpa::fpdu_len(TAGGED_HEADER_LEN + rest as usize) as u64
        } else {
            0
        };
        full * self.fpdu + last
    }
}

/// WRITE FPDUs of a message of `len` bytes with `payload` bytes a full one (one FPDU
/// even when empty).
fn write_fpdus(len: u64, payload: u64) -> u64 {
    len.div_ceil(payload).max(1)
}

/// Stream bytes of an Immediate Data message or a Terminate: an untagged FPDU.
const fn untagged_fpdu_len(payload: usize) -> u64 {
    mpa::fpdu_len(UNTAGGED_HEADER_LEN + payload) as u64
}

/// Bytes of a Terminate's payload: its control field.
const TERMINATE_LEN: usize = crate::wire::ddp::TERMINATE_CONTROL_LEN;

impl Endpoint {
    /// Runs every QP created from now on as an iWARP connection over TCP, as `cfg` says,
    /// instead of RoCEv2. Call before the first QP. `None` (and nothing changes) when the
    /// interface MTU leaves no room for an FPDU.
    pub fn set_iwarp(&mut self, cfg: IwarpConfig) -> Option<()> {
        self.iwarp = Some(Box::new(IwarpNic::new(cfg)?));
        Some(())
    }

    /// Whether the NIC runs iWARP.
    pub fn is_iwarp(&self) -> bool {
        self.iwarp.is_some()
    }

    /// The connection of a QP just created as `index`, numbered `qpn`, to `peer`.
    pub(super) fn iwarp_create(&mut self, index: usize, qpn: u32, peer: Peer) {
        let Some(nic) = self.iwarp.as_mut() else {
            return;
        };
        let cfg = nic.cfg;
        let rto = RtoConfig {
            initial: cfg.rto_min,
            min: cfg.rto_min,
            ..RtoConfig::default()
        };
        let cc = Cc::new(cfg.cc, nic.fpdu, u64::from(cfg.initial_window_segments));
        let (local_port, peer_port) = (port_of(qpn), port_of(peer.qpn));
        nic.conns.push(Conn {
            local_port,
            peer_port,
            sender: Sender::new(iss_of(qpn), nic.fpdu as u32, cc, rto),
            receiver: Receiver::new(iss_of(peer.qpn).wrapping_add(1)),
            messages: VecDeque::new(),
            send_msn: 1,
            arrived: BTreeMap::new(),
            written: 0,
            acked_at_timeout: 0,
            retries: 0,
            unacked_segments: 0,
            ce_state: false,
        });
        debug_assert_eq!(nic.conns.len(), index + 1, "a connection per QP");
        nic.by_ports.insert((local_port, peer_port), index);
    }

    /// Posts a WRITE on an iWARP QP: its FPDUs go on the QP's stream.
    pub(super) fn iwarp_post(&mut self, qi: usize, wr: SendWr) {
        let Some(nic) = self.iwarp.as_mut() else {
            return;
        };
        let len = (wr.data.len() as u64).min(MAX_MESSAGE_BYTES);
        let write = nic.write_stream_bytes(len);
        let conn = &mut nic.conns[qi];
        let start = conn.sender.queued_end();
        conn.sender.queue_record(write);
        let writes_end = conn.sender.queued_end();
        let msn = wr.imm.map(|_| {
            conn.sender
                .queue_record(untagged_fpdu_len(IMMEDIATE_DATA_LEN));
            conn.send_msn = conn.send_msn.wrapping_add(1);
            conn.send_msn.wrapping_sub(1)
        });
        conn.messages.push_back(Message {
            start,
            writes_end,
            end: conn.sender.queued_end(),
            kind: Kind::Write { wr, msn },
        });
    }

    /// Queues a Terminate on QP `qi`'s stream: the peer's WRITE could not be placed.
    fn iwarp_terminate(&mut self, qi: usize, control: TerminateControl) {
        let Some(conn) = self.iwarp.as_mut().map(|n| &mut n.conns[qi]) else {
            return;
        };
        if conn
            .messages
            .iter()
            .any(|m| matches!(m.kind, Kind::Terminate(_)))
        {
            return;
        }
        let start = conn.sender.queued_end();
        conn.sender.queue_record(untagged_fpdu_len(TERMINATE_LEN));
        conn.messages.push_back(Message {
            start,
            writes_end: start,
            end: conn.sender.queued_end(),
            kind: Kind::Terminate(control),
        });
    }

    /// The work requests still outstanding on an iWARP QP, taken out (it failed).
    pub(super) fn iwarp_abort(&mut self, qi: usize) -> Vec<u64> {
        let Some(conn) = self.iwarp.as_mut().map(|n| &mut n.conns[qi]) else {
            return Vec::new();
        };
        conn.messages
            .drain(..)
            .filter_map(|m| match m.kind {
                Kind::Write { wr, .. } => Some(wr.id),
                Kind::Terminate(_) => None,
            })
            .collect()
    }

    /// Whether every iWARP QP has had all it sent acknowledged.
    pub(super) fn iwarp_idle(&self) -> bool {
        self.iwarp.as_ref().is_none_or(|n| {
            n.conns
                .iter()
                .zip(&self.qps)
                .all(|(c, q)| q.failed || c.sender.unacked_bytes() == 0)
        })
    }

    /// The rate QP `qi`'s window allows: a window per smoothed RTT, at most the link's.
    pub(super) fn iwarp_window_rate(&self, qi: usize) -> Option<u64> {
        let conn = self.iwarp.as_ref()?.conns.get(qi)?;
        let link = self.link.bits_per_sec();
        let Some(srtt) = conn.sender.srtt().filter(|t| t.0 > 0) else {
            return Some(link);
        };
        let bps =
            u128::from(conn.sender.cc().cwnd_bytes()) * 8 * 1_000_000_000 / u128::from(srtt.0);
        Some(bps.min(u128::from(link)) as u64)
    }

    /// DCTCP's alpha on QP `qi` (0 under Reno or CUBIC).
    pub(super) fn iwarp_alpha(&self, qi: usize) -> f64 {
        match self.iwarp.as_ref().map(|n| n.conns[qi].sender.cc()) {
            Some(Cc::Dctcp(d)) => d.alpha(),
            _ => 0.0,
        }
    }

    /// An iWARP frame for this NIC: its ACK moves the sender on, its FPDU is placed and
    /// acknowledged. Returns false when the frame is no TCP segment of one of its
    /// connections.
    pub(super) fn receive_iwarp(&mut self, now: Nanos, frame: &[u8]) -> bool {
        let Ok(Some(f)) = IwarpFrame::parse(frame) else {
            return false;
        };
        if f.eth.dst != self.mac || f.ip.dst != self.ip {
            return false;
        }
        let Some(nic) = self.iwarp.as_ref() else {
            return false;
        };
        let Some(&qi) = nic.by_ports.get(&(f.tcp.dst_port, f.tcp.src_port)) else {
            return false;
        };
        if self.qps[qi].failed {
            return true;
        }
        if !f.tcp_checksum_ok {
            // Dropped as a NIC drops it: TCP resends.
            self.counters.icrc_errors += 1;
            return true;
        }
        self.touch(qi);
        if f.tcp.flags.contains(TcpFlags::ACK) {
            self.iwarp_take_ack(now, qi, &f.tcp);
        }
        if !f.payload.is_empty() {
            let ce = f.ip.ecn == Ecn::Ce;
            self.iwarp_take_fpdu(now, qi, f.tcp.seq, f.payload, ce);
        }
        true
    }

    /// The ACK a segment carries: completes what it acknowledges.
    fn iwarp_take_ack(&mut self, now: Nanos, qi: usize, tcp: &TcpRepr) {
        let Some(conn) = self.iwarp.as_mut().map(|n| &mut n.conns[qi]) else {
            return;
        };
        let ece = tcp.flags.contains(TcpFlags::ECE);
        let before = conn.sender.acked_position();
        conn.sender
            .handle_ack(now, tcp.ack, tcp.options.sack.as_slice(), ece);
        let acked = conn.sender.acked_position();
        if acked > before {
            conn.retries = 0;
        }
        while conn.messages.front().is_some_and(|m| m.end <= acked) {
            let Some(m) = conn.messages.pop_front() else {
                break;
            };
            // A Terminate acknowledged needs nothing more: the peer failed its QP.
            if let Kind::Write { wr, .. } = m.kind {
                self.completions.push_back(Completion::Sent {
                    qp: qi,
                    wr_id: wr.id,
                });
            }
        }
    }

    /// An FPDU in a segment at `seq`: check, place, acknowledge, and deliver what the
    /// stream now reaches.
    fn iwarp_take_fpdu(&mut self, now: Nanos, qi: usize, seq: u32, payload: &[u8], ce: bool) {
        let Some(nic) = self.iwarp.as_ref() else {
            return;
        };
        let Ok(packet) = IwarpPacket::parse_fpdu(payload, nic.cfg.crc) else {
            // A bad CRC or a segment that is no FPDU: dropped unacknowledged.
            self.counters.icrc_errors += 1;
            return;
        };
        if ce {
            self.qps[qi].counters.ce_received += 1;
        }
        let last = packet.ddp.last;
        let ack_every = self.iwarp.as_ref().map_or(1, |n| n.cfg.ack_every);
        let conn = &mut self.iwarp.as_mut().expect("checked above").conns[qi];
        // DCTCP's receiver (RFC 8257 3.2): when the CE state changes, the segments held
        // for a delayed ACK are acknowledged at once with the state they had.
        if ce != conn.ce_state && conn.unacked_segments > 0 {
            let before = conn.ce_state;
            self.iwarp_send_ack(qi, before);
        }
        let conn = &mut self.iwarp.as_mut().expect("checked above").conns[qi];
        conn.ce_state = ce;
        let pos = conn.receiver.position(seq);
        let had_hole = conn.receiver.out_of_order_bytes() > 0;
        let arrival = conn.receiver.on_segment(seq, payload.len() as u32);
        conn.unacked_segments += 1;
        // RFC 5681 4.2: an ACK for every `ack_every` segments, and at once for one out
        // of order, a duplicate, or one that fills a hole; and here for a message's last
        // segment, so that no completion waits for a delayed-ACK timer.
        let now_ack = conn.unacked_segments >= ack_every
            || arrival.duplicate
            || arrival.out_of_order_bytes > 0
            || had_hole
            || last;
        if !arrival.duplicate {
            let delivery = self.iwarp_place(qi, &packet);
            let conn = &mut self.iwarp.as_mut().expect("checked above").conns[qi];
            conn.arrived.insert(pos, delivery);
        }
        self.iwarp_deliver(now, qi);
        if now_ack {
            self.iwarp_send_ack(qi, ce);
        }
    }

    /// Places an FPDU's data (a tagged WRITE straight into its region); what it gives
    /// once the stream reaches it.
    fn iwarp_place(&mut self, qi: usize, packet: &IwarpPacket<'_>) -> Delivery {
        match (packet.ddp.opcode, packet.ddp.placement) {
            (RdmapOpcode::WRITE, Placement::Tagged { stag, to }) => {
                if self.write_memory(stag, to, packet.payload, Elided::NONE) {
                    Delivery::Written(packet.payload.len() as u64)
                } else {
                    // RFC 5040 7.2: a tagged buffer error is reported with a Terminate.
                    self.counters.access_errors += 1;
                    let valid = self.regions.iter().any(|r| r.rkey == stag);
                    self.iwarp_terminate(
                        qi,
                        TerminateControl {
                            layer: 1,
                            error_type: 1,
                            error_code: u8::from(valid),
                            ..TerminateControl::default()
                        },
                    );
                    Delivery::Written(0)
                }
            }
            (RdmapOpcode::IMMEDIATE_DATA | RdmapOpcode::IMMEDIATE_DATA_SE, _) => {
                let imm = packet
                    .payload
                    .first_chunk::<4>()
                    .map_or(0, |b| u32::from_be_bytes(*b));
                Delivery::Immediate(imm)
            }
            (RdmapOpcode::TERMINATE, _) => Delivery::Terminate,
            _ => Delivery::Written(0),
        }
    }

    /// Delivers, in stream order, the FPDUs the stream has reached.
    fn iwarp_deliver(&mut self, now: Nanos, qi: usize) {
        loop {
            let Some(conn) = self.iwarp.as_mut().map(|n| &mut n.conns[qi]) else {
                return;
            };
            let next = conn.receiver.next_position();
            let Some(entry) = conn.arrived.first_entry().filter(|e| *e.key() < next) else {
                return;
            };
            match entry.remove() {
                Delivery::Written(bytes) => {
                    conn.written += bytes;
                    let q = &mut self.qps[qi];
                    q.counters.data_packets_received += 1;
                    q.counters.data_bytes_received += bytes;
                }
                Delivery::Immediate(imm) => {
                    let bytes = std::mem::take(&mut conn.written);
                    self.completions
                        .push_back(Completion::Received { qp: qi, imm, bytes });
                }
                Delivery::Terminate => {
                    self.counters.naks_received += 1;
                    self.fail(now, qi, WcStatus::RemoteAccess);
                    return;
                }
            }
        }
    }

    /// The IPv4 header of a segment to `dst`.
    fn iwarp_ip(&mut self, dst: std::net::Ipv4Addr, ecn: Ecn) -> Ipv4Repr {
        self.ip_ident = self.ip_ident.wrapping_add(1);
        Ipv4Repr {
            src: self.ip,
            dst,
            dscp: self.cfg.dscp,
            ecn,
            ident: self.ip_ident,
            dont_frag: true,
            ttl: 64,
        }
    }

    /// Queues a pure ACK on QP `qi`: the cumulative ACK, the SACK blocks, and ECE when
    /// the segment it answers was CE-marked.
    fn iwarp_send_ack(&mut self, qi: usize, ece: bool) {
        let peer = self.qps[qi].peer;
        let ip = self.iwarp_ip(peer.ip, Ecn::NotEct);
        let Some(conn) = self.iwarp.as_ref().map(|n| &n.conns[qi]) else {
            return;
        };
        let mut flags = TcpFlags::ACK;
        if ece {
            flags |= TcpFlags::ECE;
        }
        let repr = IwarpRepr {
            eth_dst: peer.mac,
            eth_src: self.mac,
            vlan: None,
            ip,
            tcp: TcpRepr {
                options: TcpOptions {
                    sack: conn.receiver.sack_blocks(MAX_SACK_BLOCKS),
                    ..TcpOptions::default()
                },
                ..conn.header(conn.sender.next_seq(), flags)
            },
            payload: TcpPayload::Empty,
        };
        if let Some(conn) = self.iwarp.as_mut().map(|n| &mut n.conns[qi]) {
            conn.unacked_segments = 0;
        }
        let mut buf = self.spare_buffer(repr.frame_len());
        if repr.emit(&mut buf).is_ok() {
            self.counters.acks_sent += 1;
            self.control.push_back((self.data_priority, buf));
        } else {
            self.spare.push(buf);
        }
    }

    /// The next data segment of the iWARP QPs, in turn, if one's window allows it.
    pub(super) fn iwarp_send_data(&mut self, now: Nanos) -> Option<&[u8]> {
        let n = self.qps.len();
        let ready = (0..n).map(|k| (self.next_qp + k) % n).find(|&qi| {
            !self.qps[qi].failed
                && self
                    .iwarp
                    .as_ref()
                    .is_some_and(|nic| nic.conns[qi].sender.ready())
        })?;
        self.next_qp = (ready + 1) % n;
        self.iwarp_segment(now, ready)
    }

    /// Builds and starts QP `qi`'s next segment.
    fn iwarp_segment(&mut self, now: Nanos, qi: usize) -> Option<&[u8]> {
        let peer = self.qps[qi].peer;
        let ecn = match self.iwarp.as_ref()?.cfg.ecn {
            true => Ecn::Ect0,
            false => Ecn::NotEct,
        };
        let ip = self.iwarp_ip(peer.ip, ecn);
        let nic = self.iwarp.as_mut()?;
        // Data nobody reads ([`WrData::Fill`]) is written out here: iWARP sends it whole.
        let scratch = &mut self.int_scratch;
        let (payload_size, fpdu_size, crc) = (nic.payload, nic.fpdu, nic.cfg.crc);
        let conn = &mut nic.conns[qi];
        let t = conn.sender.poll_transmit(now)?;
        let at = conn.messages.partition_point(|m| m.end <= t.pos);
        let m = conn.messages.get(at)?;
        let mut small = [0u8; IMMEDIATE_DATA_LEN];
        let (ddp, data): (DdpRepr, &[u8]) = match &m.kind {
            Kind::Write { wr, msn } => {
                if t.pos < m.writes_end {
                    let k = (t.pos - m.start) / fpdu_size;
                    let len = wr.data.len() as u64;
                    let fpdus = write_fpdus(len, payload_size);
                    let from = k * payload_size;
                    let to = (from + payload_size).min(len);
                    let ddp = DdpRepr {
                        last: k + 1 == fpdus,
                        ddp_version: DDP_VERSION,
                        rdmap_version: RDMAP_VERSION,
                        opcode: RdmapOpcode::WRITE,
                        placement: Placement::Tagged {
                            stag: wr.rkey,
                            to: wr.remote_va.wrapping_add(from),
                        },
                    };
                    let data = match wr.data.chunk(from as usize, (to - from) as usize) {
                        Chunk::Bytes(b) => b,
                        fill => {
                            scratch.clear();
                            fill.extend(scratch);
                            &scratch[..]
                        }
                    };
                    (ddp, data)
                } else {
                    // The Immediate Data: the 32-bit immediate first, big-endian.
                    small[..4].copy_from_slice(&wr.imm.unwrap_or_default().to_be_bytes());
                    let msn = msn.unwrap_or(1);
                    (
                        untagged(RdmapOpcode::IMMEDIATE_DATA, queue::SEND, msn),
                        &small[..],
                    )
                }
            }
            Kind::Terminate(control) => {
                control.emit(&mut small).ok()?;
                let ddp = untagged(RdmapOpcode::TERMINATE, queue::TERMINATE, 1);
                (ddp, &small[..TERMINATE_LEN])
            }
        };
        let payload_len = data.len() as u64;
        let repr = IwarpRepr {
            eth_dst: peer.mac,
            eth_src: self.mac,
            vlan: None,
            ip,
            tcp: conn.header(t.seq, TcpFlags::ACK | TcpFlags::PSH),
            payload: TcpPayload::Fpdu(FpduRepr {
                ddp,
                read_request: None,
                payload: data,
                crc,
                marker_offset: None,
            }),
        };
        debug_assert_eq!(repr.payload.len() as u32, t.len, "one FPDU per segment");
        self.out.resize(repr.frame_len(), 0);
        let len = repr.emit(&mut self.out).ok()?;
        self.out.truncate(len);
        let q = &mut self.qps[qi];
        if t.retransmission {
            q.counters.retransmitted_packets += 1;
        }
        q.counters.data_packets_sent += 1;
        q.counters.data_bytes_sent += payload_len;
        self.bytes_sent += payload_len;
        self.counters.frames_sent += 1;
        self.link.start(now, &self.out);
        Some(&self.out)
    }

    /// The earliest deadline of the iWARP QPs: a segment the window allows (once the
    /// link is free and the data priority open), or a retransmission timeout.
    pub(super) fn iwarp_deadline(&self) -> Option<Nanos> {
        let nic = self.iwarp.as_ref()?;
        let mut next: Option<Nanos> = None;
        for (conn, q) in nic.conns.iter().zip(&self.qps) {
            if q.failed {
                continue;
            }
            let mut at = |t: Nanos| next = Some(next.map_or(t, |n| n.min(t)));
            if conn.sender.ready() {
                at(self.data_may_go_at(Nanos::ZERO));
            }
            if let Some(t) = conn.sender.poll_timeout() {
                at(t);
            }
        }
        next
    }

    /// Runs the retransmission timers due at `now`; a QP whose timer fires
    /// `retry_count` times in a row without progress goes to the error state.
    pub(super) fn iwarp_timeouts(&mut self, now: Nanos) {
        let n = self.iwarp.as_ref().map_or(0, |nic| nic.conns.len());
        for qi in 0..n {
            if self.qps[qi].failed {
                continue;
            }
            let Some(conn) = self.iwarp.as_mut().map(|nic| &mut nic.conns[qi]) else {
                return;
            };
            if conn.sender.poll_timeout().is_none_or(|t| t > now) {
                continue;
            }
            let acked = conn.sender.acked_position();
            if acked != conn.acked_at_timeout {
                conn.acked_at_timeout = acked;
                conn.retries = 0;
            }
            if conn.retries >= self.cfg.retry_count {
                self.qps[qi].retries = conn.retries;
                self.fail(now, qi, WcStatus::RetryExceeded);
                continue;
            }
            conn.retries += 1;
            conn.sender.handle_timeout(now);
            self.qps[qi].counters.timeouts += 1;
        }
    }
}

/// An untagged DDP segment header: the whole message in one segment.
fn untagged(opcode: RdmapOpcode, qn: u32, msn: u32) -> DdpRepr {
    DdpRepr {
        last: true,
        ddp_version: DDP_VERSION,
        rdmap_version: RDMAP_VERSION,
        opcode,
        placement: Placement::Untagged {
            qn,
            msn,
            mo: 0,
            inval_stag: 0,
        },
    }
}

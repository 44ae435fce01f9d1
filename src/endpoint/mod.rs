//! The endpoint core: a RoCEv2 NIC port as an I/O-free state machine.
//!
//! Frames and the time go in ([`Endpoint::handle_frame`], [`Endpoint::handle_timeout`]);
//! frames come out when the link and the QPs' pacers allow ([`Endpoint::poll_transmit`]);
//! [`Endpoint::poll_timeout`] says when to call again. Inside: RC queue pairs ([`qp`]) doing
//! RDMA WRITE into registered memory with go-back-N, DCQCN per QP ([`dcqcn`]: the reaction
//! point paces the QP at Rc, the notification point sends CNPs), and PFC/PAUSE honoured
//! per priority at the link's rate. The applications that drive it ([`app`]: ring
//! all-reduce, size sweeps, bulk flows) run on top.
//!
//! # The contract
//!
//! - **Input**: [`handle_frame`](Endpoint::handle_frame) for each arriving frame,
//!   [`handle_timeout`](Endpoint::handle_timeout) when [`poll_timeout`](Endpoint::poll_timeout)'s
//!   time has come, and work posted by the application ([`app`]).
//! - **Output**: after any input, drain [`poll_completion`](Endpoint::poll_completion) (the
//!   application reacts and may post more), then call [`poll_transmit`](Endpoint::poll_transmit)
//!   until it gives `None`, then ask [`poll_timeout`](Endpoint::poll_timeout) when to come
//!   back. A frame from `poll_transmit` borrows the endpoint until the next call.
//! - **Time**: `now` never goes backwards from one call to the next (checked with
//!   `debug_assert!`).

pub mod app;
pub mod cc;
mod cc_nic;
pub mod dcqcn;
pub mod fault;
pub mod host;
mod ib_nic;
pub mod ibcc;
mod iwarp_nic;
pub use iwarp_nic::{DEFAULT_INTERFACE_MTU, IwarpConfig, TcpCc};
mod memory;
pub mod qp;
pub mod selective;
pub mod tcp;

use crate::config::endpoint::{EndpointConfig, Transport};
use crate::link::Transmitter;
use crate::time::{Deadlines, Nanos};
use crate::wire::bth::{BthRepr, Opcode};
use crate::wire::cnp::CnpRepr;
use crate::wire::elide::{self, Elided};
use crate::wire::pfc::{MacControl, PfcRepr, PrioritySet, pause_duration};
use crate::wire::xth::{Aeth, ExtHeaders};
use crate::wire::{self, Ecn, IpRepr, Ipv4Repr, MacAddr, RocePacket, RoceRepr, icrc};
use dcqcn::{NotificationPoint, ReactionPoint};
use fault::Faults;
use qp::{Requester, Responder, Verdict};
use rustc_hash::FxHashMap;
use selective::{Arrival, Reorder};
use serde::Serialize;
use std::collections::VecDeque;
use std::net::Ipv4Addr;

pub use qp::{Chunk, SendWr, WrData};

/// AETH syndrome of an ACK with no credit information (IBA: 0x1F, "invalid credits").
const SYNDROME_ACK: u8 = 0x1f;
/// AETH syndrome of a NAK for a PSN sequence error.
const SYNDROME_NAK_PSN: u8 = 0x60;
/// AETH syndrome of a NAK for a remote access error (bad R_Key, out of bounds).
const SYNDROME_NAK_ACCESS: u8 = 0x62;

/// Why work completed in error (verbs' `ibv_wc_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WcStatus {
    /// `IBV_WC_RETRY_EXC_ERR`: `retry_count` retransmissions after timeouts brought no
    /// acknowledgement.
    RetryExceeded,
    /// `IBV_WC_REM_ACCESS_ERR`: the responder NAKed a WRITE it could not place (unknown
    /// R_Key, or outside the region).
    RemoteAccess,
    /// `IBV_WC_WR_FLUSH_ERR`: flushed, the QP being in the error state.
    Flushed,
}

/// A QP that went to the error state: which, to whom, why and when.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QpFailure {
    /// The QP's index, as [`Endpoint::create_qp`] returned it.
    pub qp: usize,
    /// Its QP number.
    pub qpn: u32,
    /// The peer's IPv4 address.
    pub peer_ip: Ipv4Addr,
    /// The peer's QP number.
    pub peer_qpn: u32,
    /// Why: the first work request's status.
    pub status: WcStatus,
    /// Retransmissions after timeouts it made before giving up.
    pub retries: u8,
    /// When, ns.
    pub at_ns: u64,
    /// Work requests that completed in error.
    pub failed_wrs: u64,
}

/// Something the endpoint finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// A posted WRITE is acknowledged.
    Sent {
        /// The QP's index, as [`Endpoint::create_qp`] returned it.
        qp: usize,
        /// The work request's id.
        wr_id: u64,
    },
    /// A posted WRITE completed in error; its QP is in the error state.
    Failed {
        /// The QP's index, as [`Endpoint::create_qp`] returned it.
        qp: usize,
        /// The work request's id.
        wr_id: u64,
        /// Why.
        status: WcStatus,
    },
    /// A WRITE with Immediate arrived whole, in order.
    Received {
        /// The QP's index, as [`Endpoint::create_qp`] returned it.
        qp: usize,
        /// The ImmDt the sender put on the message's last packet (IBA ImmDt).
        imm: u32,
        /// Payload bytes of the whole message, written into the registered region.
        bytes: u64,
    },
}

/// Control-frame buffers kept for reuse (more are freed): enough for a burst of ACKs and
/// CNPs to a few dozen peers.
const MAX_SPARE_BUFFERS: usize = 64;

/// What the endpoint counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EndpointCounters {
    /// Data packets sent (retransmissions included).
    pub data_packets_sent: u64,
    /// Their payload bytes.
    pub data_bytes_sent: u64,
    /// Data packets sent again (go-back-N or selective repeat).
    pub retransmitted_packets: u64,
    /// Times the retransmission timer fired with packets outstanding.
    pub timeouts: u64,
    /// Data packets accepted in order.
    pub data_packets_received: u64,
    /// Their payload bytes.
    pub data_bytes_received: u64,
    /// Data packets discarded as duplicates.
    pub duplicates_received: u64,
    /// Data packets discarded as out of order (go-back-N), or that selective repeat
    /// could not place (too far ahead, or before their message's first packet).
    pub out_of_order_received: u64,
    /// Data packets selective repeat placed out of order.
    pub out_of_order_placed: u64,
    /// The farthest ahead of the expected PSN a packet came, packets (selective repeat).
    pub max_reorder_depth: u64,
    /// ACKs sent: one per AckReq packet accepted or duplicated (NAKs not included).
    pub acks_sent: u64,
    /// PSN sequence error NAKs sent: with go-back-N one per expected PSN, however many
    /// packets skip it; with selective repeat one per packet out of order.
    pub naks_sent: u64,
    /// NAKs received, each sending the requester back to the PSN it names.
    pub naks_received: u64,
    /// CNPs sent (notification point).
    pub cnps_sent: u64,
    /// CNPs received (reaction point).
    pub cnps_received: u64,
    /// CE-marked packets received (in JSON `ce_marked`, the one name for CE-marked
    /// frames in every report).
    #[serde(rename = "ce_marked")]
    pub ce_received: u64,
    /// PFC frames received that paused a priority the endpoint sends on.
    pub pauses_received: u64,
    /// 802.3x PAUSE frames received that paused the link (as `pauses_received`, a PAUSE
    /// of time 0, which resumes it, is not counted).
    pub link_pauses_received: u64,
    /// RoCE frames dropped for a bad ICRC.
    pub icrc_errors: u64,
    /// Frames of every kind put on the link.
    pub frames_sent: u64,
    /// WRITEs that could not land (unknown R_Key, out of range): dropped and NAKed.
    pub access_errors: u64,
    /// QPs that went to the error state.
    pub qp_errors: u64,
    /// PFC frames the NIC sent (XON included): a slow receiver's or a pause storm's.
    pub pfc_sent: u64,
    /// Of those, with time 0 (XON).
    pub pfc_xon_sent: u64,
    /// PFC and PAUSE frames received and ignored (the `ignore-pause` fault).
    pub pauses_ignored: u64,
    /// Frames a slow receiver's full receive buffer dropped.
    pub rx_buffer_drops: u64,
    /// The highest occupancy of a slow receiver's receive buffer, bytes.
    pub rx_buffer_watermark_bytes: u64,
}

/// Memory a QP's peer may WRITE into.
#[derive(Debug, Clone)]
struct Region {
    rkey: u32,
    va: u64,
    len: usize,
    /// The bytes, or `None` for a region that checks and counts what arrives and keeps
    /// none of it (see [`Endpoint::register_discarding`]).
    data: Option<memory::RegionBytes>,
}

/// The far end of a QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // the peer's MAC, IPv4 address and QP number: the names say it
pub struct Peer {
    pub mac: MacAddr,
    pub ip: Ipv4Addr,
    pub qpn: u32,
}

/// What one QP counted (its share of [`EndpointCounters`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct QpCounters {
    /// Data packets sent (retransmissions included).
    pub data_packets_sent: u64,
    /// Their payload bytes.
    pub data_bytes_sent: u64,
    /// Data packets sent again (go-back-N or selective repeat).
    pub retransmitted_packets: u64,
    /// Times the retransmission timer fired with packets outstanding.
    pub timeouts: u64,
    /// Data packets accepted in order.
    pub data_packets_received: u64,
    /// Their payload bytes: what the peer delivered to this QP (duplicates and
    /// out-of-order packets excluded).
    pub data_bytes_received: u64,
    /// CNPs sent for this QP's incoming data.
    pub cnps_sent: u64,
    /// CNPs received: DCQCN cuts asked of this QP.
    pub cnps_received: u64,
    /// CE-marked packets received (in JSON `ce_marked`, the one name for CE-marked
    /// frames in every report).
    #[serde(rename = "ce_marked")]
    pub ce_received: u64,
}

/// A QP as seen from outside: who it talks to, its DCQCN state and its counters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QpStatus {
    /// Its QP number (24 bits), as the peer addresses it.
    pub qpn: u32,
    /// The peer's QP number.
    pub peer_qpn: u32,
    /// The peer's IPv4 address.
    pub peer_ip: Ipv4Addr,
    /// The UDP source port of its packets.
    pub udp_sport: u16,
    /// DCQCN current rate Rc, bit/s.
    pub rate_bps: u64,
    /// DCQCN target rate Rt, bit/s.
    pub target_bps: u64,
    /// DCQCN alpha now.
    pub alpha: f64,
    /// This QP's share of the endpoint's counters.
    pub counters: QpCounters,
}

#[derive(Debug)]
struct Qp {
    qpn: u32,
    peer: Peer,
    udp_sport: u16,
    req: Requester,
    resp: Responder,
    rp: ReactionPoint,
    np: NotificationPoint,
    /// The pacer: the next packet may start then, in picoseconds.
    next_send_ps: u128,
    /// The last progress of the requester (ACK moving forward, or a send from idle): the
    /// retransmission timer runs from it.
    progress_at: Nanos,
    /// Timeouts since the oldest outstanding packet was last acknowledged.
    retries: u8,
    /// In the error state: it sends and takes nothing more.
    failed: bool,
    /// Selective repeat's responder; `None`: go-back-N's ([`Responder`]).
    reorder: Option<Reorder>,
    counters: QpCounters,
    /// The congestion control in DCQCN's place (`cc` other than `dcqcn`).
    cc: Option<Box<cc::Controller>>,
    /// When each packet sent once and not yet acknowledged left (PSN count, time), for
    /// the RTT of the controls that want it.
    sent_at: VecDeque<(u64, Nanos)>,
    /// The responder saw CE since its last ACK: the next ACK echoes it (BECN).
    ce_unechoed: bool,
    /// The telemetry of the last data packet that carried some, for the next ACK.
    int_echo: Option<[u8; wire::int::TRAILER_LEN]>,
}

/// The retransmission timeout a QP runs: IRN's short one when few packets are in flight,
/// the long one otherwise (both the same with go-back-N).
#[derive(Debug, Clone, Copy)]
struct Rto {
    high: Nanos,
    low: Nanos,
    low_packets: u64,
}

impl Rto {
    fn of(cfg: &EndpointConfig) -> Rto {
        match cfg.transport {
            Transport::GoBackN => Rto {
                high: cfg.rto(),
                low: cfg.rto(),
                low_packets: 0,
            },
            Transport::SelectiveRepeat => Rto {
                high: cfg.selective_repeat.rto_high(),
                low: cfg.selective_repeat.rto_low(),
                low_packets: u64::from(cfg.selective_repeat.rto_low_packets),
            },
        }
    }

    fn with_in_flight(&self, packets: u64) -> Nanos {
        if packets <= self.low_packets {
            self.low
        } else {
            self.high
        }
    }
}

/// Up to this many QPs an endpoint looks at each for its deadlines; past it, it keeps
/// them in [`Deadlines`]. Measured with callgrind on the 2:1 and 64:1 incasts, when those
/// were heaps alone: keeping them cost about 8 % more instructions with one QP per
/// endpoint, and saved 9 % with 64.
const SCANNED_QPS: usize = 4;

/// A RoCEv2 NIC port.
#[derive(Debug)]
pub struct Endpoint {
    /// The latest `now` a driver passed in.
    clock: crate::time::LastTime,
    cfg: EndpointConfig,
    mac: MacAddr,
    ip: Ipv4Addr,
    ecn: Ecn,
    data_priority: u8,
    cnp_priority: u8,
    link: Transmitter,
    qps: Vec<Qp>,
    by_qpn: FxHashMap<u32, usize>,
    /// ACK, NAK and CNP frames waiting for the link, with their PFC priority.
    control: VecDeque<(u8, Vec<u8>)>,
    /// PFC frames the NIC sends: ahead of everything, never paused.
    mac_control: VecDeque<Vec<u8>>,
    faults: Faults,
    storm: Option<fault::StormState>,
    rx_buffer: Option<fault::RxBuffer>,
    /// Buffers of control frames that went out, for the next ones.
    spare: Vec<Vec<u8>>,
    /// The WR ids an ACK completed, kept between ACKs.
    acked_wrs: Vec<u64>,
    pause_until: [Nanos; 8],
    link_pause_until: Nanos,
    /// Per priority: time paused by received PFC.
    paused: [crate::time::Span; 8],
    regions: Vec<Region>,
    completions: VecDeque<Completion>,
    counters: EndpointCounters,
    next_qp: usize,
    out: Vec<u8>,
    ip_ident: u16,
    /// Credit flow control, on an InfiniBand fabric (boxed: a RoCE NIC has none).
    credit: Option<Box<ib_nic::NicCredit>>,
    /// InfiniBand congestion control for the QPs created from now on, in place of DCQCN.
    ib_cc: Option<ibcc::IbCcConfig>,
    /// iWARP: every QP an RDMA connection over TCP (boxed: a RoCE NIC has none).
    iwarp: Option<Box<iwarp_nic::IwarpNic>>,
    /// With more than [`SCANNED_QPS`] QPs, each QP's pacer time while it has a packet its
    /// window allows, and its timers (DCQCN, the deferred CNP, retransmission), kept up to
    /// date as QPs change: the next deadline and the QPs due are found without looking at
    /// every QP, so an endpoint with many QPs (a receiver of a 64:1 incast) costs no more
    /// per frame than one with a few. Every entry point that changes a QP touches it and
    /// settles before it returns. With fewer QPs, looking at each costs less than keeping
    /// them, and these stay empty.
    pacers: Deadlines,
    timers: Deadlines,
    /// QPs changed since the last settle (`touched[q]`: whether q is in `dirty`).
    dirty: Vec<usize>,
    touched: Vec<bool>,
    /// The QPs whose timers came due, kept between timeouts.
    due: Vec<usize>,
    /// Payload bytes all QPs together sent: the sum of their `data_bytes_sent`, kept
    /// for a recorder that samples it, so that it need not visit thousands of QPs.
    bytes_sent: u64,
    /// Whether frames sent carry an ICRC and received ones have theirs checked
    /// ([`set_icrc`](Self::set_icrc)).
    icrc: bool,
    /// The configuration's retransmission timeouts and DCQCN CNP interval, converted from
    /// µs once: every deadline upkeep needs them.
    rto: Rto,
    /// The QPs that went to the error state, in order.
    failures: Vec<QpFailure>,
    dcqcn_cnp_interval: Nanos,
    /// A data payload built for sending (with room for telemetry after it, for HPCC), or
    /// the whole of a short frame, whose ICRC is computed over it; kept between packets.
    int_scratch: Vec<u8>,
    /// Whether data nobody reads may leave as short frames ([`set_elide`](Self::set_elide)).
    elide: bool,
    /// What the frame in `out` elides.
    out_elided: Elided,
    /// Telemetry hops of the ACK being handled, kept between ACKs.
    int_hops: Vec<wire::int::IntHop>,
    /// DCQCN's window (`dcqcn.window`): the BDP and the line rate it scales by.
    dcqcn_window: Option<cc_nic::DcqcnWindow>,
}

impl Endpoint {
    /// An endpoint with `mac` and `ip`; `cfg` must have been validated.
    pub fn new(cfg: &EndpointConfig, mac: MacAddr, ip: Ipv4Addr) -> Endpoint {
        let ecn = Ecn::from(cfg.ecn);
        Endpoint {
            clock: crate::time::LastTime::default(),
            mac,
            ip,
            ecn,
            data_priority: cfg.priority_of(cfg.dscp),
            cnp_priority: cfg.priority_of(cfg.cnp_dscp),
            link: Transmitter::new(cfg.bits_per_sec()),
            qps: Vec::new(),
            by_qpn: FxHashMap::default(),
            control: VecDeque::new(),
            mac_control: VecDeque::new(),
            faults: Faults::default(),
            storm: None,
            rx_buffer: None,
            spare: Vec::new(),
            acked_wrs: Vec::new(),
            pause_until: [Nanos::ZERO; 8],
            link_pause_until: Nanos::ZERO,
            paused: Default::default(),
            regions: Vec::new(),
            completions: VecDeque::new(),
            counters: EndpointCounters::default(),
            next_qp: 0,
            out: Vec::with_capacity(cfg.mtu as usize + 128),
            ip_ident: 0,
            credit: None,
            ib_cc: None,
            iwarp: None,
            pacers: Deadlines::default(),
            timers: Deadlines::default(),
            dirty: Vec::new(),
            touched: Vec::new(),
            due: Vec::new(),
            bytes_sent: 0,
            icrc: true,
            rto: Rto::of(cfg),
            failures: Vec::new(),
            dcqcn_cnp_interval: cfg.dcqcn.cnp_interval(),
            int_scratch: Vec::new(),
            elide: false,
            out_elided: Elided::NONE,
            int_hops: Vec::new(),
            dcqcn_window: cc_nic::DcqcnWindow::of(cfg),
            cfg: cfg.clone(),
        }
    }

    /// Whether the QPs' deadlines are kept (see [`Endpoint::pacers`]).
    #[inline]
    fn keeps_deadlines(&self) -> bool {
        self.qps.len() > SCANNED_QPS
    }

    /// QP `qi` changed: its deadlines are recomputed at the next [`settle`](Self::settle).
    #[inline]
    fn touch(&mut self, qi: usize) {
        if !self.keeps_deadlines() {
            return;
        }
        if qi >= self.touched.len() {
            self.touched.resize(qi + 1, false);
        }
        if !self.touched[qi] {
            self.touched[qi] = true;
            self.dirty.push(qi);
        }
    }

    /// Recomputes the touched QPs' deadlines: the last step of every entry point that
    /// changes a QP.
    #[inline]
    fn settle(&mut self) {
        if !self.dirty.is_empty() {
            self.settle_touched();
        }
    }

    fn settle_touched(&mut self) {
        let window = u64::from(self.cfg.window_packets);
        let mtu = u64::from(self.cfg.mtu);
        let dcqcn_window = self.dcqcn_window;
        let interval = self.cnp_interval();
        let rto = self.rto;
        for qi in self.dirty.drain(..) {
            self.touched[qi] = false;
            let q = &self.qps[qi];
            self.pacers
                .set(qi, q.pacer_at(q.window(window, mtu, dcqcn_window)));
            self.timers.set(qi, q.timer_at(interval, rto));
        }
    }

    /// The source MAC address of every frame it sends.
    pub fn mac(&self) -> MacAddr {
        self.mac
    }

    /// The source IPv4 address of every packet it sends.
    pub fn ip(&self) -> Ipv4Addr {
        self.ip
    }

    /// Counters since creation, endpoint-wide.
    ///
    /// Per-QP counts are kept once, on each QP; the endpoint's are their sums.
    pub fn counters(&self) -> EndpointCounters {
        let mut c = self.counters;
        for q in &self.qps {
            let k = &q.counters;
            c.data_packets_sent += k.data_packets_sent;
            c.data_bytes_sent += k.data_bytes_sent;
            c.retransmitted_packets += k.retransmitted_packets;
            c.timeouts += k.timeouts;
            c.data_packets_received += k.data_packets_received;
            c.data_bytes_received += k.data_bytes_received;
            c.cnps_sent += k.cnps_sent;
            c.cnps_received += k.cnps_received;
            c.ce_received += k.ce_received;
        }
        if let Some(rx) = &self.rx_buffer {
            c.rx_buffer_watermark_bytes = rx.watermark;
        }
        c
    }

    /// Whether RoCE frames carry an ICRC (the default): every frame sent gets one, and
    /// every frame received has its checked (a bad one is dropped and counted in
    /// `icrc_errors`). Off, frames leave with a zero ICRC and none is checked: for a
    /// simulator whose frames only ever go between these cores, which never alter the
    /// bytes the ICRC covers and nothing outside reads. That saves two CRCs over every
    /// frame; rocelab's simulator does so in release builds only, so that the test suite
    /// still computes and checks the ICRC of every frame it simulates.
    pub fn set_icrc(&mut self, enabled: bool) {
        self.icrc = enabled;
    }

    /// Whether a WRITE of data nobody reads ([`WrData::Fill`]) leaves as short frames that
    /// carry its length rather than its bytes ([`wire::elide`]), handed out by
    /// [`poll_transmit_into`](Self::poll_transmit_into) with what they elide. Off by
    /// default: a live endpoint's frames go on a real wire. A simulator turns it on, its
    /// switches and hosts count the elided bytes, and every frame anyone must see whole
    /// ([`poll_transmit`](Self::poll_transmit), a switch's outside interfaces) is
    /// restored byte for byte. Frames with telemetry (HPCC) or on an InfiniBand or iWARP
    /// link always go whole.
    pub fn set_elide(&mut self, enabled: bool) {
        self.elide = enabled;
    }

    /// Gives the NIC `faults` (a healthy NIC has none). Call before the first frame.
    pub fn set_faults(&mut self, faults: Faults) {
        self.faults = faults;
        self.storm = faults.pause_storm.map(fault::StormState::new);
        self.rx_buffer = faults.slow_receiver.map(fault::RxBuffer::new);
    }

    /// The NIC's faults.
    pub fn faults(&self) -> Faults {
        self.faults
    }

    /// Bytes waiting in a slow receiver's receive buffer (0 for a healthy NIC).
    pub fn rx_buffer_bytes(&self) -> u64 {
        self.rx_buffer.as_ref().map_or(0, |rx| rx.bytes())
    }

    /// A QP's current DCQCN rate, bit/s.
    pub fn qp_rate_bps(&self, qp: usize) -> u64 {
        self.iwarp_window_rate(qp)
            .unwrap_or_else(|| self.qps[qp].rate_bps())
    }

    /// QP `qp` (an index from [`Endpoint::create_qp`]) at `now`.
    pub fn qp_status(&self, qp: usize, now: Nanos) -> QpStatus {
        let q = &self.qps[qp];
        let (rate_bps, target_bps, alpha) = match self.iwarp_window_rate(qp) {
            // iWARP: the rate its window allows, and DCTCP's alpha.
            Some(rate) => (rate, rate, self.iwarp_alpha(qp)),
            None => match &q.cc {
                // Another control: its rate, and its congestion estimate as alpha.
                Some(c) => (c.rate_bps(), c.rate_bps(), c.signal()),
                None => (q.rp.rate_bps(), q.rp.target_bps(), q.rp.alpha(now)),
            },
        };
        QpStatus {
            qpn: q.qpn,
            peer_qpn: q.peer.qpn,
            peer_ip: q.peer.ip,
            udp_sport: q.udp_sport,
            rate_bps,
            target_bps,
            alpha,
            counters: q.counters,
        }
    }

    /// Runs InfiniBand congestion control (annex A10) on the QPs created from now on: a
    /// CNP is a BECN that raises the QP's table index, and every FECN-marked packet (CE,
    /// in the simulator) is answered by one. Call before creating QPs.
    pub fn set_ib_cc(&mut self, cc: ibcc::IbCcConfig) {
        self.ib_cc = Some(cc);
        // The CNP interval changed: every QP's deferred CNP with it.
        for qi in 0..self.qps.len() {
            self.touch(qi);
        }
        self.settle();
    }

    /// The least time between two CNPs of a QP: DCQCN's interval, or none on
    /// InfiniBand, which answers every FECN.
    fn cnp_interval(&self) -> Nanos {
        if self.ib_cc.is_some() {
            Nanos::ZERO
        } else {
            self.dcqcn_cnp_interval
        }
    }

    /// True when a received PFC frame (or a PAUSE) holds `priority` at `now`.
    pub fn paused(&self, priority: u8, now: Nanos) -> bool {
        !self.priority_open(priority, now)
    }

    /// How long `priority` has been paused by PFC frames up to `now` (overlapping pauses
    /// counted once; 802.3x PAUSE not included).
    pub fn paused_time(&self, priority: u8, now: Nanos) -> Nanos {
        self.paused[usize::from(priority & 7)].total(now)
    }

    /// The PFC priority data frames go on.
    pub fn data_priority(&self) -> u8 {
        self.data_priority
    }

    /// Number of QPs.
    pub fn qp_count(&self) -> usize {
        self.qps.len()
    }

    /// True when no WRITE is waiting for an acknowledgement and nothing waits to go out.
    pub fn idle(&self) -> bool {
        self.control.is_empty() && self.qps.iter().all(|q| q.req.idle()) && self.iwarp_idle()
    }

    /// Creates an RC QP numbered `qpn` connected to `peer`; both directions start at
    /// PSN `start_psn`. Returns its index.
    pub fn create_qp(&mut self, qpn: u32, peer: Peer, start_psn: u32) -> usize {
        let index = self.qps.len();
        self.qps.push(Qp {
            qpn,
            peer,
            // RoCEv2 NICs spread QPs over UDP source ports for ECMP entropy.
            udp_sport: 0xc000 | (qpn as u16 & 0x3fff),
            req: match self.cfg.transport {
                Transport::GoBackN => Requester::new(start_psn),
                Transport::SelectiveRepeat => Requester::selective(
                    start_psn,
                    u64::from(self.cfg.selective_repeat.bdp_cap_packets) * u64::from(self.cfg.mtu),
                    u64::from(self.cfg.selective_repeat.reorder_packets.max(1)),
                ),
            },
            resp: Responder::new(start_psn),
            reorder: (self.cfg.transport == Transport::SelectiveRepeat).then(|| {
                Reorder::new(
                    u64::from(start_psn),
                    u64::from(self.cfg.window_packets),
                    u64::from(self.cfg.mtu),
                )
            }),
            rp: match &self.ib_cc {
                Some(cc) => {
                    ReactionPoint::with_ib_cc(self.cfg.dcqcn, self.cfg.bits_per_sec(), cc.clone())
                }
                None => ReactionPoint::new(self.cfg.dcqcn, self.cfg.bits_per_sec()),
            },
            np: NotificationPoint::new(self.cfg.dcqcn.cnp_mode),
            cc: self.controller(),
            sent_at: VecDeque::new(),
            ce_unechoed: false,
            int_echo: None,
            next_send_ps: 0,
            progress_at: Nanos::ZERO,
            retries: 0,
            failed: false,
            counters: QpCounters::default(),
        });
        self.by_qpn.insert(qpn, index);
        self.iwarp_create(index, qpn, peer);
        // Past the last QP that is scanned, every QP's deadlines are kept.
        let from = if self.qps.len() == SCANNED_QPS + 1 {
            0
        } else {
            index
        };
        for qi in from..self.qps.len() {
            self.touch(qi);
        }
        self.settle();
        index
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &EndpointConfig {
        &self.cfg
    }

    /// Registers `len` zeroed bytes at `va` under `rkey`, for peers to WRITE into. The
    /// memory is mapped now, as a NIC pins a registered region: not page by page on the
    /// first WRITE into each, which would cost a live endpoint a page fault per frame (and
    /// a large region is kept out of child processes, see `endpoint/memory.rs`).
    pub fn register(&mut self, rkey: u32, va: u64, len: usize) {
        let data = Some(memory::RegionBytes::zeroed(len));
        self.put_region(Region {
            rkey,
            va,
            len,
            data,
        });
    }

    /// Registers `len` bytes at `va` under `rkey` that keep nothing: a WRITE into them is
    /// checked (key, bounds) and acknowledged as into any region, and its payload dropped.
    /// For traffic whose data nobody reads (bulk flows, workloads): the endpoint then holds
    /// no memory for it, however large the messages, and copies no payload.
    pub fn register_discarding(&mut self, rkey: u32, va: u64, len: usize) {
        self.put_region(Region {
            rkey,
            va,
            len,
            data: None,
        });
    }

    fn put_region(&mut self, region: Region) {
        // A key registered again names the new region (the old one is released).
        match self.regions.iter_mut().find(|r| r.rkey == region.rkey) {
            Some(r) => *r = region,
            None => self.regions.push(region),
        }
    }

    /// The length of a registered region, whether it keeps its bytes or not.
    pub fn region_len(&self, rkey: u32) -> Option<usize> {
        self.regions.iter().find(|r| r.rkey == rkey).map(|r| r.len)
    }

    /// The bytes of a registered region (`None` also for one that keeps nothing).
    pub fn region(&self, rkey: u32) -> Option<&[u8]> {
        self.regions
            .iter()
            .find(|r| r.rkey == rkey)
            .and_then(|r| r.data.as_deref())
    }

    /// The bytes of a registered region, to change.
    pub fn region_mut(&mut self, rkey: u32) -> Option<&mut [u8]> {
        self.regions
            .iter_mut()
            .find(|r| r.rkey == rkey)
            .and_then(|r| r.data.as_deref_mut())
    }

    /// Two different registered regions at once: `dst` to change, `src` to read (a
    /// reduction from one buffer into another, with no copy between). None if either is
    /// missing or they are the same region.
    pub fn region_pair(&mut self, dst: u32, src: u32) -> Option<(&mut [u8], &[u8])> {
        let d = self.regions.iter().position(|r| r.rkey == dst)?;
        let s = self.regions.iter().position(|r| r.rkey == src)?;
        if d == s {
            return None;
        }
        let (lo, hi) = self.regions.split_at_mut(d.max(s));
        let (first, second) = (&mut lo[d.min(s)], &mut hi[0]);
        Some(if d < s {
            (first.data.as_deref_mut()?, second.data.as_deref()?)
        } else {
            (second.data.as_deref_mut()?, first.data.as_deref()?)
        })
    }

    /// Posts a WRITE on `qp`. On a QP in the error state it completes at once, flushed.
    pub fn post_write(&mut self, qp: usize, wr: SendWr) {
        if self.qps[qp].failed {
            self.completions.push_back(Completion::Failed {
                qp,
                wr_id: wr.id,
                status: WcStatus::Flushed,
            });
            return;
        }
        if self.iwarp.is_some() {
            self.iwarp_post(qp, wr);
            return;
        }
        let mtu = self.cfg.mtu as usize;
        self.qps[qp].req.post(wr, mtu);
        self.touch(qp);
        self.settle();
    }

    /// Records the driver's `now` (time must not go backwards).
    #[inline]
    fn advance_to(&mut self, now: Nanos) {
        self.clock.advance(now);
    }

    /// The next completion, if any.
    #[must_use]
    pub fn poll_completion(&mut self) -> Option<Completion> {
        self.completions.pop_front()
    }

    fn priority_open(&self, priority: u8, now: Nanos) -> bool {
        self.pause_until[usize::from(priority & 7)] <= now && self.link_pause_until <= now
    }

    fn priority_opens_at(&self, priority: u8) -> Nanos {
        self.pause_until[usize::from(priority & 7)].max(self.link_pause_until)
    }

    /// A frame arrives at `now`. A slow receiver holds it in its receive buffer until it
    /// has drained ([`handle_timeout`](Self::handle_timeout) takes it from there); MAC
    /// control frames never wait.
    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) {
        self.handle_elided_frame(now, frame, Elided::NONE);
    }

    /// As [`handle_frame`](Self::handle_frame), for a short frame and what it elides
    /// (see [`set_elide`](Self::set_elide)).
    pub fn handle_elided_frame(&mut self, now: Nanos, frame: &[u8], elided: Elided) {
        self.take_frame(now, frame, elided);
        self.settle();
    }

    fn take_frame(&mut self, now: Nanos, frame: &[u8], elided: Elided) {
        if !elided.is_none()
            && (self.rx_buffer.is_some() || self.credit.is_some() || self.iwarp.is_some())
        {
            // A slow receiver's buffer keeps frames whole, and credit and iWARP read
            // them whole: restored, as the sender would have sent it (a frame that is
            // not a short one is as malformed as a corrupt one, and goes the same way).
            let mut whole = frame.to_vec();
            if elide::restore(&mut whole, elided).is_ok() {
                self.take_frame(now, &whole, Elided::NONE);
            }
            return;
        }
        self.advance_to(now);
        if crate::credit::FcPacket::is_envelope(frame) {
            self.receive_link_packet(now, frame);
            return;
        }
        // `parse_meta`, not `parse(..).ok()`: the meta is built where it stays (no copy of
        // it read back right after its narrow stores, a store-forwarding stall per frame).
        let Some(meta) = wire::parse_meta(frame) else {
            return;
        };
        if meta.is_mac_control() {
            self.receive_pause(now, frame, &meta);
            return;
        }
        self.credit_on_receive(now, frame, self.rx_buffer.is_some());
        if let Some(rx) = &mut self.rx_buffer {
            match rx.push(now, frame) {
                Ok(Some(fault::Pfc::Xoff)) => self.rx_buffer_xoff(now),
                Ok(_) => {}
                Err(()) => self.counters.rx_buffer_drops += 1,
            }
            return;
        }
        self.receive(now, frame, &meta, elided);
    }

    /// A slow receiver's buffer reached its XOFF point (or XOFF is due again).
    fn rx_buffer_xoff(&mut self, now: Nanos) {
        let quanta = u16::MAX;
        let priority = self.data_priority;
        let refresh = Nanos(pause_duration(quanta, self.link.bits_per_sec()).0 / 2);
        if let Some(rx) = &mut self.rx_buffer {
            rx.xoff = true;
            rx.refresh_at = Some(now + refresh.max(Nanos(1)));
        }
        self.send_pfc(priority, quanta);
    }

    /// Queues a PFC frame for `priority` with `quanta` (0: XON) ahead of everything
    /// (never with credit flow control, which has no PFC).
    fn send_pfc(&mut self, priority: u8, quanta: u16) {
        if self.credit.is_some() {
            return;
        }
        let pfc = MacControl::Pfc(PfcRepr::new(PrioritySet::single(priority & 7), quanta));
        let mut buf = self.spare_buffer(wire::pfc::FRAME_LEN);
        if pfc.emit(&mut buf, self.mac).is_ok() {
            self.counters.pfc_sent += 1;
            self.counters.pfc_xon_sent += u64::from(quanta == 0);
            self.mac_control.push_back(buf);
        } else {
            self.spare.push(buf);
        }
    }

    /// The faults' timers: frames a slow receiver has drained (handled now), its XON and
    /// XOFF refresh, a pause storm's next XOFF.
    fn run_faults(&mut self, now: Nanos) {
        while let Some(frame) = self.rx_buffer.as_mut().and_then(|rx| rx.pop(now)) {
            self.credit_on_drain(&frame);
            if let Some(meta) = wire::parse_meta(&frame) {
                self.receive(now, &frame, &meta, Elided::NONE);
            }
            if let Some(rx) = &mut self.rx_buffer {
                rx.recycle(frame);
            }
        }
        if let Some(rx) = &mut self.rx_buffer {
            if rx.after_drain() == Some(fault::Pfc::Xon) {
                rx.xoff = false;
                rx.refresh_at = None;
                let priority = self.data_priority;
                self.send_pfc(priority, 0);
            } else if rx.xoff && rx.refresh_at.is_some_and(|t| t <= now) {
                self.rx_buffer_xoff(now);
            }
        }
        let rate = self.link.bits_per_sec();
        if let Some(storm) = &mut self.storm
            && storm.due(now, rate)
        {
            let (priority, quanta) = (storm.storm.priority, storm.storm.quanta);
            self.send_pfc(priority, quanta);
        }
    }

    /// A frame, parsed, reaches the NIC's receive logic at `now`.
    fn receive(&mut self, now: Nanos, frame: &[u8], meta: &wire::FrameMeta, elided: Elided) {
        if self.iwarp.is_some() && self.receive_iwarp(now, frame) {
            return;
        }
        if !meta.is_roce() || frame.get(..6) != Some(&self.mac.0[..]) {
            return;
        }
        // Its one GID is its IPv4 address: RoCE over IPv6, or to another address, is not
        // for it (an RNIC finds no GID for it; it counted as an ICRC error).
        let dst = usize::from(meta.l3_offset()) + 16;
        if !meta.is_ipv4() || frame.get(dst..dst + 4) != Some(&self.ip.octets()[..]) {
            return;
        }
        if self.icrc {
            let good = if elided.is_none() {
                icrc::verify(frame, meta)
            } else {
                elide::verify_icrc(frame, elided, &mut self.int_scratch)
            };
            if good != Some(true) {
                self.counters.icrc_errors += 1;
                return;
            }
        }
        let Ok(Some(pkt)) = RocePacket::parse(frame, meta) else {
            return;
        };
        let Some(&qi) = self.by_qpn.get(&pkt.bth.dest_qp) else {
            return;
        };
        if self.qps[qi].failed {
            return;
        }
        self.touch(qi);
        let opcode = pkt.bth.opcode;
        if opcode.is_cnp() {
            self.qps[qi].counters.cnps_received += 1;
            self.qps[qi].rp.on_cnp(now);
            return;
        }
        if meta.ecn() == Ecn::Ce {
            self.qps[qi].counters.ce_received += 1;
            if self.echoes_ce() {
                self.qps[qi].ce_unechoed = true;
            } else {
                let interval = self.cnp_interval();
                if self.qps[qi].np.on_ce(now, interval) {
                    self.send_cnp(qi);
                }
            }
        }
        let mut pkt = pkt;
        let int_flags = frame[meta.bth_offset() + wire::bth::FECN_BECN_OFFSET];
        if int_flags & wire::int::INT_REQUEST != 0 && opcode != Opcode::RC_ACK {
            pkt.payload = self.take_int(qi, pkt.payload);
        }
        match opcode {
            Opcode::RC_ACK => {
                let aeth = pkt.ext.aeth.unwrap_or_default();
                let acked_before = self.qps[qi].req.acked_count();
                self.receive_ack(now, qi, pkt.bth.psn, aeth);
                if aeth.syndrome == SYNDROME_ACK && self.qps[qi].cc.is_some() {
                    let echo = (int_flags & wire::int::INT_ECHO != 0).then_some(pkt.payload);
                    self.cc_on_ack(now, qi, acked_before, pkt.bth.becn, echo);
                }
            }
            Opcode::RC_WRITE_FIRST
            | Opcode::RC_WRITE_MIDDLE
            | Opcode::RC_WRITE_LAST
            | Opcode::RC_WRITE_LAST_IMM
            | Opcode::RC_WRITE_ONLY
            | Opcode::RC_WRITE_ONLY_IMM => self.receive_write(qi, &pkt, elided),
            _ => {}
        }
    }

    /// An ACK or NAK for QP `qi`'s requester.
    fn receive_ack(&mut self, now: Nanos, qi: usize, psn: u32, aeth: Aeth) {
        if aeth.syndrome == SYNDROME_NAK_ACCESS {
            self.counters.naks_received += 1;
            self.fail(now, qi, WcStatus::RemoteAccess);
            return;
        }
        let q = &mut self.qps[qi];
        let before = (q.req.outstanding(), q.req.in_flight());
        // A buffer kept for the completed ids: no allocation per ACK.
        let mut done = std::mem::take(&mut self.acked_wrs);
        done.clear();
        if aeth.syndrome >> 5 == 0b011 {
            self.counters.naks_received += 1;
            // Karn: packets about to go again give no RTT.
            q.sent_at.clear();
            if q.req.is_selective() {
                // IRN's NAK: the MSN field names the packet that came out of order.
                q.req.on_sack(psn, aeth.msn, &mut done);
            } else {
                q.req.on_nak(psn, &mut done);
            }
        } else {
            q.req.on_ack(psn, &mut done);
        }
        if q.req.outstanding() != before.0 || !done.is_empty() {
            q.retries = 0;
        }
        if (q.req.outstanding(), q.req.in_flight()) != before || !done.is_empty() {
            q.progress_at = now;
        }
        for &wr_id in &done {
            self.completions
                .push_back(Completion::Sent { qp: qi, wr_id });
        }
        self.acked_wrs = done;
    }

    /// QP `qi` goes to the error state at `now`: its outstanding work completes in
    /// error (the first with `status`, the rest flushed) and it sends nothing more.
    fn fail(&mut self, now: Nanos, qi: usize, status: WcStatus) {
        let q = &mut self.qps[qi];
        if q.failed {
            return;
        }
        q.failed = true;
        let mut wrs = q.req.abort();
        wrs.extend(self.iwarp_abort(qi));
        let q = &self.qps[qi];
        self.counters.qp_errors += 1;
        self.failures.push(QpFailure {
            qp: qi,
            qpn: q.qpn,
            peer_ip: q.peer.ip,
            peer_qpn: q.peer.qpn,
            status,
            retries: q.retries,
            at_ns: now.0,
            failed_wrs: wrs.len() as u64,
        });
        for (k, wr_id) in wrs.into_iter().enumerate() {
            let status = if k == 0 { status } else { WcStatus::Flushed };
            self.completions.push_back(Completion::Failed {
                qp: qi,
                wr_id,
                status,
            });
        }
        self.touch(qi);
    }

    /// The QPs that went to the error state, in order.
    pub fn qp_failures(&self) -> &[QpFailure] {
        &self.failures
    }

    fn receive_write(&mut self, qi: usize, pkt: &RocePacket<'_>, elided: Elided) {
        if self.qps[qi].reorder.is_some() {
            self.receive_write_selective(qi, pkt, elided);
            return;
        }
        let payload_len = elided.whole_len(pkt.payload);
        let verdict = self.qps[qi].resp.judge(pkt.bth.psn, pkt.bth.ack_req);
        match verdict {
            Verdict::Accept { ack } => {
                let qp = &mut self.qps[qi];
                qp.counters.data_packets_received += 1;
                qp.counters.data_bytes_received += payload_len as u64;
                let last = matches!(
                    pkt.bth.opcode,
                    Opcode::RC_WRITE_LAST
                        | Opcode::RC_WRITE_LAST_IMM
                        | Opcode::RC_WRITE_ONLY
                        | Opcode::RC_WRITE_ONLY_IMM
                );
                let reth = pkt.ext.reth.map(|r| (r.va, r.rkey));
                let placed = qp.resp.place_write(reth, payload_len, last);
                let bytes = placed.message_bytes;
                if !self.write_memory(placed.rkey, placed.va, pkt.payload, elided) {
                    self.counters.access_errors += 1;
                    self.send_ack(qi, pkt.bth.psn, SYNDROME_NAK_ACCESS);
                    return;
                }
                if let (true, Some(imm)) = (last, pkt.ext.immdt) {
                    self.completions
                        .push_back(Completion::Received { qp: qi, imm, bytes });
                }
                if ack {
                    self.send_ack(qi, pkt.bth.psn, SYNDROME_ACK);
                }
            }
            Verdict::OutOfOrder { nak, expected } => {
                self.counters.out_of_order_received += 1;
                if nak {
                    self.counters.naks_sent += 1;
                    self.send_ack(qi, expected, SYNDROME_NAK_PSN);
                }
            }
            Verdict::Duplicate { ack, last } => {
                self.counters.duplicates_received += 1;
                if ack {
                    self.send_ack(qi, last, SYNDROME_ACK);
                }
            }
        }
    }

    /// A WRITE packet for a selective-repeat responder: placed wherever it falls in the
    /// window, NAKed (with its PSN) when it comes out of order, ACKed when it fills a hole
    /// or asks for it; messages complete in order.
    fn receive_write_selective(&mut self, qi: usize, pkt: &RocePacket<'_>, elided: Elided) {
        let Some(reorder) = self.qps[qi].reorder.as_mut() else {
            return;
        };
        let psn = qp::count_near(pkt.bth.psn, reorder.expected());
        let last = matches!(
            pkt.bth.opcode,
            Opcode::RC_WRITE_LAST
                | Opcode::RC_WRITE_LAST_IMM
                | Opcode::RC_WRITE_ONLY
                | Opcode::RC_WRITE_ONLY_IMM
        );
        let reth = pkt.ext.reth.map(|r| (r.va, r.rkey, r.dma_len));
        let place = match reorder.place(psn, reth, last, pkt.ext.immdt) {
            Ok(place) => place,
            Err(Arrival::Duplicate) => {
                self.counters.duplicates_received += 1;
                let expected = reorder.expected();
                if pkt.bth.ack_req {
                    self.send_ack(qi, qp::wire_psn(expected.wrapping_sub(1)), SYNDROME_ACK);
                }
                return;
            }
            Err(_) => {
                self.counters.out_of_order_received += 1;
                if reorder.report_missing() {
                    let expected = reorder.expected();
                    self.counters.naks_sent += 1;
                    let none = qp::wire_psn(expected.wrapping_sub(1));
                    self.send_sack(qi, qp::wire_psn(expected), none);
                }
                return;
            }
        };
        if !self.write_memory(place.rkey, place.va, pkt.payload, elided) {
            self.counters.access_errors += 1;
            self.send_ack(qi, pkt.bth.psn, SYNDROME_NAK_ACCESS);
            return;
        }
        let mut done = Vec::new();
        let Some(reorder) = self.qps[qi].reorder.as_mut() else {
            return;
        };
        let arrival = reorder.arrived(psn, &mut done);
        let (expected, depth) = (reorder.expected(), reorder.max_depth());
        self.counters.max_reorder_depth = self.counters.max_reorder_depth.max(depth);
        let q = &mut self.qps[qi];
        q.counters.data_packets_received += 1;
        q.counters.data_bytes_received += elided.whole_len(pkt.payload) as u64;
        for d in done {
            q.resp.complete_message();
            if let Some(imm) = d.imm {
                self.completions.push_back(Completion::Received {
                    qp: qi,
                    imm,
                    bytes: d.len,
                });
            }
        }
        match arrival {
            Arrival::Placed { advanced: 0 } => {
                self.counters.out_of_order_placed += 1;
                self.counters.naks_sent += 1;
                self.send_sack(qi, qp::wire_psn(expected), pkt.bth.psn);
            }
            Arrival::Placed { advanced } if advanced > 1 || pkt.bth.ack_req => {
                self.send_ack(qi, qp::wire_psn(expected - 1), SYNDROME_ACK);
            }
            _ => {}
        }
    }

    /// Writes `bytes`, then the bytes `elided` stands for, at (`rkey`, `va`); false when
    /// they do not fall within a registered region.
    fn write_memory(&mut self, rkey: u32, va: u64, bytes: &[u8], elided: Elided) -> bool {
        let Some(region) = self.regions.iter_mut().find(|r| r.rkey == rkey) else {
            return false;
        };
        let Some(offset) = va.checked_sub(region.va).map(|o| o as usize) else {
            return false;
        };
        let len = elided.whole_len(bytes);
        let Some(end) = offset.checked_add(len).filter(|&e| e <= region.len) else {
            return false;
        };
        if let Some(data) = &mut region.data {
            let (kept, rest) = data[offset..end].split_at_mut(bytes.len());
            kept.copy_from_slice(bytes);
            rest.fill(elided.byte);
        }
        true
    }

    fn receive_pause(&mut self, now: Nanos, frame: &[u8], meta: &wire::FrameMeta) {
        let rate = self.link.bits_per_sec();
        if self.faults.ignore_pause {
            if matches!(
                MacControl::parse_frame(frame, meta),
                Ok(MacControl::Pfc(_) | MacControl::Pause { .. })
            ) {
                self.counters.pauses_ignored += 1;
            }
            return;
        }
        match MacControl::parse_frame(frame, meta) {
            Ok(MacControl::Pfc(pfc)) => {
                for p in pfc.priorities().iter() {
                    let quanta = pfc.quanta[usize::from(p)];
                    self.pause_until[usize::from(p)] = now + pause_duration(quanta, rate);
                    self.paused[usize::from(p)].set(now, self.pause_until[usize::from(p)]);
                    if quanta > 0 && (p == self.data_priority || p == self.cnp_priority) {
                        self.counters.pauses_received += 1;
                    }
                }
            }
            Ok(MacControl::Pause { quanta }) => {
                if quanta > 0 {
                    self.counters.link_pauses_received += 1;
                }
                self.link_pause_until = now + pause_duration(quanta, rate);
            }
            _ => {}
        }
    }

    fn ip_header(&mut self, dst: Ipv4Addr, dscp: u8, ecn: Ecn) -> IpRepr {
        self.ip_ident = self.ip_ident.wrapping_add(1);
        IpRepr::V4(Ipv4Repr {
            src: self.ip,
            dst,
            dscp,
            ecn,
            ident: self.ip_ident,
            dont_frag: true,
            ttl: 64,
        })
    }

    fn send_ack(&mut self, qi: usize, psn: u32, syndrome: u8) {
        let msn = self.qps[qi].resp.msn();
        self.send_aeth(qi, psn, syndrome, msn);
    }

    /// Selective repeat's NAK (IRN): a PSN sequence error NAK for the `expected` PSN whose
    /// MSN field carries the PSN that `came` out of order.
    fn send_sack(&mut self, qi: usize, expected: u32, came: u32) {
        self.send_aeth(qi, expected, SYNDROME_NAK_PSN, came);
    }

    /// An ACK or NAK: an RC ACKNOWLEDGE packet with `psn`, `syndrome` and `msn`.
    fn send_aeth(&mut self, qi: usize, psn: u32, syndrome: u8, msn: u32) {
        let (peer, sport) = (self.qps[qi].peer, self.qps[qi].udp_sport);
        // An ACK echoes CE (BECN, as InfiniBand's ACKs do) and the last telemetry.
        let ack = syndrome == SYNDROME_ACK;
        let becn = ack && std::mem::take(&mut self.qps[qi].ce_unechoed);
        let echo = if ack {
            self.qps[qi].int_echo.take()
        } else {
            None
        };
        let ip = self.ip_header(peer.ip, self.cfg.dscp, self.ecn);
        let repr = RoceRepr {
            eth_dst: peer.mac,
            eth_src: self.mac,
            vlan: None,
            ip,
            udp_src_port: sport,
            bth: BthRepr {
                opcode: Opcode::RC_ACK,
                pkey: 0xffff,
                dest_qp: peer.qpn,
                psn,
                becn,
                ..BthRepr::default()
            },
            ext: ExtHeaders {
                aeth: Some(Aeth { syndrome, msn }),
                ..ExtHeaders::default()
            },
            payload: echo.as_ref().map_or(&[][..], |t| &t[..]),
        };
        let mut buf = self.spare_buffer(repr.frame_len());
        if emit_roce(&repr, &mut buf, self.icrc).is_ok() {
            if echo.is_some() {
                cc_nic::flag_bth(&mut buf, wire::int::INT_ECHO);
            }
            self.counters.acks_sent += u64::from(syndrome == SYNDROME_ACK);
            self.control.push_back((self.data_priority, buf));
        } else {
            self.spare.push(buf);
        }
    }

    fn send_cnp(&mut self, qi: usize) {
        let (peer, sport) = (self.qps[qi].peer, self.qps[qi].udp_sport);
        let ip = self.ip_header(peer.ip, self.cfg.cnp_dscp, Ecn::NotEct);
        let cnp = CnpRepr {
            eth_dst: peer.mac,
            eth_src: self.mac,
            vlan: None,
            ip,
            udp_src_port: sport,
            pkey: 0xffff,
            dest_qp: peer.qpn,
        }
        .to_roce();
        let mut buf = self.spare_buffer(cnp.frame_len());
        if emit_roce(&cnp, &mut buf, self.icrc).is_ok() {
            self.qps[qi].counters.cnps_sent += 1;
            self.control.push_back((self.cnp_priority, buf));
        } else {
            self.spare.push(buf);
        }
    }

    /// A zeroed buffer of `len` bytes for a control frame, from the spares when there is
    /// one (control frames reuse their buffers: no allocation per ACK or CNP once warm).
    fn spare_buffer(&mut self, len: usize) -> Vec<u8> {
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.resize(len, 0);
        buf
    }

    /// As [`poll_transmit`](Self::poll_transmit), handing the frame over in `buf` rather
    /// than lending it: the endpoint keeps `buf`'s storage for its next frame, so nothing
    /// is copied. Returns what the frame elides ([`set_elide`](Self::set_elide); nothing
    /// unless that is on), or `None` when no frame came.
    ///
    /// Inlined for the answer most calls get right after a frame, a link still busy: a
    /// driver calls until `None`.
    #[inline]
    pub fn poll_transmit_into(&mut self, now: Nanos, buf: &mut Vec<u8>) -> Option<Elided> {
        if self.link.free_at() > now {
            self.advance_to(now);
            return None;
        }
        self.next_frame(now)?;
        std::mem::swap(&mut self.out, buf);
        Some(self.out_elided)
    }

    /// The next frame to put on the link at `now`, if the link is free and something may
    /// go: acknowledges and CNPs first, then data from the QPs in turn, each at its DCQCN
    /// rate. Paused priorities wait. The frame borrows the endpoint until the next call;
    /// it is always whole.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Nanos) -> Option<&[u8]> {
        self.next_frame(now)?;
        if !self.out_elided.is_none() {
            let restored = elide::restore(&mut self.out, self.out_elided);
            debug_assert!(restored.is_ok(), "a short frame just built restores");
            self.out_elided = Elided::NONE;
        }
        Some(&self.out)
    }

    /// Builds the next frame in `out` (short, with what it elides in `out_elided`).
    fn next_frame(&mut self, now: Nanos) -> Option<()> {
        self.out_elided = Elided::NONE;
        self.build_frame(now).map(|_| ())
    }

    /// See [`poll_transmit`](Self::poll_transmit).
    fn build_frame(&mut self, now: Nanos) -> Option<&[u8]> {
        self.advance_to(now);
        if self.link.free_at() > now {
            return None;
        }
        if let Some(frame) = self.mac_control.pop_front() {
            return Some(self.put_on_link(now, frame));
        }
        if let Some(i) = self.control.iter().position(|(p, f)| {
            self.priority_open(*p, now) && self.credit.as_ref().is_none_or(|c| c.allows(f))
        }) {
            let (_, frame) = self.control.remove(i)?;
            if let Some(c) = self.credit.as_mut() {
                c.link.sent(now, c.vl(&frame), ib_nic::blocks(&frame));
            }
            return Some(self.put_on_link(now, frame));
        }
        if let Some(c) = self.credit.as_mut() {
            // Control frames that are held for credit wait on their VL.
            for (_, f) in &self.control {
                if !c.allows(f) {
                    c.link.wait(now, c.vl(f));
                }
            }
        }
        if !self.priority_open(self.data_priority, now) || self.data_waits_for_credit() {
            return None;
        }
        if self.iwarp.is_some() {
            return self.iwarp_send_data(now);
        }
        // No QP is ready (the common case of a receiver): no need to look at each.
        debug_assert!(self.dirty.is_empty(), "settled at the last entry point");
        if self.keeps_deadlines() && self.pacers.first().is_none_or(|t| t > now) {
            return None;
        }
        let n = self.qps.len();
        let window = u64::from(self.cfg.window_packets);
        let mtu = u64::from(self.cfg.mtu);
        let dcqcn_window = self.dcqcn_window;
        let now_ps = u128::from(now.0) * 1000;
        if self.keeps_deadlines() {
            // The QP the loop below would pick: the first in turn from `next_qp` of those
            // with a packet their window allows (the others have no pacer time) whose pacer
            // lets it go now. Most of a workload host's QPs have nothing to send.
            let qi = self.pacers.first_due_in_turn(self.next_qp, now)?;
            debug_assert!({
                let q = &self.qps[qi];
                q.next_send_ps <= now_ps
                    && !q.failed
                    && q.req.can_send(q.window(window, mtu, dcqcn_window))
            });
            self.next_qp = (qi + 1) % n;
            return self.send_data(now, qi);
        }
        for k in 0..n {
            let qi = (self.next_qp + k) % n;
            let q = &self.qps[qi];
            if q.next_send_ps > now_ps
                || q.failed
                || !q.req.can_send(q.window(window, mtu, dcqcn_window))
            {
                continue;
            }
            self.next_qp = (qi + 1) % n;
            return self.send_data(now, qi);
        }
        None
    }

    /// Starts a prepared frame (PFC, ACK, NAK, CNP) on the link at `now` and lends it
    /// out; the buffer it replaces goes back to the spares.
    fn put_on_link(&mut self, now: Nanos, frame: Vec<u8>) -> &[u8] {
        self.link.start(now, &frame);
        self.counters.frames_sent += 1;
        let sent = std::mem::replace(&mut self.out, frame);
        if self.spare.len() < MAX_SPARE_BUFFERS {
            self.spare.push(sent);
        }
        &self.out
    }

    fn send_data(&mut self, now: Nanos, qi: usize) -> Option<&[u8]> {
        let mtu = self.cfg.mtu as usize;
        let seg = self.qps[qi]
            .req
            .next_segment(mtu, u64::from(self.cfg.ack_every))?;
        let (peer, sport) = (self.qps[qi].peer, self.qps[qi].udp_sport);
        let ip = self.ip_header(peer.ip, self.cfg.dscp, self.ecn);
        let q = &mut self.qps[qi];
        let int = q.cc.as_ref().is_some_and(|c| c.wants_int());
        let chunk = q.req.payload(&seg);
        let payload_len = chunk.len() as u64;
        // A short frame: its payload's first word, the rest its length (and its pad
        // count that of the whole: none).
        let elided = match chunk {
            Chunk::Fill { byte, len }
                if self.elide
                    && !int
                    && self.credit.is_none()
                    && len > elide::KEPT
                    && len % 4 == 0 =>
            {
                Elided {
                    len: (len - elide::KEPT) as u32,
                    byte,
                }
            }
            _ => Elided::NONE,
        };
        let mut scratch = std::mem::take(&mut self.int_scratch);
        let kept;
        let payload = match chunk {
            Chunk::Bytes(b) if !int => b,
            Chunk::Fill { byte, .. } if !elided.is_none() => {
                kept = [byte; elide::KEPT];
                &kept[..]
            }
            _ => {
                scratch.clear();
                chunk.extend(&mut scratch);
                if int {
                    // HPCC: room for the switches' telemetry after the payload, on the wire.
                    scratch.resize(scratch.len() + wire::int::TRAILER_LEN, 0);
                }
                &scratch[..]
            }
        };
        let repr = RoceRepr {
            eth_dst: peer.mac,
            eth_src: self.mac,
            vlan: None,
            ip,
            udp_src_port: sport,
            bth: BthRepr {
                opcode: seg.opcode,
                pkey: 0xffff,
                dest_qp: peer.qpn,
                ack_req: seg.ack_req,
                psn: qp::wire_psn(seg.psn),
                ..BthRepr::default()
            },
            ext: ExtHeaders {
                reth: seg.reth,
                immdt: seg.imm,
                ..ExtHeaders::default()
            },
            payload,
        };
        let emitted = repr.emit_to_vec(&mut self.out, self.icrc && elided.is_none());
        if emitted.is_ok() && self.icrc && !elided.is_none() {
            // Checking builds: the ICRC of the whole frame, as a receiver checks it.
            let filled = elide::fill_icrc(&mut self.out, elided, &mut scratch);
            debug_assert!(filled.is_some(), "a short frame just built restores");
        }
        self.int_scratch = scratch;
        let len = emitted.ok()? + elided.len as usize;
        self.out_elided = elided;
        if int {
            cc_nic::flag_bth(&mut self.out, wire::int::INT_REQUEST);
        }
        if let Some(c) = self.credit.as_mut() {
            let (vl, blocks) = (c.vl(&self.out), ib_nic::blocks(&self.out));
            if !c.link.can_send(vl, blocks) {
                c.link.wait(now, vl);
                return None;
            }
            c.link.sent(now, vl, blocks);
        }
        let q = &mut self.qps[qi];
        if q.req.outstanding() == 0 {
            q.progress_at = now;
        }
        if q.req.sent(&seg) {
            q.counters.retransmitted_packets += 1;
        } else if q.cc.as_ref().is_some_and(|c| c.wants_rtt()) {
            q.sent_at.push_back((seg.psn - q.req.base(), now));
        }
        self.counters.frames_sent += 1;
        q.counters.data_packets_sent += 1;
        q.counters.data_bytes_sent += payload_len;
        self.bytes_sent += payload_len;
        q.rp.on_sent(now, len as u64);
        // The pacer: the next packet of this QP no sooner than one frame time at Rc. A QP
        // woken at its pacer time (rounded up to the driver's nanosecond) sent on
        // schedule: the next gap runs from the schedule, not from the rounded time, or
        // every packet would lose the fraction (-0.6 % at 100 G, -8 % at 800 G). One that
        // waited for the link starts its gap when the link freed, to the picosecond (the
        // transmitter runs the frame on from there), or a pacer at line rate would lose up
        // to a nanosecond each time another frame (an update, a CNP) went first. One that
        // waited longer (idle, paused) starts its gap now.
        let bits = self.link.framing().wire_bits_elided(&self.out, elided);
        let gap_ps = crate::link::scaled_div_ceil(bits, 1_000_000_000_000, q.rate_bps());
        let now_ps = u128::from(now.0) * 1000;
        let base = if q.next_send_ps + 1000 > now_ps {
            q.next_send_ps
        } else if let Some(free_ps) = self.link.runs_on_ps(now) {
            free_ps
        } else {
            now_ps
        };
        q.next_send_ps = base + gap_ps;
        self.touch(qi);
        self.settle();
        self.link.start_bits(now, bits);
        Some(&self.out)
    }

    /// When to call again; `None` when there is nothing to do until a frame arrives. Its
    /// cost does not grow with the number of QPs.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Nanos> {
        if !self.keeps_deadlines() {
            return self.poll_timeout_by_scan();
        }
        let mut next = self.link_deadline();
        let mut at = |t: Nanos| next = Some(next.map_or(t, |n| n.min(t)));
        if !self.data_waits_for_credit()
            && let Some(pacer) = self.pacers.first()
        {
            at(self.data_may_go_at(pacer));
        }
        if let Some(t) = self.timers.first() {
            at(t);
        }
        debug_assert_eq!(next, self.poll_timeout_by_scan(), "the QPs' deadlines");
        next
    }

    /// When a data packet whose pacer allows it at `pacer` may go: once the link is free
    /// and the data priority is not paused.
    fn data_may_go_at(&self, pacer: Nanos) -> Nanos {
        self.link
            .free_at()
            .max(pacer)
            .max(self.priority_opens_at(self.data_priority))
    }

    /// The deadlines that are not a QP's: PFC and control frames, faults, credit updates.
    fn link_deadline(&self) -> Option<Nanos> {
        let mut next: Option<Nanos> = None;
        let mut at = |t: Nanos| next = Some(next.map_or(t, |n| n.min(t)));
        let free = self.link.free_at();
        if !self.mac_control.is_empty() {
            at(free);
        }
        if let Some(rx) = &self.rx_buffer {
            if let Some(t) = rx.next_drain() {
                at(t);
            }
            if let Some(t) = rx.refresh_at {
                at(t);
            }
        }
        if let Some(t) = self.storm.as_ref().and_then(|s| s.next) {
            at(t);
        }
        if let Some(t) = self.credit.as_ref().and_then(|c| c.link.next_due()) {
            at(t);
        }
        if let Some(t) = self.iwarp_deadline() {
            at(t);
        }
        for (p, f) in &self.control {
            if self.credit.as_ref().is_none_or(|c| c.allows(f)) {
                at(free.max(self.priority_opens_at(*p)));
            }
        }
        next
    }

    /// [`poll_timeout`](Self::poll_timeout) by looking at every QP: what the kept
    /// deadlines must give.
    fn poll_timeout_by_scan(&self) -> Option<Nanos> {
        let mut next = self.link_deadline();
        let mut at = |t: Nanos| next = Some(next.map_or(t, |n| n.min(t)));
        let data_waits = self.data_waits_for_credit();
        let window = u64::from(self.cfg.window_packets);
        let mtu = u64::from(self.cfg.mtu);
        let dcqcn_window = self.dcqcn_window;
        let interval = self.cnp_interval();
        let rto = self.rto;
        for q in &self.qps {
            if let Some(pacer) = q
                .pacer_at(q.window(window, mtu, dcqcn_window))
                .filter(|_| !data_waits)
            {
                at(self.data_may_go_at(pacer));
            }
            if let Some(t) = q.timer_at(interval, rto) {
                at(t);
            }
        }
        next
    }

    /// Runs the timers due at `now`: retransmission timeouts, DCQCN rate increases,
    /// deferred CNPs.
    pub fn handle_timeout(&mut self, now: Nanos) {
        self.advance_to(now);
        self.run_faults(now);
        self.flush_credit(now);
        // Frames a slow receiver drained may have changed QPs: their deadlines first.
        self.settle();
        let interval = self.cnp_interval();
        let rto = self.rto;
        // The QPs whose timers came due, in QP order (as a scan of every QP takes them):
        // the others have nothing to run.
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        if self.keeps_deadlines() {
            while let Some(qi) = self.timers.pop_due(now) {
                due.push(qi);
            }
            due.sort_unstable();
        } else {
            due.extend(0..self.qps.len());
        }
        for &qi in &due {
            self.touch(qi);
            let q = &mut self.qps[qi];
            q.rp.on_timeout(now);
            if q.req.outstanding() > 0 && q.rto_deadline(rto) <= now && !q.failed {
                if q.retries >= self.cfg.retry_count {
                    self.fail(now, qi, WcStatus::RetryExceeded);
                    continue;
                }
                q.req.on_timeout();
                // Karn: no RTT from packets that may go twice.
                q.sent_at.clear();
                q.progress_at = now;
                q.retries += 1;
                q.counters.timeouts += 1;
            }
            if self.qps[qi].np.on_timeout(now, interval) {
                self.send_cnp(qi);
            }
        }
        self.due = due;
        self.iwarp_timeouts(now);
        self.settle();
    }
}

impl Qp {
    fn rto_deadline(&self, rto: Rto) -> Nanos {
        self.progress_at + rto.with_in_flight(self.req.in_flight())
    }

    /// When its pacer lets its next packet go, to the nanosecond, if its window allows one.
    fn pacer_at(&self, window: u64) -> Option<Nanos> {
        (!self.failed && self.req.can_send(window))
            .then(|| Nanos(self.next_send_ps.div_ceil(1000) as u64))
    }

    /// Its earliest timer: DCQCN's rate timer, the deferred CNP, retransmission.
    fn timer_at(&self, interval: Nanos, rto: Rto) -> Option<Nanos> {
        let earlier = |a: Option<Nanos>, b: Option<Nanos>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let rto = (self.req.outstanding() > 0 && !self.failed).then(|| self.rto_deadline(rto));
        earlier(earlier(self.rp.deadline(), self.np.deadline(interval)), rto)
    }
}

impl crate::series::EndpointProbe for Endpoint {
    fn qp_bytes_sent(&self, qp: usize, _now: Nanos) -> u64 {
        self.qps[qp].counters.data_bytes_sent
    }

    fn bytes_sent(&self) -> u64 {
        debug_assert_eq!(
            self.bytes_sent,
            self.qps
                .iter()
                .map(|q| q.counters.data_bytes_sent)
                .sum::<u64>(),
            "the QPs' payload bytes, summed as they are sent"
        );
        self.bytes_sent
    }

    fn qp_rate_bps(&self, qp: usize, now: Nanos) -> u64 {
        self.qp_status(qp, now).rate_bps
    }

    fn qp_target_bps(&self, qp: usize, _now: Nanos) -> u64 {
        self.qps[qp].rp.target_bps()
    }

    fn qp_cnps_received(&self, qp: usize, _now: Nanos) -> u64 {
        self.qps[qp].counters.cnps_received
    }

    fn data_paused(&self, now: Nanos) -> bool {
        self.paused(self.data_priority(), now)
    }

    fn pauses_received(&self) -> u64 {
        // Endpoint-wide counts only: no need to sum the QPs.
        self.counters.pauses_received + self.counters.link_pauses_received
    }
}

/// Writes `repr` into `buf`, with its ICRC or (`icrc` false, see [`Endpoint::set_icrc`])
/// without.
fn emit_roce(repr: &RoceRepr, buf: &mut [u8], icrc: bool) -> Result<usize, wire::BuildError> {
    if icrc {
        repr.emit(buf)
    } else {
        repr.emit_without_icrc(buf)
    }
}

//! The switch core: no I/O and no clock of its own.
//!
//! Frames come in with their ingress port and the time ([`Switch::handle_frame`]); frames
//! go out per egress port when the port's emulated line rate allows
//! ([`Switch::poll_transmit`]); [`Switch::poll_timeout`] says when to call again and
//! [`Switch::handle_timeout`] runs the timers (PFC refresh, the watchdog). The live runtime,
//! the pcap replay and the simulator are drivers around this one core.
//!
//! # The contract (as quinn-proto's `Connection` states its own)
//!
//! - **Input**: [`handle_frame`](Switch::handle_frame) /
//!   [`handle_owned_frame`](Switch::handle_owned_frame) for each arriving frame, and
//!   [`handle_timeout`](Switch::handle_timeout) when [`poll_timeout`](Switch::poll_timeout)'s
//!   time has come.
//! - **Output**: after any input, call [`poll_transmit`](Switch::poll_transmit) (or
//!   `_owned`) until it gives `None`, then ask [`poll_timeout`](Switch::poll_timeout) when
//!   to come back. A frame handed out by `poll_transmit` is valid until the next call.
//! - **Time**: `now` never goes backwards from one call to the next (checked with
//!   `debug_assert!`); a driver that wakes late passes the late time, and catches up
//!   transmissions by calling `poll_transmit` at each deadline in between, in order.
//!
//! Inside: MAC learning ([`fdb`]); classification by DSCP or PCP ([`classify`]); the
//! shared-buffer MMU with ingress PG accounting, XOFF/XON and headroom ([`mmu`]); RED-ECN
//! marking and WRED/tail drop ([`red`]); strict priority + DWRR under a per-port shaper
//! ([`sched`]); PFC generation and reception and the PFC watchdog ([`pfc`]); counters.

pub mod audit;
pub mod balance;
pub mod classify;
pub mod counters;
mod egress;
pub mod fdb;
mod ib_switch;
pub mod mmu;
pub mod note;
mod packets;
pub mod pfc;
pub mod red;
pub mod sched;
mod wake;

pub use balance::Balance;
pub use counters::{ClassCounters, DropCause, PortCounters, SojournHistogram};
pub use note::Note;

use crate::config::{CLASSES, MarkAt, SwitchConfig};
use crate::link::Transmitter;
use crate::rand::Rng;
use crate::time::Nanos;
use crate::wire::elide::Elided;
use crate::wire::{self, CeMark, Ecn, FrameMeta, MacAddr};
use classify::Classifier;
use fdb::{Fdb, Lookup};
use mmu::Mmu;
use packets::{Entry, Packets};
use sched::Scheduler;
use std::collections::VecDeque;

/// One egress queue, and what a frame queued or sent reads and writes of its state beside
/// the frames: one cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Queue {
    frames: VecDeque<Entry>,
    bytes: u64,
    /// Paused by received PFC until then.
    pause_until: Nanos,
    /// The last time the queue sent a frame or went from empty to busy (the watchdog's
    /// measure of progress).
    last_progress: Nanos,
    /// The deepest it was since a time-series recorder last read it (a `Cell`: reading
    /// starts the next interval, through the read-only probe).
    peak: std::cell::Cell<u64>,
}

/// One port: its transmitter, queues, pause state and counters.
///
/// In C's layout, in this order: a switch's ports are more than its cache holds, and a
/// frame sent reads the transmitter and the fields after it, so those share the first two
/// lines; then the queues, a line each; the counters; what only pause frames, timers and
/// reports read.
#[derive(Debug)]
#[repr(C)]
struct Port {
    tx: Transmitter,
    /// Paused by a received 802.3x PAUSE until then (all data queues).
    link_pause_until: Nanos,
    /// The largest frame (without FCS) the port takes or sends: MTU + 18.
    max_frame_bytes: u32,
    /// Bit q set: queue q holds frames.
    nonempty: u8,
    /// Bit q: the watchdog holds queue q as stormed (set through [`Port::set_stormed`]).
    stormed: u8,
    /// The PGs with a `refresh_at`: most ports hold no XOFF, and their timer deadline is
    /// then found without looking at every PG.
    refreshing: u8,
    /// PFC frames the switch generated, sent ahead of all data and never paused.
    control: VecDeque<Entry>,
    /// Credit flow control per VL, on an InfiniBand fabric (boxed: a RoCE port has none).
    credit: Option<Box<crate::credit::CreditLink>>,
    /// The forwarding latency: a frame may leave no sooner than this after it came in.
    latency: Nanos,
    sched: Scheduler,
    queues: [Queue; CLASSES],
    counters: PortCounters,
    /// Per queue: frames RED hit that are still to be left unmarked before the next
    /// mark, with a queue's `marking_rate` (see [`Port::spaced_mark`]).
    marks_to_skip: [u16; CLASSES],
    mac: MacAddr,
    /// Per PG of this port as an ingress: when to refresh the XOFF it holds (set through
    /// [`set_refresh`](Port::set_refresh)).
    refresh_at: [Option<Nanos>; CLASSES],
    /// Per queue: the last time a PFC frame with a non-zero time for it arrived (the
    /// watchdog's measure of a storm's end).
    last_pause_rx: [Nanos; CLASSES],
    /// Per queue: time paused by received PFC.
    paused: [crate::time::Span; CLASSES],
    /// Time the whole port was paused by received 802.3x PAUSE.
    link_paused: crate::time::Span,
    /// Per PG of this port as an ingress: time it held its peer in XOFF.
    xoff_held: [crate::time::Span; CLASSES],
    /// Per PG of this port as an ingress: the earliest its latest XOFF or refresh could
    /// leave (its time, or later after a live thread's stall, see
    /// [`Switch::set_release_floor`]).
    pause_left: [Nanos; CLASSES],
}

/// A static route's group: its members' place in [`Switch`]'s `route_ports`.
#[derive(Debug, Clone, Copy)]
struct Route {
    first: u32,
    len: u32,
}

impl Route {
    fn ports(self) -> std::ops::Range<usize> {
        self.first as usize..(self.first + self.len) as usize
    }
}

/// A received frame: borrowed from the driver (copied if kept) or handed over, with
/// the payload it elides (a simulator's short frame, see [`wire::elide`]).
enum Incoming<'a> {
    Borrowed(&'a [u8], Elided),
    Owned(Vec<u8>, Elided),
}

impl Incoming<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Incoming::Borrowed(b, _) => b,
            Incoming::Owned(v, _) => v,
        }
    }

    fn elided(&self) -> Elided {
        match self {
            Incoming::Borrowed(_, e) | Incoming::Owned(_, e) => *e,
        }
    }

    /// Its length on the wire.
    fn len(&self) -> usize {
        self.elided().whole_len(self.bytes())
    }

    /// The whole frame, restored if it is short (for a drop record).
    fn whole(&self) -> Vec<u8> {
        let mut frame = self.bytes().to_vec();
        // A frame that is not the short frame it claims to be is kept as it came.
        let _ = wire::elide::restore(&mut frame, self.elided());
        frame
    }
}

/// What happened to a received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxOutcome {
    /// Queued on `copies` egress ports (1 for a known unicast destination, more when
    /// flooded); `dropped` copies were refused by the buffer.
    Queued {
        /// Egress ports that took a copy.
        copies: u16,
        /// Copies dropped (watchdog, tail, WRED or ingress overflow), each counted.
        dropped: u16,
    },
    /// The destination sits behind the ingress port.
    Filtered,
    /// A PFC, PAUSE or other link-local frame, acted on and not forwarded.
    Consumed,
    /// Shorter than an Ethernet header, or an unknown port: discarded.
    Discarded,
}

/// A frame leaving the switch. The frame borrows the switch until the next call.
#[derive(Debug, Clone, Copy)]
pub struct Transmit<'a> {
    /// Egress port: an index into the configuration's `ports`.
    pub port: usize,
    /// When its first bit leaves.
    pub time: Nanos,
    /// The frame, without FCS.
    pub frame: &'a [u8],
    /// Why the switch changed or created it (with [`Switch::set_explain`]).
    pub note: Option<&'a Note>,
}

/// The software switch: one I/O-free core, driven as the module documentation states.
///
/// In C's layout, what every frame reads first: on a fabric the switches take turns
/// with many other nodes, and each turn finds the switch out of the cache, so each line
/// its frame reads is a miss.
#[derive(Debug)]
#[repr(C)]
pub struct Switch {
    /// The latest `now` a driver passed in.
    clock: crate::time::LastTime,
    /// The slot of the frame handed out by the last `poll_transmit`, freed on the next
    /// call.
    last_tx: Option<u32>,
    /// Watchdog polls run at `anchor + k × poll`.
    watchdog_anchor: Option<Nanos>,
    ports: Vec<Port>,
    /// The frames held, and the buffers for the next ones.
    packets: Packets,
    /// Static routes: a destination MAC to one port or an ECMP group, consulted before
    /// the learned table.
    routes: rustc_hash::FxHashMap<MacAddr, Route>,
    /// The routes' groups, each kept once however many destinations share it (a leaf's
    /// uplinks serve every remote host): the members of a frame's group stay in the cache.
    /// A route is any run of it that holds its group.
    route_ports: Vec<usize>,
    rng: Rng,
    explain: bool,
    /// The queues that carry a lossless class ([`SwitchConfig::lossless_queues`]): the
    /// ones the watchdog watches.
    lossless_queues: u8,
    classifier: Classifier,
    /// How a static route's group picks its member.
    balancer: balance::Balancer,
    /// When each port next needs the switch.
    wakes: wake::Wakes,
    mmu: Mmu,
    /// RoCE traffic the configuration puts in the wrong place.
    audit: audit::Audit,
    cfg: SwitchConfig,
    fdb: Fdb,
    /// The last k whose poll ran.
    watchdog_ticks_done: u64,
    /// Storms the watchdog detected, with their times.
    storms: Vec<pfc::StormRecord>,
    /// The first drop of each (port, class, cause), explained.
    drops: Vec<audit::DropRecord>,
    /// Nothing the switch releases now reaches a wire before this (see
    /// [`Switch::set_release_floor`]).
    release_floor: Nanos,
    /// The PGs (port, PG) whose pause went out since the driver last said when its
    /// releases left ([`Switch::released_by`]); kept only once a live driver has set a
    /// release floor.
    unconfirmed: Vec<(usize, usize)>,
}

impl Switch {
    /// A switch with the ports of `cfg`, all queues empty.
    pub fn new(cfg: &SwitchConfig) -> Switch {
        let max_mtu = cfg.ports.iter().map(|p| p.mtu).max().unwrap_or(9216);
        let schedules = cfg.queues.map(|q| q.schedule);
        let ports = cfg
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| Port {
                mac: MacAddr([0x02, 0x00, 0x5e, 0x10, (i >> 8) as u8, i as u8]),
                tx: Transmitter::new(p.bits_per_sec),
                max_frame_bytes: (p.mtu as usize + MTU_OVERHEAD_BYTES)
                    .try_into()
                    .unwrap_or(u32::MAX),
                control: VecDeque::new(),
                queues: Default::default(),
                nonempty: 0,
                sched: Scheduler::new(&schedules, u64::from(max_mtu) + 64),
                link_pause_until: Nanos::ZERO,
                refresh_at: [None; CLASSES],
                refreshing: 0,
                last_pause_rx: [Nanos::ZERO; CLASSES],
                stormed: 0,
                paused: Default::default(),
                link_paused: Default::default(),
                xoff_held: Default::default(),
                pause_left: [Nanos::ZERO; CLASSES],
                marks_to_skip: [0; CLASSES],
                counters: PortCounters::new(&p.name),
                credit: None,
                latency: Nanos::ZERO,
            })
            .collect();
        Switch {
            clock: crate::time::LastTime::default(),
            classifier: Classifier::new(cfg),
            fdb: Fdb::new(cfg.mac_age),
            mmu: Mmu::new(cfg),
            rng: Rng::new(cfg.seed),
            ports,
            packets: Packets::default(),
            last_tx: None,
            wakes: wake::Wakes::new(cfg.ports.len()),
            explain: false,
            routes: Default::default(),
            route_ports: Vec::new(),
            balancer: balance::Balancer::default(),
            lossless_queues: cfg.lossless_queues(),
            watchdog_anchor: None,
            watchdog_ticks_done: 0,
            storms: Vec::new(),
            audit: audit::Audit::default(),
            drops: Vec::new(),
            release_floor: Nanos::ZERO,
            unconfirmed: Vec::new(),
            cfg: cfg.clone(),
        }
    }

    /// Attach a [`Note`] to every frame the switch changes or creates (off by default, to
    /// keep the hot path free of the bookkeeping).
    pub fn set_explain(&mut self, on: bool) {
        self.explain = on;
    }

    /// RoCE traffic this configuration put in the wrong place (a lossy class, a CNP
    /// queue that is not prioritised), each kind once, in the order it arose.
    pub fn warnings(&self) -> &[audit::Warning] {
        self.audit.warnings()
    }

    /// The first drop of each kind (port, class, cause), with the rule's inputs:
    /// [`audit::DropRecord::explain`] says it in words.
    pub fn drops(&self) -> &[audit::DropRecord] {
        &self.drops
    }

    /// Keeps the first drop of its (port, class, cause), with what the rule saw.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn record_drop(
        &mut self,
        now: Nanos,
        port: usize,
        ingress: usize,
        class: u8,
        queue: usize,
        out: usize,
        cause: DropCause,
        frame: &Incoming<'_>,
    ) {
        let bytes = frame.len();
        if self.drops.len() >= audit::MAX_DROP_RECORDS
            || self
                .drops
                .iter()
                .any(|d| d.port == port && d.class == class && d.cause == cause)
        {
            return;
        }
        let pg = usize::from(class);
        let state = *self.mmu.pg(ingress, pg);
        self.drops.push(audit::DropRecord {
            at: now,
            port,
            ingress,
            class,
            queue,
            cause,
            bytes: bytes as u64,
            pg_shared: state.shared,
            pg_headroom: state.headroom,
            headroom_size: self.mmu.headroom_size(ingress, pg),
            xoff_threshold: self.mmu.xoff_threshold(pg),
            xoff: state.xoff,
            pfc_stopped: self.cfg.lossless.contains(class) && self.pfc_stopped(ingress, pg),
            pool_used: self.mmu.shared_used(),
            pool_size: self.cfg.shared_bytes,
            queue_bytes: self.ports[out].queues[queue].bytes,
            queue_limit: self.mmu.lossy_queue_limit(),
            frame: self.explain.then(|| frame.whole()),
        });
    }

    /// The latest time a driver passed in.
    pub fn now(&self) -> Nanos {
        self.clock.get()
    }

    /// Tells the switch that nothing it releases from now on reaches a wire before `at`:
    /// a live driver's thread catching up after a stall hands it frames at their arrival
    /// times, earlier than `at`, and what it sends then (a PFC pause) leaves late. A
    /// lossless PG whose headroom is full then keeps a frame that arrived before its
    /// pause left, counted in `late_pause_frames`: its sender would have held it had the
    /// pause left on time. A simulator never calls this.
    pub fn set_release_floor(&mut self, at: Nanos) {
        self.release_floor = self.release_floor.max(at);
    }

    /// Tells the switch that everything it released until now had left by `at` (a live
    /// driver's send returned then): a pause sent since the last call left no earlier
    /// than `at` when the thread stalled between deciding it and sending it, and the
    /// frames its sender sent meanwhile are held as [`set_release_floor`] says.
    ///
    /// [`set_release_floor`]: Self::set_release_floor
    pub fn released_by(&mut self, at: Nanos) {
        for (port, pg) in self.unconfirmed.drain(..) {
            let left = &mut self.ports[port].pause_left[pg];
            *left = (*left).max(at);
        }
    }

    /// A pause for `pg` of `port` goes out at `now`: it leaves no earlier than the release
    /// floor, or than the driver's next [`Switch::released_by`].
    fn pause_leaves(&mut self, now: Nanos, port: usize, pg: usize) {
        self.ports[port].pause_left[pg] = now.max(self.release_floor);
        if self.release_floor > Nanos::ZERO {
            self.unconfirmed.push((port, pg));
        }
    }

    /// The validated configuration the switch was built with.
    pub fn config(&self) -> &SwitchConfig {
        &self.cfg
    }

    /// Number of ports.
    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// The index of the port named `name`.
    pub fn port_index(&self, name: &str) -> Option<usize> {
        self.cfg.ports.iter().position(|p| p.name == name)
    }

    /// Counters of port `port`.
    pub fn counters(&self, port: usize) -> &PortCounters {
        &self.ports[port].counters
    }

    /// Bytes queued on `queue` of `port`.
    pub fn queue_bytes(&self, port: usize, queue: usize) -> u64 {
        self.ports[port].queues[queue].bytes
    }

    /// Frames queued on `queue` of `port`.
    pub fn queue_frames(&self, port: usize, queue: usize) -> usize {
        self.ports[port].queues[queue].frames.len()
    }

    /// The ingress accounting of PG `pg` on `port`.
    pub fn pg_state(&self, port: usize, pg: usize) -> mmu::PgState {
        *self.mmu.pg(port, pg)
    }

    /// The MMU (thresholds and pool use).
    pub fn mmu(&self) -> &Mmu {
        &self.mmu
    }

    /// How long egress `queue` of `port` has been paused by PFC frames from its peer, up
    /// to `now` (overlapping pauses counted once; 802.3x PAUSE not included).
    pub fn paused_time(&self, port: usize, queue: usize, now: Nanos) -> Nanos {
        self.ports[port].paused[queue].total(now)
    }

    /// How long `port` has been paused by 802.3x PAUSE frames from its peer (every queue
    /// at once), up to `now`.
    pub fn link_paused_time(&self, port: usize, now: Nanos) -> Nanos {
        self.ports[port].link_paused.total(now)
    }

    /// How long PG `pg` of `port` has held its peer in XOFF (from each XOFF to its XON),
    /// up to `now`.
    pub fn xoff_time(&self, port: usize, pg: usize, now: Nanos) -> Nanos {
        self.ports[port].xoff_held[pg].total(now)
    }

    /// Whether the watchdog holds `queue` of `port` as stormed.
    pub fn is_stormed(&self, port: usize, queue: usize) -> bool {
        self.ports[port].is_stormed(queue)
    }

    /// Sends frames for `mac` to `ports`: one port, or an ECMP group where a hash of the
    /// IP addresses and UDP ports (the RoCEv2 source port carries the QP's entropy) picks
    /// the member. Static routes win over learned addresses.
    pub fn add_route(&mut self, mac: MacAddr, ports: &[usize]) {
        let ports: Vec<usize> = ports
            .iter()
            .copied()
            .filter(|&p| p < self.ports.len())
            .collect();
        if ports.is_empty() {
            return;
        }
        let first = match self
            .route_ports
            .windows(ports.len())
            .position(|w| w == ports)
        {
            Some(first) => first,
            None => {
                self.route_ports.extend_from_slice(&ports);
                self.route_ports.len() - ports.len()
            }
        };
        let route = Route {
            first: first as u32,
            len: ports.len() as u32,
        };
        self.routes.insert(mac, route);
    }

    /// Picks the member of a route's group as `mode` says (ECMP by default). Call before
    /// the first frame.
    pub fn set_balance(&mut self, mode: Balance) {
        self.balancer = balance::Balancer::new(mode);
    }

    /// How a route's group picks its member.
    pub fn balance(&self) -> Balance {
        self.balancer.mode()
    }

    /// Holds every frame at least `latency` between its arrival and its first bit out (a
    /// forwarding pipeline; 0, the default, forwards at once). Call before the first
    /// frame.
    pub fn set_forwarding_latency(&mut self, latency: Nanos) {
        for (i, p) in self.ports.iter_mut().enumerate() {
            p.latency = latency;
            self.wakes.touch(i);
        }
        self.settle();
    }

    /// Shuts (`false`) or opens the transmit side of a port, as a test stops an egress.
    pub fn set_tx_enabled(&mut self, port: usize, enabled: bool) {
        if let Some(p) = self.ports.get_mut(port) {
            p.tx.enabled = enabled;
            self.wakes.touch(port);
            self.settle();
        }
    }

    /// Runs `port`'s transmitter at `bits_per_sec` from now on (a link renegotiated to a
    /// lower speed, or back): the frame on the wire finishes at the old rate; PFC pause
    /// times and the port's utilization follow the new rate.
    pub fn set_port_rate(&mut self, port: usize, bits_per_sec: u64) {
        if let Some(p) = self.ports.get_mut(port) {
            p.tx.set_rate(bits_per_sec);
            self.wakes.touch(port);
            self.settle();
        }
    }

    /// What the ports' deadlines depend on besides the ports.
    fn wake_rules(&self) -> wake::Rules {
        wake::Rules {
            forward_stormed: self.forward_stormed(),
            watchdog: self.cfg.watchdog.enabled,
            lossless_queues: self.lossless_queues,
        }
    }

    /// Brings the ports' deadlines up to date: the last step of every entry point.
    #[inline]
    fn settle(&mut self) {
        let rules = self.wake_rules();
        self.wakes.settle(&self.ports, rules);
    }

    fn anchor(&mut self, now: Nanos) {
        self.watchdog_anchor.get_or_insert(now);
    }

    fn recycle_last(&mut self) {
        if let Some(slot) = self.last_tx.take() {
            self.packets.remove(slot);
        }
    }

    /// A frame arrives, fully received, on `port` at `now`; the switch copies it into one
    /// of its buffers.
    pub fn handle_frame(&mut self, now: Nanos, port: usize, frame: &[u8]) -> RxOutcome {
        self.advance_to(now);
        let out = self.receive(now, port, Incoming::Borrowed(frame, Elided::NONE));
        self.settle();
        out
    }

    /// A frame arrives in a buffer the driver hands over (from
    /// [`take_buffer`](Self::take_buffer), say, received into directly): no copy.
    pub fn handle_owned_frame(&mut self, now: Nanos, port: usize, frame: Vec<u8>) -> RxOutcome {
        self.handle_elided_frame(now, port, frame, Elided::NONE)
    }

    /// As [`handle_owned_frame`](Self::handle_owned_frame), for a simulator's short frame
    /// and what it elides ([`wire::elide`]): the switch buffers, schedules and counts it
    /// at its length on the wire, and hands it on short
    /// ([`poll_transmit_elided`](Self::poll_transmit_elided)).
    pub fn handle_elided_frame(
        &mut self,
        now: Nanos,
        port: usize,
        frame: Vec<u8>,
        elided: Elided,
    ) -> RxOutcome {
        self.advance_to(now);
        let out = self.receive(now, port, Incoming::Owned(frame, elided));
        self.settle();
        out
    }

    /// Records the driver's `now` (time must not go backwards).
    #[inline]
    fn advance_to(&mut self, now: Nanos) {
        self.clock.advance(now);
    }

    /// An empty buffer from the switch's pool, to receive a frame into.
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.recycle_last();
        self.packets.buffer()
    }

    fn receive(&mut self, now: Nanos, port: usize, incoming: Incoming<'_>) -> RxOutcome {
        self.recycle_last();
        self.anchor(now);
        let frame = incoming.bytes();
        if port >= self.ports.len() || frame.len() < wire::ethernet::HEADER_LEN {
            self.dispose(incoming);
            return RxOutcome::Discarded;
        }
        let dst = MacAddr(frame[..6].try_into().unwrap_or_default());
        let src = MacAddr(frame[6..12].try_into().unwrap_or_default());
        let meta = wire::parse_meta(frame);
        if !incoming.elided().is_none()
            && !meta.is_some_and(|m| wire::elide::can_be_short(frame, &m))
        {
            // Only an unpadded RoCEv2 frame of at least the minimum length can be short
            // (its elided bytes then add to its wire length as to its length, and dequeue
            // times it by its length): anything else that claims to be is malformed, and
            // is not taken in at a length it does not have.
            self.ports[port].counters.rx_malformed_frames += 1;
            self.dispose(incoming);
            return RxOutcome::Discarded;
        }
        // IEEE 802.1Q reserves 01:80:C2:00:00:00-0F for link-local protocols: never relayed.
        if dst.0[..5] == [0x01, 0x80, 0xc2, 0x00, 0x00] && dst.0[5] <= 0x0f {
            self.ports[port].counters.rx_link_local_frames += 1;
            if crate::credit::FcPacket::is_envelope(frame) {
                self.receive_link_packet(now, port, incoming.bytes());
            } else if let Some(meta) = meta.filter(|m| m.is_mac_control()) {
                self.receive_mac_control(now, port, incoming.bytes(), &meta);
            }
            self.dispose(incoming);
            return RxOutcome::Consumed;
        }
        if incoming.len() > self.ports[port].max_frame_bytes as usize {
            self.ports[port].counters.rx_oversize_frames += 1;
            self.dispose(incoming);
            return RxOutcome::Discarded;
        }
        let class = match &meta {
            Some(m) => self.classifier.traffic_class(m),
            None => {
                self.ports[port].counters.rx_malformed_frames += 1;
                self.classifier.default_class()
            }
        };
        let credit = self.ports[port].credit.is_some();
        if credit {
            // Every class is lossless by credit: nothing for the audit to find.
            self.credit_received(port, self.classifier.queue(class), frame, incoming.elided());
        } else if let Some(m) = meta.as_ref().filter(|m| m.is_roce()) {
            self.audit
                .check(m, class, self.classifier.queue(class), &self.cfg);
        }
        let c = &mut self.ports[port].counters.classes[usize::from(class)];
        c.rx_frames += 1;
        c.rx_bytes += incoming.len() as u64;
        self.fdb.learn(now, port, src);
        let route = (!self.routes.is_empty())
            .then(|| self.routes.get(&dst))
            .flatten();
        let lookup = match route {
            Some(route) => {
                let group = &self.route_ports[route.ports()];
                let ports = &self.ports;
                let out = self.balancer.choose(now, frame, meta.as_ref(), group, |p| {
                    ports[p].queues.iter().map(|q| q.bytes).sum()
                });
                if out == port {
                    Lookup::Filter
                } else {
                    Lookup::Port(out)
                }
            }
            None => self.fdb.lookup(now, port, dst),
        };
        match lookup {
            Lookup::Port(out) => {
                let dropped = self.enqueue(now, port, out, class, incoming, meta).is_err();
                RxOutcome::Queued {
                    copies: u16::from(!dropped),
                    dropped: u16::from(dropped),
                }
            }
            Lookup::Flood => {
                let (mut copies, mut dropped) = (0, 0);
                let last = (0..self.ports.len()).rev().find(|&p| p != port);
                for out in (0..self.ports.len()).filter(|&p| p != port && Some(p) != last) {
                    match self.enqueue(
                        now,
                        port,
                        out,
                        class,
                        Incoming::Borrowed(incoming.bytes(), incoming.elided()),
                        meta,
                    ) {
                        Ok(()) => copies += 1,
                        Err(_) => dropped += 1,
                    }
                }
                match last {
                    Some(out) => match self.enqueue(now, port, out, class, incoming, meta) {
                        Ok(()) => copies += 1,
                        Err(_) => dropped += 1,
                    },
                    None => self.dispose(incoming),
                }
                RxOutcome::Queued { copies, dropped }
            }
            Lookup::Filter => {
                self.ports[port].counters.filtered_frames += 1;
                self.dispose(incoming);
                RxOutcome::Filtered
            }
        }
    }

    /// Returns an owned buffer the switch does not keep to the pool.
    fn dispose(&mut self, incoming: Incoming<'_>) {
        if let Incoming::Owned(buf, _) = incoming {
            self.packets.recycle(buf);
        }
    }

    /// Admits one copy of a frame to `queue` of `out`: watchdog, tail and WRED drops, the
    /// ingress charge (which may send XOFF), ECN marking at enqueue.
    fn enqueue(
        &mut self,
        now: Nanos,
        ingress: usize,
        out: usize,
        class: u8,
        incoming: Incoming<'_>,
        meta: Option<FrameMeta>,
    ) -> Result<(), DropCause> {
        let frame = incoming.bytes();
        let q = self.classifier.queue(class);
        let pg = usize::from(class);
        let len = incoming.len();
        // With credit flow control the sender only sent what the ingress buffer holds:
        // no class is dropped for lack of buffer.
        let credit = self.ports[ingress].credit.is_some();
        let lossless = credit || self.cfg.lossless.contains(class);
        let queue_cfg = self.cfg.queues[q];
        if len > self.ports[out].max_frame_bytes as usize {
            self.ports[out].counters.drop(q, DropCause::Mtu, len);
            self.record_drop(now, out, ingress, class, q, out, DropCause::Mtu, &incoming);
            self.dispose(incoming);
            return Err(DropCause::Mtu);
        }
        let port = &mut self.ports[out];
        if port.is_stormed(q) && self.cfg.watchdog.action == crate::config::WatchdogAction::Drop {
            port.counters.drop(q, DropCause::Watchdog, len);
            self.record_drop(
                now,
                out,
                ingress,
                class,
                q,
                out,
                DropCause::Watchdog,
                &incoming,
            );
            self.dispose(incoming);
            return Err(DropCause::Watchdog);
        }
        let depth = port.queues[q].bytes;
        if !lossless && depth + len as u64 > self.mmu.lossy_queue_limit() {
            port.counters.drop(q, DropCause::Tail, len);
            self.record_drop(now, out, ingress, class, q, out, DropCause::Tail, &incoming);
            self.dispose(incoming);
            return Err(DropCause::Tail);
        }
        let ecn = meta.map_or(Ecn::NotEct, |m| m.ecn());
        let mut mark = None;
        // On InfiniBand a port that waits for credit is a victim of congestion further on,
        // not its root: it marks no FECN (the IBA's default Victim_Mask).
        let victim = port.credit.as_ref().is_some_and(|c| c.waiting(q));
        if let (Some(profile), MarkAt::Enqueue, false) = (queue_cfg.ecn, queue_cfg.mark_at, victim)
        {
            let decision = red::decide(&profile, depth, &mut self.rng);
            if decision.hit {
                if ecn.is_ect() {
                    mark = Some((profile, decision.probability));
                } else if ecn == Ecn::NotEct && !lossless {
                    port.counters.drop(q, DropCause::Wred, len);
                    self.record_drop(now, out, ingress, class, q, out, DropCause::Wred, &incoming);
                    self.dispose(incoming);
                    return Err(DropCause::Wred);
                }
            }
        }
        if let Some(c) = self.ports[ingress].credit.as_mut() {
            c.hold(q, ib_switch::frame_blocks(frame, incoming.elided()));
        } else if !self.mmu.charge(ingress, pg, len as u32) {
            if lossless && self.mmu.pg(ingress, pg).xoff && now < self.ports[ingress].pause_left[pg]
            {
                // Sent before its sender could see the pause that left late.
                self.mmu.charge_late(ingress, pg, len as u32);
                self.ports[ingress].counters.classes[pg].late_pause_frames += 1;
            } else {
                if lossless && !self.mmu.pg(ingress, pg).xoff && !self.pfc_stopped(ingress, pg) {
                    // The frame reaches the XOFF point and its rest does not fit the
                    // headroom: a hardware MMU pauses at the cell that crosses the point
                    // and drops what does not fit, and so does this one.
                    self.send_xoff(now, ingress, pg);
                }
                self.ports[ingress]
                    .counters
                    .drop(pg, DropCause::IngressOverflow, len);
                self.record_drop(
                    now,
                    ingress,
                    ingress,
                    class,
                    q,
                    out,
                    DropCause::IngressOverflow,
                    &incoming,
                );
                self.dispose(incoming);
                return Err(DropCause::IngressOverflow);
            }
        }
        let state = self.mmu.pg(ingress, pg);
        let peak = self.mmu.pg_peak(ingress, pg);
        peak.set(peak.get().max(state.shared));
        let c = &mut self.ports[ingress].counters.classes[pg];
        c.pg_shared_watermark_bytes = c.pg_shared_watermark_bytes.max(state.shared);
        c.pg_headroom_watermark_bytes = c.pg_headroom_watermark_bytes.max(state.headroom);
        if self.mmu.needs_xoff(ingress, pg) && !self.pfc_stopped(ingress, pg) {
            self.send_xoff(now, ingress, pg);
        }
        let int = meta.is_some_and(|m| m.is_roce() && egress::int_requested(frame, &m));
        let elided = incoming.elided();
        let blocks = if self.ports[out].credit.is_some() {
            ib_switch::frame_blocks(frame, elided)
        } else {
            0
        };
        let slot = match incoming {
            Incoming::Owned(buf, _) => self.packets.insert_owned(meta, buf),
            Incoming::Borrowed(frame, _) => self.packets.insert_copy(meta, frame),
        };
        let packet = self.packets.get_mut(slot);
        packet.elided = elided;
        // A marking turn (InfiniBand's marking rate) goes to a frame admitted, not to one
        // dropped above.
        if let (Some((profile, probability)), Some(meta)) = (mark, meta)
            && self.ports[out].spaced_mark(q, queue_cfg.marking_rate)
            && wire::mark_ce(&mut packet.buf, &meta) == CeMark::Marked
        {
            self.ports[out].counters.classes[q].ecn_marked += 1;
            if self.explain {
                packet.note = Some(Box::new(Note::CeMarked {
                    queue: q as u8,
                    depth_bytes: depth,
                    kmin_bytes: profile.kmin_bytes,
                    kmax_bytes: profile.kmax_bytes,
                    probability,
                }));
            }
        }
        let port = &mut self.ports[out];
        let queue = &mut port.queues[q];
        let new_head = queue.frames.is_empty();
        if new_head {
            queue.last_progress = now;
            port.nonempty |= 1 << q;
        }
        queue.bytes += len as u64;
        queue.frames.push_back(Entry {
            arrived: now,
            slot,
            len: len as u32,
            blocks,
            int,
            ingress: ingress as u32,
            class,
        });
        queue.peak.set(queue.peak.get().max(queue.bytes));
        let c = &mut port.counters.classes[q];
        c.queue_watermark_bytes = c.queue_watermark_bytes.max(queue.bytes);
        port.note_credit_wait(now, q);
        // A frame behind a head changes none of the port's deadlines (they depend on the
        // heads, which queues hold frames, and credit): only a new head touches the port.
        if new_head || port.credit.is_some() {
            self.wakes.touch(out);
        }
        Ok(())
    }
}

/// Bytes the Ethernet header and one 802.1Q tag add to a port's MTU (the largest IP
/// packet): the largest frame, FCS excluded, a port takes or sends.
pub const MTU_OVERHEAD_BYTES: usize = 18;

impl crate::series::SwitchProbe for Switch {
    fn queue_bytes(&self, port: usize, queue: usize) -> u64 {
        Switch::queue_bytes(self, port, queue)
    }

    fn queue_peak_bytes(&self, port: usize, queue: usize) -> u64 {
        let p = &self.ports[port];
        let now = p.queues[queue].bytes;
        p.queues[queue].peak.replace(now).max(now)
    }

    fn pg_xoff(&self, port: usize, pg: usize) -> bool {
        self.pg_state(port, pg).xoff
    }

    fn xoff_frames_sent(&self, port: usize, pg: usize) -> u64 {
        let c = &self.counters(port).classes[pg];
        c.tx_pause_frames - c.tx_xon_frames
    }

    fn queue_paused(&self, port: usize, queue: usize, now: Nanos) -> bool {
        self.ports[port].paused_until(queue) > now
    }

    fn xoff_frames_received(&self, port: usize, pg: usize) -> u64 {
        let c = &self.counters(port).classes[pg];
        c.rx_pause_frames - c.rx_xon_frames
    }

    fn queue_stormed(&self, port: usize, queue: usize) -> bool {
        self.is_stormed(port, queue)
    }

    fn pg_peak_bytes(&self, port: usize, pg: usize) -> u64 {
        let now = self.mmu.pg(port, pg).shared;
        self.mmu.pg_peak(port, pg).replace(now).max(now)
    }

    fn pg_xoff_bytes(&self, pg: usize) -> u64 {
        self.mmu.xoff_threshold(pg)
    }

    fn pg_xon_bytes(&self, pg: usize) -> u64 {
        self.mmu.xon_threshold(pg)
    }
}

#[cfg(test)]
mod route_tests {
    use super::*;

    fn frame(dst: u8, src: u8) -> Vec<u8> {
        let mut frame = vec![0u8; 60];
        frame[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, dst]);
        frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, src]);
        frame[12..14].copy_from_slice(&[0x88, 0xb5]);
        frame
    }

    /// Routes win over learned addresses, a group is kept once however many destinations
    /// share it (as a run of any group that holds it), and a route added again replaces
    /// the one before.
    #[test]
    fn routes_share_groups_win_over_learning_and_replace() {
        let mut cfg = SwitchConfig::preset("default").unwrap();
        cfg.ports = (0..4)
            .map(|i| cfg.port_or_default(&format!("p{i}")))
            .collect();
        let mut sw = Switch::new(&cfg);
        // 0x0b is learned behind port 1.
        sw.handle_frame(Nanos(0), 1, &frame(0xff, 0x0b));
        for dst in 0x10..0x20 {
            sw.add_route(MacAddr([0x02, 0, 0, 0, 0, dst]), &[2, 3]);
        }
        sw.add_route(MacAddr([0x02, 0, 0, 0, 0, 0x0b]), &[3]);
        sw.add_route(MacAddr([0x02, 0, 0, 0, 0, 0x0c]), &[3, 9]);
        assert_eq!(sw.route_ports, [2, 3], "[3] is a run of [2, 3]: kept once");
        let queued = |sw: &Switch| [0, 1, 2, 3].map(|p| sw.queue_frames(p, 0));
        let before = queued(&sw);
        assert_eq!(
            sw.handle_frame(Nanos(1), 0, &frame(0x0b, 0x0a)),
            RxOutcome::Queued {
                copies: 1,
                dropped: 0
            }
        );
        // The route, not the learned port 1; a member past the ports is left out.
        sw.handle_frame(Nanos(2), 0, &frame(0x0c, 0x0a));
        let after = queued(&sw);
        assert_eq!([after[1] - before[1], after[3] - before[3]], [0, 2]);
        // Every frame to the group's destinations goes to one of its members.
        for dst in 0x10..0x20 {
            sw.handle_frame(Nanos(3), 0, &frame(dst, 0x0a));
        }
        let spread = queued(&sw);
        assert_eq!(spread[2] + spread[3] - after[2] - after[3], 16);
        // Replaced: 0x0b now goes to port 2.
        sw.add_route(MacAddr([0x02, 0, 0, 0, 0, 0x0b]), &[2]);
        sw.handle_frame(Nanos(4), 0, &frame(0x0b, 0x0a));
        assert_eq!(queued(&sw)[2] - spread[2], 1);
        assert_eq!(sw.route_ports, [2, 3], "[2] is a run of [2, 3] too");
    }
}

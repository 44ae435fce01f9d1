//! The discrete-event engine: a queue of timed events with stable tie-breaking, switch and
//! endpoint cores as nodes, and links of given rate, propagation delay and loss between
//! their ports. Nothing reads a clock: a run is a function of its inputs and seed.

use super::queue::{EventQueue, QueueKey};
use crate::link::{Framing, Transmitter, Wire};
use crate::rand::Rng;
use crate::switch::Switch;
use crate::time::Nanos;

pub use crate::endpoint::host::Host;

/// The most idle frame buffers the engine keeps (see `Engine::recycle`).
const POOL_MAX: usize = 512;

/// Asks the CPU to start loading the cache line at `p`: a hint, nothing is read.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing the program sees, whatever the
    // address; SSE, which has it, is part of every x86-64 CPU.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A node of the simulated network.
#[derive(Debug)]
pub enum Node {
    /// A switch core; its ports are its configuration's ports, in order.
    Switch(Box<Switch>),
    /// A host (one port, number 0).
    Host(Box<Host>),
}

/// One direction of a link: the wire frames sent on a port cross, and where they arrive.
#[derive(Debug, Clone)]
pub struct LinkEnd {
    /// The node at the other end.
    pub node: usize,
    /// The port of that node the frames arrive on.
    pub port: usize,
    /// The sender's port rate, then the propagation delay. The sender's transmitter runs
    /// at the same rate, so a frame never waits for this one.
    pub wire: Wire,
    /// Probability that a frame is lost on the way.
    pub loss: f64,
}

#[derive(Debug)]
enum Kind {
    /// A frame arrives, whole, at a node's port.
    Deliver {
        node: usize,
        port: usize,
        frame: Vec<u8>,
    },
    /// A node's deadline (stale unless `generation` matches).
    Wake { node: usize, generation: u64 },
    /// Time-series sampling, every `sample_every`.
    Sample,
    /// The link on a node's port changes speed, both ways.
    LinkRate {
        node: usize,
        port: usize,
        bits_per_sec: u64,
    },
}

/// What the engine did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Frames handed from one node to another.
    pub frames_delivered: u64,
    /// Frames lost on links.
    pub frames_lost: u64,
    /// Events taken off the queue, stale timer wakes included.
    pub events: u64,
}

/// A node made no progress at one instant (a timer that does not move): a bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("node {node} made no progress at t = {time:?}")]
pub struct Stalled {
    /// Index of the node that stalled, as [`Engine::add`] returned it.
    pub node: usize,
    /// The virtual time it stalled at.
    pub time: Nanos,
}

/// The simulated network: nodes, the links between their ports, and an event queue in
/// virtual time.
#[derive(Debug)]
pub struct Engine {
    /// Every node, indexed as [`Engine::add`] returned them.
    pub nodes: Vec<Node>,
    links: Vec<Vec<Option<LinkEnd>>>,
    queue: EventQueue,
    seq: u64,
    /// The queued events' kinds, by their keys' slots; a free slot holds `Kind::Sample`.
    slab: Vec<Kind>,
    /// Slots free for the next event.
    free: Vec<u64>,
    generation: Vec<u64>,
    wake_at: Vec<Option<Nanos>>,
    now: Nanos,
    rng: Rng,
    /// Buffers of delivered frames, for hosts to send into.
    pool: Vec<Vec<u8>>,
    /// The longest frame sent so far: the pool keeps only buffers that hold it.
    largest_frame: usize,
    /// Burst losses: (node, port, first frame index, count) of frames sent on that port.
    bursts: Vec<(usize, usize, u64, u64)>,
    sent_on: Vec<Vec<u64>>,
    sample_every: Option<Nanos>,
    stats: EngineStats,
    framing: Framing,
    /// Per node: the header bits after which it takes a data frame in (cut-through), or
    /// `None` for the whole frame.
    cut_through: Vec<Option<u64>>,
}

impl Engine {
    /// An empty network; `seed` drives link losses.
    pub fn new(seed: u64) -> Engine {
        Engine {
            nodes: Vec::new(),
            links: Vec::new(),
            queue: EventQueue::default(),
            seq: 0,
            slab: Vec::new(),
            free: Vec::new(),
            generation: Vec::new(),
            wake_at: Vec::new(),
            now: Nanos::ZERO,
            rng: Rng::new(seed ^ 0x5eed_1234_abcd),
            pool: Vec::new(),
            largest_frame: 0,
            bursts: Vec::new(),
            sent_on: Vec::new(),
            sample_every: None,
            stats: EngineStats::default(),
            framing: Framing::Ethernet,
            cut_through: Vec::new(),
        }
    }

    /// Adds a node; returns its index.
    pub fn add(&mut self, mut node: Node) -> usize {
        let ports = match &mut node {
            Node::Switch(s) => s.port_count(),
            Node::Host(h) => {
                // Nothing here alters the bytes an ICRC covers, and no frame leaves the
                // simulation: release builds save the CRC of every frame sent and
                // received; debug builds (the tests) compute and check each one.
                h.endpoint.set_icrc(cfg!(debug_assertions));
                1
            }
        };
        self.nodes.push(node);
        self.links.push(vec![None; ports]);
        self.sent_on.push(vec![0; ports]);
        self.generation.push(0);
        self.wake_at.push(None);
        self.cut_through.push(None);
        self.nodes.len() - 1
    }

    /// Connects (a, port a) and (b, port b) both ways at `bits_per_sec` with `delay` and
    /// loss probability `loss`.
    pub fn connect(
        &mut self,
        a: (usize, usize),
        b: (usize, usize),
        bits_per_sec: u64,
        delay: Nanos,
        loss: f64,
    ) {
        let wire = Wire::new(Transmitter::with_framing(bits_per_sec, self.framing), delay);
        self.links[a.0][a.1] = Some(LinkEnd {
            node: b.0,
            port: b.1,
            wire: wire.clone(),
            loss,
        });
        self.links[b.0][b.1] = Some(LinkEnd {
            node: a.0,
            port: a.1,
            wire,
            loss,
        });
    }

    /// Puts frames on every link, those connected already and those to come, as
    /// `framing` does (Ethernet unless set).
    pub fn set_framing(&mut self, framing: Framing) {
        self.framing = framing;
        for link in self.links.iter_mut().flatten().flatten() {
            let tx = Transmitter::with_framing(link.wire.bits_per_sec(), framing);
            link.wire = Wire::new(tx, link.wire.propagation());
        }
    }

    /// Hands node `node` data frames once their first `header_bits` have arrived rather
    /// than whole (a cut-through switch); `None` for whole frames. Link-level frames
    /// (flow-control and MAC control) always arrive whole.
    pub fn set_cut_through(&mut self, node: usize, header_bits: Option<u64>) {
        if let Some(c) = self.cut_through.get_mut(node) {
            *c = header_bits;
        }
    }

    /// Loses `count` frames sent on (node, port) from its `first`-th frame (0-based) on.
    pub fn add_burst_loss(&mut self, node: usize, port: usize, first: u64, count: u64) {
        self.bursts.push((node, port, first, count));
    }

    /// Changes the speed of the link on (node, port), both ways, at `at`: each end's
    /// wire, and the transmitter of an end that is a switch port (a link renegotiating to
    /// a lower speed, as a degraded optic or a lane down does). Frames on the wire finish
    /// at the old rate. A host's NIC keeps its rate: give links between switches.
    pub fn schedule_link_rate(&mut self, at: Nanos, node: usize, port: usize, bits_per_sec: u64) {
        self.push(
            at.max(self.now),
            Kind::LinkRate {
                node,
                port,
                bits_per_sec,
            },
        );
    }

    /// The link on (node, port) runs at `bits_per_sec` from now on; see
    /// [`schedule_link_rate`](Self::schedule_link_rate).
    fn set_link_rate(&mut self, node: usize, port: usize, bits_per_sec: u64) {
        let Some(peer) = self.links[node][port].as_mut().map(|l| {
            l.wire.set_rate(bits_per_sec);
            (l.node, l.port)
        }) else {
            return;
        };
        if let Some(back) = self.links[peer.0][peer.1].as_mut() {
            back.wire.set_rate(bits_per_sec);
        }
        for (n, p) in [(node, port), peer] {
            if let Node::Switch(s) = &mut self.nodes[n] {
                s.set_port_rate(p, bits_per_sec);
            }
            self.service(n);
        }
    }

    /// Asks for a [`Sampled`](Step::Sampled) step every `every` from now on. Called again,
    /// it changes the interval from the next sample on.
    pub fn sample_every(&mut self, every: Nanos) {
        if self.sample_every.replace(every).is_none() {
            self.push(self.now + every, Kind::Sample);
        }
    }

    /// The virtual time of the last event processed (or the `until` a run stopped at).
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// What the engine did so far.
    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// Inlined, so that the event is built in its slot rather than built by the caller
    /// and copied (wide loads of narrow stores just made: a store-forwarding stall).
    #[inline(always)]
    fn push(&mut self, time: Nanos, kind: Kind) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slab[slot as usize] = kind;
                slot
            }
            None => {
                self.slab.push(kind);
                (self.slab.len() - 1) as u64
            }
        };
        self.queue.push(QueueKey {
            time: time.0,
            seq: self.seq,
            slot,
        });
    }

    /// Starts every host's application at the current time and schedules every node.
    pub fn start(&mut self) {
        let now = self.now;
        for n in 0..self.nodes.len() {
            if let Node::Host(h) = &mut self.nodes[n] {
                h.start(now);
            }
            self.service(n);
        }
    }

    /// Runs events up to and including `until`, or until no event is left. Returns at
    /// each sample time with `Step::Sampled`, so the caller can read the nodes.
    pub fn run(&mut self, until: Nanos) -> Result<Step, Stalled> {
        let mut same_instant = 0u32;
        while let Some(&key) = self.queue.peek() {
            let time = Nanos(key.time);
            if time > until {
                self.now = until;
                return Ok(Step::Until);
            }
            self.queue.pop();
            // The next event is most often a frame arriving, its headers written long ago
            // (a link's delay holds thousands of other frames): start loading them while
            // this event runs.
            if let Some(next) = self.queue.peek()
                && let Kind::Deliver { frame, .. } = &self.slab[next.slot as usize]
            {
                prefetch(frame.as_ptr());
            }
            let kind = std::mem::replace(&mut self.slab[key.slot as usize], Kind::Sample);
            self.free.push(key.slot);
            same_instant = if time == self.now {
                same_instant + 1
            } else {
                0
            };
            self.now = time;
            self.stats.events += 1;
            match kind {
                Kind::Deliver { node, port, frame } => {
                    self.stats.frames_delivered += 1;
                    match &mut self.nodes[node] {
                        // The switch keeps the buffer and hands it out again when the
                        // frame leaves: no copy per hop.
                        Node::Switch(s) => {
                            s.handle_owned_frame(self.now, port, frame);
                        }
                        Node::Host(h) => {
                            h.handle_frame(self.now, &frame);
                            self.recycle(frame);
                        }
                    }
                    self.service(node);
                }
                Kind::Wake { node, generation } => {
                    if generation != self.generation[node] {
                        continue;
                    }
                    self.wake_at[node] = None;
                    let now = self.now;
                    match &mut self.nodes[node] {
                        Node::Switch(s) => s.handle_timeout(now),
                        Node::Host(h) => h.handle_timeout(now),
                    }
                    self.service(node);
                    if same_instant > 1_000_000 {
                        return Err(Stalled {
                            node,
                            time: self.now,
                        });
                    }
                }
                Kind::LinkRate {
                    node,
                    port,
                    bits_per_sec,
                } => self.set_link_rate(node, port, bits_per_sec),
                Kind::Sample => {
                    if let Some(every) = self.sample_every {
                        self.push(self.now + every, Kind::Sample);
                    }
                    return Ok(Step::Sampled);
                }
            }
        }
        Ok(Step::Idle)
    }

    /// Keeps a delivered frame's buffer for a host to send into. Its bytes stay: the host
    /// overwrites them ([`Endpoint::poll_transmit_into`]), and a buffer of the right
    /// length already needs no zeroing.
    ///
    /// A buffer too small for the longest frame sent so far (an ACK's, a CNP's) is freed
    /// instead: a host handed it would grow it for its next data frame, an allocation on
    /// a fifth of the frames of a 64:1 incast. Once every buffer in circulation is large
    /// enough, none is freed.
    ///
    /// The pool holds at most [`POOL_MAX`] buffers: enough for the frames a burst of
    /// deliveries frees before the hosts send again, while what is idle stays a few MB.
    fn recycle(&mut self, frame: Vec<u8>) {
        if self.pool.len() < POOL_MAX && frame.capacity() >= self.largest_frame {
            self.pool.push(frame);
        }
    }

    /// After a node changed: its application reacts to completions, it sends what it can
    /// now, and its next deadline is scheduled.
    fn service(&mut self, n: usize) {
        let now = self.now;
        if let Node::Host(h) = &mut self.nodes[n] {
            h.poll(now);
        }
        loop {
            let out = match &mut self.nodes[n] {
                Node::Switch(s) => s.poll_transmit_owned(now),
                Node::Host(h) => {
                    // The frame is built in the buffer handed over: no copy.
                    let mut buf = self.pool.pop().unwrap_or_default();
                    if h.poll_transmit_into(now, &mut buf) {
                        Some((0, buf))
                    } else {
                        self.pool.push(buf);
                        None
                    }
                }
            };
            let Some((port, buf)) = out else { break };
            self.send(n, port, buf);
        }
        let next = match &self.nodes[n] {
            Node::Switch(s) => s.poll_timeout(),
            Node::Host(h) => h.poll_timeout(),
        };
        if next != self.wake_at[n] {
            self.generation[n] += 1;
            self.wake_at[n] = next;
            if let Some(t) = next {
                let generation = self.generation[n];
                self.push(
                    t.max(now),
                    Kind::Wake {
                        node: n,
                        generation,
                    },
                );
            }
        }
    }

    fn send(&mut self, node: usize, port: usize, frame: Vec<u8>) {
        self.largest_frame = self.largest_frame.max(frame.len());
        let index = self.sent_on[node][port];
        self.sent_on[node][port] += 1;
        let Some(link) = self.links[node][port].as_mut() else {
            self.recycle(frame);
            return;
        };
        // A frame lost on the way took its time on the wire all the same.
        let trip = link.wire.carry(self.now, &frame);
        let burst = self.bursts.iter().any(|&(n, p, first, count)| {
            n == node && p == port && index >= first && index < first + count
        });
        let random = link.loss > 0.0 && self.rng.next_f64() < link.loss;
        if burst || random {
            self.stats.frames_lost += 1;
            self.recycle(frame);
            return;
        }
        let arrives = match self.cut_through[link.node] {
            // Link-level frames (to 01:80:C2:00:00:0x) are the link's, not the forwarding
            // pipeline's: whole.
            Some(bits) if frame.get(..5) != Some(&[0x01, 0x80, 0xc2, 0x00, 0x00][..]) => {
                link.wire.head_landed(&trip, bits)
            }
            _ => trip.landed,
        };
        let (to, to_port) = (link.node, link.port);
        self.push(
            arrives,
            Kind::Deliver {
                node: to,
                port: to_port,
                frame,
            },
        );
    }

    /// A host, by node index.
    pub fn host(&self, n: usize) -> Option<&Host> {
        match &self.nodes[n] {
            Node::Host(h) => Some(h),
            Node::Switch(_) => None,
        }
    }

    /// A switch, by node index.
    pub fn switch(&self, n: usize) -> Option<&Switch> {
        match &self.nodes[n] {
            Node::Switch(s) => Some(s),
            Node::Host(_) => None,
        }
    }

    /// True when every host's application is done.
    pub fn apps_done(&self) -> bool {
        self.nodes.iter().all(|n| match n {
            Node::Host(h) => h.done(),
            Node::Switch(_) => true,
        })
    }
}

/// Why [`Engine::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The time limit was reached.
    Until,
    /// A sample is due: read the nodes, then call `run` again.
    Sampled,
    /// No event is left.
    Idle,
}

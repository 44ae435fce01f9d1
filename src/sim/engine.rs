//! The discrete-event engine: switch and endpoint cores as nodes, links of given rate,
//! propagation delay and loss between their ports, and queues of timed events. Nothing
//! reads a clock: a run is a function of its inputs and seed.
//!
//! # Order, and running on several threads
//!
//! Nodes meet only through frames, and a frame takes at least its link's propagation delay
//! to arrive. So what a node does depends on the order of its own events alone, and that
//! order is fixed without a global sequence: by time, then by the node that caused the
//! event (the sender of a frame, the node itself for its timer), then by that node's own
//! count of the events it caused. Two events at one node never tie; events at different
//! nodes at one instant touch nothing in common (each node draws its link losses from
//! its own generator).
//!
//! That lets [`Engine::set_threads`] split the nodes into shards, each with its own event
//! queue, run on threads in windows of the shortest propagation delay between two shards
//! (the lookahead of a conservative parallel simulation, Chandy and Misra's): within a
//! window no frame from another shard can arrive, and the frames a shard sends to another
//! are handed over at the window's end. Every node sees the same events in the same order
//! on one thread or many, so a run's output is the same byte for byte.
//!
//! Sampling and link-rate changes are the engine's own events: they run between windows,
//! with every node still, after every node event before their instant and before any at
//! it.

use super::queue::EventQueue;
use crate::hint::prefetch;
use crate::link::{Framing, Transmitter, Wire};
use crate::rand::Rng;
use crate::switch::Switch;
use crate::time::Nanos;
use crate::wire::elide::Elided;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

pub use crate::endpoint::host::Host;

/// The most idle frame buffers a shard keeps (see `Shard::recycle`).
const POOL_MAX: usize = 512;

/// The least capacity of a buffer the pool keeps, and that of one it makes: a short frame
/// fits whatever its headers (a tag, IPv6, a RETH and an immediate), and so do ACKs, CNPs
/// and PFC frames. A buffer grown for a whole frame stays grown.
const BUFFER_CAPACITY: usize = {
    use crate::wire::{bth, elide, ethernet, icrc, ipv6, udp, xth};
    (ethernet::HEADER_LEN
        + ethernet::VLAN_TAG_LEN
        + ipv6::HEADER_LEN
        + udp::HEADER_LEN
        + bth::HEADER_LEN
        + xth::RETH_LEN
        + xth::IMMDT_LEN
        + elide::KEPT
        + icrc::ICRC_LEN)
        .next_power_of_two()
};

/// Bits of an event's tie-break that count the events its node caused; the node's index
/// is above them. 2^40 events per node, 2^24 nodes.
const CAUSE_BITS: u32 = 40;

/// Most threads `set_threads` takes.
pub const MAX_THREADS: usize = 64;

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

/// A node's event. `node` is the node's place in its shard.
#[derive(Debug, Default)]
enum Kind {
    /// A frame arrives, whole, at a node's port.
    Deliver {
        node: u32,
        port: u32,
        frame: Vec<u8>,
        elided: Elided,
    },
    /// A node's deadline (stale unless `generation` matches).
    Wake { node: u32, generation: u64 },
    /// None: what a queue's free entry holds.
    #[default]
    Vacant,
}

// A calendar entry (a time, a tie-break and a link, 20 bytes, then the event) is one cache
// line: an event of more than 40 bytes would make it two.
const _: () = assert!(std::mem::size_of::<Kind>() <= 40);

/// The engine's own events, run between windows with every node still.
#[derive(Debug)]
enum Global {
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
    /// Events taken off the queues, stale timer wakes included.
    pub events: u64,
}

impl EngineStats {
    fn add(mut self, other: EngineStats) -> EngineStats {
        self.frames_delivered += other.frames_delivered;
        self.frames_lost += other.frames_lost;
        self.events += other.events;
        self
    }
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

/// A node and what the engine keeps for it; it lives in one shard.
#[derive(Debug)]
struct Site {
    node: Node,
    /// The node's index, as [`Engine::add`] returned it.
    index: usize,
    /// Where the frames sent on each port go.
    links: Vec<Option<LinkEnd>>,
    /// Frames sent on each port (burst losses count them).
    sent_on: Vec<u64>,
    generation: u64,
    wake_at: Option<Nanos>,
    /// Events this node caused so far: the last part of their tie-break.
    caused: u64,
    /// Link-loss draws of the frames it sends.
    rng: Rng,
}

impl Site {
    /// The tie-break of the next event this node causes.
    #[inline(always)]
    fn cause(&mut self) -> u64 {
        self.caused += 1;
        ((self.index as u64) << CAUSE_BITS) | self.caused
    }
}

/// Where a node lives: its shard, and its place there.
#[derive(Debug, Clone, Copy)]
struct Place {
    shard: u32,
    local: u32,
}

/// A frame for a node of another shard, handed over at the end of a window.
#[derive(Debug)]
struct Parcel {
    time: u64,
    seq: u64,
    node: u32,
    port: u32,
    frame: Vec<u8>,
    elided: Elided,
}

/// What every shard reads and none changes while they run: where each node lives, which
/// take frames in cut-through, and the burst losses.
#[derive(Debug, Default)]
struct Wiring {
    place: Vec<Place>,
    /// Per node: the header bits after which it takes a data frame in (cut-through), or
    /// `None` for the whole frame.
    cut_through: Vec<Option<u64>>,
    /// Burst losses: (node, port, first frame index, count) of frames sent on that port.
    bursts: Vec<(usize, usize, u64, u64)>,
}

/// Some of the nodes, with their event queue: what one thread runs.
#[derive(Debug, Default)]
struct Shard {
    id: u32,
    sites: Vec<Site>,
    queue: EventQueue<Kind>,
    now: Nanos,
    /// Events in a row at one instant (a stalled node makes millions).
    same_instant: u32,
    /// Buffers of delivered frames, for hosts to send into.
    pool: Vec<Vec<u8>>,
    stats: EngineStats,
    /// Frames for other shards' nodes, by shard.
    outbox: Vec<Vec<Parcel>>,
}

/// The simulated network: nodes, the links between their ports, and events in virtual
/// time, on one thread or several ([`Engine::set_threads`]).
#[derive(Debug)]
pub struct Engine {
    /// The nodes, in shards; one shard unless `set_threads` made more.
    shards: Vec<Shard>,
    wiring: Wiring,
    /// The engine's own events, by (time, order of scheduling).
    globals: BTreeMap<(u64, u64), Global>,
    scheduled: u64,
    now: Nanos,
    seed: u64,
    sample_every: Option<Nanos>,
    framing: Framing,
    /// The shortest propagation delay of a link between two shards, ns.
    lookahead: u64,
    /// Why fewer threads run than were asked for, if so.
    fewer_threads: Option<String>,
    /// Whether hosts send data nobody reads as short frames ([`Engine::set_elide`]).
    elide: bool,
}

impl Engine {
    /// An empty network; `seed` drives link losses.
    pub fn new(seed: u64) -> Engine {
        Engine {
            shards: vec![Shard::new(0, 1, Nanos::ZERO)],
            wiring: Wiring::default(),
            globals: BTreeMap::new(),
            scheduled: 0,
            now: Nanos::ZERO,
            seed: seed ^ 0x5eed_1234_abcd,
            sample_every: None,
            framing: Framing::Ethernet,
            lookahead: u64::MAX,
            fewer_threads: None,
            elide: true,
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
                h.endpoint.set_elide(self.elide);
                1
            }
        };
        let index = self.wiring.place.len();
        assert!(index < 1 << (64 - CAUSE_BITS), "more than 2^24 nodes");
        let shard = &mut self.shards[0];
        self.wiring.place.push(Place {
            shard: 0,
            local: shard.sites.len() as u32,
        });
        self.wiring.cut_through.push(None);
        shard.sites.push(Site {
            node,
            index,
            links: vec![None; ports],
            sent_on: vec![0; ports],
            generation: 0,
            wake_at: None,
            caused: 0,
            rng: Rng::new(self.seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        });
        index
    }

    fn site(&self, n: usize) -> &Site {
        let p = self.wiring.place[n];
        &self.shards[p.shard as usize].sites[p.local as usize]
    }

    fn site_mut(&mut self, n: usize) -> &mut Site {
        let p = self.wiring.place[n];
        &mut self.shards[p.shard as usize].sites[p.local as usize]
    }

    /// Node `n`, as [`Engine::add`] returned it.
    pub fn node(&self, n: usize) -> &Node {
        &self.site(n).node
    }

    /// Node `n`, to change.
    pub fn node_mut(&mut self, n: usize) -> &mut Node {
        &mut self.site_mut(n).node
    }

    /// How many nodes there are.
    pub fn node_count(&self) -> usize {
        self.wiring.place.len()
    }

    /// Every node, in the order they were added.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        (0..self.node_count()).map(|n| self.node(n))
    }

    /// Every node, taken out, in the order they were added.
    pub fn into_nodes(self) -> Vec<Node> {
        let mut nodes: Vec<Option<Node>> = (0..self.wiring.place.len()).map(|_| None).collect();
        for site in self.shards.into_iter().flat_map(|s| s.sites) {
            nodes[site.index] = Some(site.node);
        }
        nodes.into_iter().flatten().collect()
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
        self.site_mut(a.0).links[a.1] = Some(LinkEnd {
            node: b.0,
            port: b.1,
            wire: wire.clone(),
            loss,
        });
        self.site_mut(b.0).links[b.1] = Some(LinkEnd {
            node: a.0,
            port: a.1,
            wire,
            loss,
        });
        if self.wiring.place[a.0].shard != self.wiring.place[b.0].shard {
            self.lookahead = self.lookahead.min(delay.0);
        }
    }

    fn sites_mut(&mut self) -> impl Iterator<Item = &mut Site> {
        self.shards.iter_mut().flat_map(|s| s.sites.iter_mut())
    }

    /// Whether hosts, those added already and those to come, send data nobody reads (a
    /// flow's) as short frames that carry its length rather than its bytes
    /// ([`Endpoint::set_elide`]); on unless set. Nothing outside the simulation sees a
    /// frame, and every core here counts a short frame at its length on the wire, so the
    /// output is the same either way; short frames only save the copies of the bytes and
    /// the memory that held them.
    ///
    /// [`Endpoint::set_elide`]: crate::endpoint::Endpoint::set_elide
    pub fn set_elide(&mut self, elide: bool) {
        self.elide = elide;
        for site in self.sites_mut() {
            if let Node::Host(h) = &mut site.node {
                h.endpoint.set_elide(elide);
            }
        }
    }

    /// Puts frames on every link, those connected already and those to come, as
    /// `framing` does (Ethernet unless set).
    pub fn set_framing(&mut self, framing: Framing) {
        self.framing = framing;
        for link in self.sites_mut().flat_map(|s| s.links.iter_mut()).flatten() {
            let tx = Transmitter::with_framing(link.wire.bits_per_sec(), framing);
            link.wire = Wire::new(tx, link.wire.propagation());
        }
    }

    /// Hands node `node` data frames once their first `header_bits` have arrived rather
    /// than whole (a cut-through switch); `None` for whole frames. Link-level frames
    /// (flow-control and MAC control) always arrive whole.
    pub fn set_cut_through(&mut self, node: usize, header_bits: Option<u64>) {
        if let Some(c) = self.wiring.cut_through.get_mut(node) {
            *c = header_bits;
        }
    }

    /// Loses `count` frames sent on (node, port) from its `first`-th frame (0-based) on.
    pub fn add_burst_loss(&mut self, node: usize, port: usize, first: u64, count: u64) {
        self.wiring.bursts.push((node, port, first, count));
    }

    /// Runs the nodes on up to `threads` threads from now on, each a shard of the
    /// network: every switch with hosts with its hosts, in blocks of about as many hosts
    /// each, and the switches without hosts (spines, cores) dealt out in turn. The output
    /// stays the same byte for byte (see the module documentation). Returns the threads
    /// that will run; [`Engine::fewer_threads`] says why, when fewer than asked.
    ///
    /// Call it once every node and link is in place and before [`Engine::start`].
    pub fn set_threads(&mut self, threads: usize) -> usize {
        assert!(
            self.shards.iter().all(|s| s.queue.peek().is_none()),
            "set_threads before the run starts"
        );
        let threads = threads.clamp(1, MAX_THREADS);
        let shard_of = self.partition(threads);
        let count = shard_of.iter().copied().max().map_or(1, |m| m as usize + 1);
        let lookahead = self.lookahead_between(&shard_of);
        let (count, shard_of) = if count > 1 && lookahead == 0 {
            self.fewer_threads = Some(
                "links between the shards have no propagation delay, so no shard could run \
                 ahead of another"
                    .to_owned(),
            );
            (1, vec![0; shard_of.len()])
        } else {
            self.fewer_threads = (count < threads).then(|| {
                let switches = shard_of.len()
                    - (0..shard_of.len())
                        .filter(|&n| matches!(self.node(n), Node::Host(_)))
                        .count();
                format!(
                    "a switch runs on one thread with its hosts, and this network of \
                     {switches} switch{} splits into {count} part{}",
                    if switches == 1 { "" } else { "es" },
                    if count == 1 { "" } else { "s" },
                )
            });
            (count, shard_of)
        };
        let mut sites: Vec<Site> = std::mem::take(&mut self.shards)
            .into_iter()
            .flat_map(|s| s.sites)
            .collect();
        sites.sort_by_key(|s| s.index);
        self.shards = (0..count)
            .map(|id| Shard::new(id, count, self.now))
            .collect();
        for site in sites {
            let shard = &mut self.shards[shard_of[site.index] as usize];
            self.wiring.place[site.index] = Place {
                shard: shard.id,
                local: shard.sites.len() as u32,
            };
            shard.sites.push(site);
        }
        self.lookahead = if count > 1 { lookahead } else { u64::MAX };
        count
    }

    /// Threads the run uses.
    pub fn threads(&self) -> usize {
        self.shards.len()
    }

    /// Why [`Engine::set_threads`] gave fewer threads than asked for, if it did.
    pub fn fewer_threads(&self) -> Option<&str> {
        self.fewer_threads.as_deref()
    }

    /// The shard of each node for `threads` shards (numbered from 0 without gaps).
    fn partition(&self, threads: usize) -> Vec<u32> {
        let count = self.node_count();
        // The switch each host hangs off.
        let attached: Vec<Option<usize>> = (0..count)
            .map(|n| {
                let site = self.site(n);
                match site.node {
                    Node::Host(_) => site.links.first()?.as_ref().map(|l| l.node),
                    Node::Switch(_) => None,
                }
            })
            .collect();
        let mut hosts_of = vec![0usize; count];
        for &s in attached.iter().flatten() {
            hosts_of[s] += 1;
        }
        let total: usize = hosts_of.iter().sum();
        let mut shard_of = vec![0u32; count];
        let (mut before, mut spare) = (0usize, 0usize);
        for n in 0..count {
            if !matches!(self.node(n), Node::Switch(_)) {
                continue;
            }
            if hosts_of[n] > 0 {
                // The middle of its block of hosts decides: blocks of about total/threads.
                shard_of[n] = ((2 * before + hosts_of[n]) * threads / (2 * total)) as u32;
                before += hosts_of[n];
            } else {
                shard_of[n] = (spare % threads) as u32;
                spare += 1;
            }
        }
        for (n, s) in attached.iter().enumerate() {
            if let Some(s) = s {
                shard_of[n] = shard_of[*s];
            }
        }
        // Without gaps: a shard no node landed in is dropped.
        let mut used: Vec<u32> = shard_of.clone();
        used.sort_unstable();
        used.dedup();
        for s in &mut shard_of {
            *s = used.binary_search(s).unwrap_or(0) as u32;
        }
        shard_of
    }

    /// The shortest propagation delay of a link between two shards, ns.
    fn lookahead_between(&self, shard_of: &[u32]) -> u64 {
        (0..self.node_count())
            .flat_map(|n| {
                self.site(n)
                    .links
                    .iter()
                    .flatten()
                    .filter(move |l| shard_of[l.node] != shard_of[n])
                    .map(|l| l.wire.propagation().0)
            })
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Changes the speed of the link on (node, port), both ways, at `at`: each end's
    /// wire, and the transmitter of an end that is a switch port (a link renegotiating to
    /// a lower speed, as a degraded optic or a lane down does). Frames on the wire finish
    /// at the old rate. A host's NIC keeps its rate: give links between switches.
    pub fn schedule_link_rate(&mut self, at: Nanos, node: usize, port: usize, bits_per_sec: u64) {
        self.schedule(
            at.max(self.now),
            Global::LinkRate {
                node,
                port,
                bits_per_sec,
            },
        );
    }

    fn schedule(&mut self, at: Nanos, event: Global) {
        self.scheduled += 1;
        self.globals.insert((at.0, self.scheduled), event);
    }

    /// The link on (node, port) runs at `bits_per_sec` from now on; see
    /// [`schedule_link_rate`](Self::schedule_link_rate).
    fn set_link_rate(&mut self, node: usize, port: usize, bits_per_sec: u64) {
        let Some(peer) = self.site_mut(node).links[port].as_mut().map(|l| {
            l.wire.set_rate(bits_per_sec);
            (l.node, l.port)
        }) else {
            return;
        };
        if let Some(back) = self.site_mut(peer.0).links[peer.1].as_mut() {
            back.wire.set_rate(bits_per_sec);
        }
        for (n, p) in [(node, port), peer] {
            if let Node::Switch(s) = self.node_mut(n) {
                s.set_port_rate(p, bits_per_sec);
            }
            self.service(n);
        }
    }

    /// Asks for a [`Sampled`](Step::Sampled) step every `every` from now on. Called again,
    /// it changes the interval from the next sample on.
    pub fn sample_every(&mut self, every: Nanos) {
        if self.sample_every.replace(every).is_none() {
            self.schedule(self.now + every, Global::Sample);
        }
    }

    /// The virtual time of the last event processed (or the `until` a run stopped at).
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// What the engine did so far.
    pub fn stats(&self) -> EngineStats {
        self.shards
            .iter()
            .fold(EngineStats::default(), |sum, s| sum.add(s.stats))
    }

    /// Starts every host's application at the current time and schedules every node.
    pub fn start(&mut self) {
        let now = self.now;
        for n in 0..self.node_count() {
            if let Node::Host(h) = self.node_mut(n) {
                h.start(now);
            }
            self.service(n);
        }
    }

    /// Services node `n` between windows, and hands what it sent to other shards over.
    fn service(&mut self, n: usize) {
        let p = self.wiring.place[n];
        let shard = &mut self.shards[p.shard as usize];
        shard.now = self.now;
        shard.service(p.local as usize, &self.wiring);
        self.hand_over();
    }

    /// Moves every frame in an outbox to its shard's queue.
    fn hand_over(&mut self) {
        for from in 0..self.shards.len() {
            for to in 0..self.shards.len() {
                let parcels = std::mem::take(&mut self.shards[from].outbox[to]);
                for p in parcels {
                    self.shards[to].take(p);
                }
            }
        }
    }

    /// Runs events up to and including `until`, or until no event is left. Returns at
    /// each sample time with `Step::Sampled`, so the caller can read the nodes.
    pub fn run(&mut self, until: Nanos) -> Result<Step, Stalled> {
        loop {
            let due = self
                .globals
                .first_key_value()
                .map(|(&(t, _), _)| t)
                .filter(|&t| t <= until.0);
            // Node events before the engine's next event, or up to `until`.
            self.run_shards(due.unwrap_or(until.0.saturating_add(1)))?;
            if let Some(t) = due {
                let (_, event) = self.globals.pop_first().expect("peeked");
                self.now = Nanos(t);
                match event {
                    Global::Sample => {
                        if let Some(every) = self.sample_every {
                            self.schedule(self.now + every, Global::Sample);
                        }
                        return Ok(Step::Sampled);
                    }
                    Global::LinkRate {
                        node,
                        port,
                        bits_per_sec,
                    } => self.set_link_rate(node, port, bits_per_sec),
                }
                continue;
            }
            if !self.globals.is_empty() || self.shards.iter().any(|s| s.queue.peek().is_some()) {
                self.now = until;
                return Ok(Step::Until);
            }
            self.now = self.shards.iter().map(|s| s.now).fold(self.now, Nanos::max);
            return Ok(Step::Idle);
        }
    }

    /// Runs every node event before `end` (ns), on a thread per shard.
    fn run_shards(&mut self, end: u64) -> Result<(), Stalled> {
        let wiring = &self.wiring;
        if let [shard] = self.shards.as_mut_slice() {
            return shard.run_to(end, wiring);
        }
        if self.shards.iter().all(|s| s.next_time() >= end) {
            // Nothing to run before the engine's next event (a sample step that no frame
            // or timer precedes): no threads to start.
            return Ok(());
        }
        let board = Board::new(self.shards.len());
        let lookahead = self.lookahead;
        std::thread::scope(|scope| {
            let (first, rest) = self.shards.split_first_mut().expect("one shard or more");
            let workers: Vec<_> = rest
                .iter_mut()
                .map(|shard| {
                    let board = &board;
                    scope.spawn(move || shard.run_windows(end, lookahead, wiring, board))
                })
                .collect();
            let mut outcome = first.run_windows(end, lookahead, wiring, &board);
            for worker in workers {
                let theirs = match worker.join() {
                    Ok(outcome) => outcome,
                    Err(panic) => Err(Failure::Panicked(panic)),
                };
                if outcome.is_ok() {
                    outcome = theirs;
                }
            }
            match outcome {
                Ok(()) => Ok(()),
                Err(Failure::Stalled(s)) => Err(s),
                Err(Failure::Panicked(panic)) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// A host, by node index.
    pub fn host(&self, n: usize) -> Option<&Host> {
        match self.node(n) {
            Node::Host(h) => Some(h),
            Node::Switch(_) => None,
        }
    }

    /// A switch, by node index.
    pub fn switch(&self, n: usize) -> Option<&Switch> {
        match self.node(n) {
            Node::Switch(s) => Some(s),
            Node::Host(_) => None,
        }
    }

    /// True when every host's application is done.
    pub fn apps_done(&self) -> bool {
        self.shards
            .iter()
            .flat_map(|s| &s.sites)
            .all(|site| match &site.node {
                Node::Host(h) => h.done(),
                Node::Switch(_) => true,
            })
    }
}

/// Why a shard's thread stopped early.
enum Failure {
    Stalled(Stalled),
    Panicked(Box<dyn std::any::Any + Send>),
}

/// Where the shards' threads meet between windows.
struct Board {
    /// Per shard, the time of the earliest event it holds or sent to another, or
    /// `u64::MAX`; two sets, for the window that ends and the one after it, so that a
    /// fast thread's next report never overwrites one a slow thread still reads.
    next: [Vec<AtomicU64>; 2],
    /// Set when a shard failed; two, as `next`.
    failed: [AtomicBool; 2],
    /// Frames for each shard from the others.
    inbox: Vec<Mutex<Vec<Parcel>>>,
    barrier: SpinBarrier,
}

/// A barrier that spins before it yields: the shards meet every window (a few hundred
/// microseconds of work each), and a futex sleep and wake-up, as `std::sync::Barrier`
/// does, costs a good part of that again on each side.
struct SpinBarrier {
    parties: usize,
    arrived: AtomicUsize,
    /// Counts the times everyone arrived.
    round: AtomicUsize,
}

impl SpinBarrier {
    fn new(parties: usize) -> SpinBarrier {
        SpinBarrier {
            parties,
            arrived: AtomicUsize::new(0),
            round: AtomicUsize::new(0),
        }
    }

    /// Returns once every party has called it. What a party wrote before it arrived, any
    /// party reads after it returns: the last to arrive acquires every earlier arrival
    /// (one chain of read-modify-writes) and releases the round the others acquire.
    fn wait(&self) {
        let round = self.round.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.round.store(round + 1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.round.load(Ordering::Acquire) == round {
            if spins < 20_000 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                // Another thread holds this core, or the others are far behind.
                std::thread::yield_now();
            }
        }
    }
}

impl Board {
    fn new(shards: usize) -> Board {
        let times = || (0..shards).map(|_| AtomicU64::new(u64::MAX)).collect();
        Board {
            next: [times(), times()],
            failed: [AtomicBool::new(false), AtomicBool::new(false)],
            inbox: (0..shards).map(|_| Mutex::new(Vec::new())).collect(),
            barrier: SpinBarrier::new(shards),
        }
    }

    fn inbox(&self, shard: usize) -> std::sync::MutexGuard<'_, Vec<Parcel>> {
        // A thread that panicked holding it left whole parcels: go on with them.
        self.inbox[shard]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Shard {
    /// Shard `id` of `count`, empty, at `now`.
    fn new(id: usize, count: usize, now: Nanos) -> Shard {
        Shard {
            id: id as u32,
            outbox: (0..count).map(|_| Vec::new()).collect(),
            now,
            ..Shard::default()
        }
    }

    /// The time of its earliest event.
    fn next_time(&self) -> u64 {
        self.queue.peek().map_or(u64::MAX, |(time, _)| time)
    }

    /// Queues an event at `time` with tie-break `seq`.
    #[inline(always)]
    fn push(&mut self, time: u64, seq: u64, kind: Kind) {
        self.queue.push(time, seq, kind);
    }

    /// Queues a frame another shard sent.
    fn take(&mut self, p: Parcel) {
        self.push(
            p.time,
            p.seq,
            Kind::Deliver {
                node: p.node,
                port: p.port,
                frame: p.frame,
                elided: p.elided,
            },
        );
    }

    /// Runs windows of `lookahead` with the other shards until none holds an event
    /// before `end`: see the module documentation.
    fn run_windows(
        &mut self,
        end: u64,
        lookahead: u64,
        wiring: &Wiring,
        board: &Board,
    ) -> Result<(), Failure> {
        let me = self.id as usize;
        let mut outcome = Ok(());
        board.next[0][me].store(self.next_time(), Ordering::Relaxed);
        board.barrier.wait();
        let mut round = 0;
        loop {
            let earliest = board.next[round]
                .iter()
                .map(|t| t.load(Ordering::Relaxed))
                .min()
                .unwrap_or(u64::MAX);
            if board.failed[round].load(Ordering::Relaxed) || earliest >= end {
                break;
            }
            let stop = earliest.saturating_add(lookahead).min(end);
            for p in board.inbox(me).drain(..) {
                self.take(p);
            }
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.run_to(stop, wiring)
            }));
            let failed = match ran {
                Ok(Ok(())) => false,
                Ok(Err(stalled)) => {
                    outcome = Err(Failure::Stalled(stalled));
                    true
                }
                Err(panic) => {
                    outcome = Err(Failure::Panicked(panic));
                    true
                }
            };
            let mut next = self.next_time();
            for (to, parcels) in self.outbox.iter_mut().enumerate() {
                if let Some(first) = parcels.iter().map(|p| p.time).min() {
                    next = next.min(first);
                    board.inbox(to).append(parcels);
                }
            }
            round ^= 1;
            board.next[round][me].store(next, Ordering::Relaxed);
            if failed {
                board.failed[round].store(true, Ordering::Relaxed);
            }
            board.barrier.wait();
        }
        for p in board.inbox(me).drain(..) {
            self.take(p);
        }
        outcome
    }

    /// Runs its events before `end` (ns).
    fn run_to(&mut self, end: u64, wiring: &Wiring) -> Result<(), Stalled> {
        while let Some((time, kind)) = self.queue.pop_before(end) {
            // The next event is most often a frame arriving, its headers written long ago
            // (a link's delay holds thousands of other frames): start loading them while
            // this event runs.
            if let Some((_, Kind::Deliver { frame, .. })) = self.queue.peek() {
                prefetch(frame.as_ptr());
            }
            let time = Nanos(time);
            self.same_instant = if time == self.now {
                self.same_instant + 1
            } else {
                0
            };
            self.now = time;
            self.stats.events += 1;
            match kind {
                Kind::Deliver {
                    node,
                    port,
                    frame,
                    elided,
                } => {
                    self.stats.frames_delivered += 1;
                    let now = self.now;
                    match &mut self.sites[node as usize].node {
                        // The switch keeps the buffer and hands it out again when the
                        // frame leaves: no copy per hop.
                        Node::Switch(s) => {
                            s.handle_elided_frame(now, port as usize, frame, elided);
                        }
                        Node::Host(h) => {
                            h.handle_elided_frame(now, &frame, elided);
                            self.recycle(frame);
                        }
                    }
                    self.service(node as usize, wiring);
                }
                Kind::Wake { node, generation } => {
                    let now = self.now;
                    let site = &mut self.sites[node as usize];
                    if generation != site.generation {
                        continue;
                    }
                    site.wake_at = None;
                    match &mut site.node {
                        Node::Switch(s) => s.handle_timeout(now),
                        Node::Host(h) => h.handle_timeout(now),
                    }
                    self.service(node as usize, wiring);
                    if self.same_instant > 1_000_000 {
                        return Err(Stalled {
                            node: self.sites[node as usize].index,
                            time: self.now,
                        });
                    }
                }
                Kind::Vacant => unreachable!("a queued event is never Vacant"),
            }
        }
        Ok(())
    }

    /// Keeps a delivered frame's buffer for a host to send into. Its bytes stay: the host
    /// overwrites them ([`Endpoint::poll_transmit_into`]), and a buffer of the right
    /// length already needs no zeroing.
    ///
    /// A buffer smaller than [`BUFFER_CAPACITY`] (an ACK's or a PFC frame's, made to its
    /// length) is freed instead: a host handed it would grow it for its next data frame.
    /// Every other buffer holds a short frame, and one grown for a whole frame (a
    /// message's last packet, whose length is no multiple of 4) stays grown: once the pool
    /// is warm, no frame sent allocates.
    ///
    /// The pool holds at most [`POOL_MAX`] buffers: enough for the frames a burst of
    /// deliveries frees before the hosts send again, while what is idle stays a few MB.
    ///
    /// [`Endpoint::poll_transmit_into`]: crate::endpoint::Endpoint::poll_transmit_into
    fn recycle(&mut self, frame: Vec<u8>) {
        if self.pool.len() < POOL_MAX && frame.capacity() >= BUFFER_CAPACITY {
            self.pool.push(frame);
        }
    }

    /// After a node changed: its application reacts to completions, it sends what it can
    /// now, and its next deadline is scheduled.
    fn service(&mut self, local: usize, wiring: &Wiring) {
        let now = self.now;
        if let Node::Host(h) = &mut self.sites[local].node {
            h.poll(now);
        }
        loop {
            let out = match &mut self.sites[local].node {
                Node::Switch(s) => s.poll_transmit_elided(now),
                Node::Host(h) => {
                    // The frame is built in the buffer handed over: no copy.
                    let mut buf = self
                        .pool
                        .pop()
                        .unwrap_or_else(|| Vec::with_capacity(BUFFER_CAPACITY));
                    match h.poll_transmit_into(now, &mut buf) {
                        Some(elided) => Some((0, buf, elided)),
                        None => {
                            self.pool.push(buf);
                            None
                        }
                    }
                }
            };
            let Some((port, buf, elided)) = out else {
                break;
            };
            self.send(local, port, buf, elided, wiring);
        }
        let site = &mut self.sites[local];
        let next = match &site.node {
            Node::Switch(s) => s.poll_timeout(),
            Node::Host(h) => h.poll_timeout(),
        };
        if next != site.wake_at {
            site.generation += 1;
            site.wake_at = next;
            if let Some(t) = next {
                let (generation, seq) = (site.generation, site.cause());
                self.push(
                    t.max(now).0,
                    seq,
                    Kind::Wake {
                        node: local as u32,
                        generation,
                    },
                );
            }
        }
    }

    fn send(&mut self, local: usize, port: usize, frame: Vec<u8>, elided: Elided, wiring: &Wiring) {
        let now = self.now;
        let site = &mut self.sites[local];
        let index = site.sent_on[port];
        site.sent_on[port] += 1;
        let Some(link) = site.links[port].as_mut() else {
            self.recycle(frame);
            return;
        };
        // A frame lost on the way took its time on the wire all the same.
        let trip = link.wire.carry_elided(now, &frame, elided);
        let burst = wiring.bursts.iter().any(|&(n, p, first, count)| {
            n == site.index && p == port && index >= first && index < first + count
        });
        let random = link.loss > 0.0 && site.rng.next_f64() < link.loss;
        if burst || random {
            self.stats.frames_lost += 1;
            self.recycle(frame);
            return;
        }
        let arrives = match wiring.cut_through[link.node] {
            // Link-level frames (to 01:80:C2:00:00:0x) are the link's, not the forwarding
            // pipeline's: whole.
            Some(bits) if frame.get(..5) != Some(&[0x01, 0x80, 0xc2, 0x00, 0x00][..]) => {
                link.wire.head_landed(&trip, bits)
            }
            _ => trip.landed,
        };
        let (to, to_port) = (wiring.place[link.node], link.port as u32);
        let seq = site.cause();
        if to.shard == self.id {
            self.push(
                arrives.0,
                seq,
                Kind::Deliver {
                    node: to.local,
                    port: to_port,
                    frame,
                    elided,
                },
            );
        } else {
            self.outbox[to.shard as usize].push(Parcel {
                time: arrives.0,
                seq,
                node: to.local,
                port: to_port,
                frame,
                elided,
            });
        }
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

//! A switch with a link peer on every port, in virtual time: the peers send frames no
//! faster than their line rate, the frames cross the cable, the switch forwards them, and
//! the PFC frames the switch sends cross back and pause the peers (unless a peer is told to
//! ignore them, as a broken NIC would). Used by `rocelab replay` and by tests.

use crate::link::{Transmitter, Wire};
use crate::switch::classify::Classifier;
use crate::switch::{Switch, Transmit};
use crate::time::Nanos;
use crate::wire::pfc::{MacControl, pause_duration};
use crate::wire::{self};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

const PRIORITIES: usize = 8;

/// A frame a peer waits to send.
#[derive(Debug)]
struct Pending {
    ready: Nanos,
    seq: u64,
    frame: Vec<u8>,
}

/// The NIC at the far end of a switch port: per-priority queues, the wire into the
/// switch (a transmitter at the port's rate, then the cable), the wire back, and the pause
/// state the switch's PFC frames set.
#[derive(Debug)]
struct Peer {
    wire: Wire,
    /// From the switch: its port's transmitter runs at the same rate, so a frame never
    /// waits for this one.
    wire_back: Wire,
    backlog: [VecDeque<Pending>; PRIORITIES],
    pause_until: [Nanos; PRIORITIES],
    link_pause_until: Nanos,
    honors_pause: bool,
    sent_frames: u64,
    sent_bytes: u64,
}

impl Peer {
    fn blocked_until(&self, p: usize) -> Nanos {
        if self.honors_pause {
            self.pause_until[p].max(self.link_pause_until)
        } else {
            Nanos::ZERO
        }
    }

    /// When the peer can next start a frame, and from which priority.
    fn next_send(&self) -> Option<(Nanos, u64, usize)> {
        let free = self.wire.free_at();
        (0..PRIORITIES)
            .filter_map(|p| {
                let head = self.backlog[p].front()?;
                Some((head.ready.max(free).max(self.blocked_until(p)), head.seq, p))
            })
            .min()
    }
}

/// Something on a cable.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    arrives: Nanos,
    seq: u64,
    to_switch: bool,
    port: usize,
    frame: Vec<u8>,
}

/// Totals of what the peers sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerTotals {
    /// Frames sent into the switch.
    pub frames: u64,
    /// Bytes of those frames, FCS excluded.
    pub bytes: u64,
    /// Frames still waiting at the peer.
    pub backlog_frames: u64,
}

/// A switch and its link peers in virtual time.
#[derive(Debug)]
pub struct Fabric {
    switch: Switch,
    classifier: Classifier,
    peers: Vec<Peer>,
    cables: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    now: Nanos,
}

/// The fabric made no progress at one instant: a bug in the switch's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the switch made no progress at t = {0} ns")]
pub struct Stuck(pub Nanos);

impl Fabric {
    /// A fabric around `switch`, with a peer that honours PFC on every port.
    pub fn new(switch: Switch) -> Fabric {
        let cfg = switch.config().clone();
        let peers = cfg
            .ports
            .iter()
            .map(|p| Peer {
                wire: Wire::new(Transmitter::new(p.bits_per_sec), p.cable),
                wire_back: Wire::new(Transmitter::new(p.bits_per_sec), p.cable),
                backlog: Default::default(),
                pause_until: [Nanos::ZERO; PRIORITIES],
                link_pause_until: Nanos::ZERO,
                honors_pause: true,
                sent_frames: 0,
                sent_bytes: 0,
            })
            .collect();
        Fabric {
            classifier: Classifier::new(&cfg),
            switch,
            peers,
            cables: BinaryHeap::new(),
            seq: 0,
            now: Nanos::ZERO,
        }
    }

    /// Makes the peer on `port` ignore (`false`) or honour the switch's PFC and PAUSE.
    pub fn set_peer_honors_pause(&mut self, port: usize, honors: bool) {
        self.peers[port].honors_pause = honors;
    }

    /// The switch core, its counters and queues as of [`now`](Self::now).
    pub fn switch(&self) -> &Switch {
        &self.switch
    }

    /// The switch, to change it between runs.
    pub fn switch_mut(&mut self) -> &mut Switch {
        &mut self.switch
    }

    /// Gives the switch back, for its counters.
    pub fn into_switch(self) -> Switch {
        self.switch
    }

    /// The virtual time reached.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// What the peer on `port` has sent and still holds.
    pub fn peer_totals(&self, port: usize) -> PeerTotals {
        let p = &self.peers[port];
        PeerTotals {
            frames: p.sent_frames,
            bytes: p.sent_bytes,
            backlog_frames: p.backlog.iter().map(|b| b.len() as u64).sum(),
        }
    }

    /// The peer on `port` wants to send `frame` from `ready` on. Frames of one priority go
    /// in the order offered.
    pub fn offer(&mut self, port: usize, ready: Nanos, frame: Vec<u8>) {
        let class = match wire::parse(&frame) {
            Ok(meta) if !meta.is_mac_control() => self.classifier.traffic_class(&meta),
            _ => self.classifier.default_class(),
        };
        self.seq += 1;
        self.peers[port].backlog[usize::from(class)].push_back(Pending {
            ready,
            seq: self.seq,
            frame,
        });
    }

    /// Runs every event up to and including `until`, handing each frame the switch sends to
    /// `sink`. Returns when nothing is left to do before `until`.
    pub fn run_until(
        &mut self,
        until: Nanos,
        sink: &mut impl FnMut(&Transmit<'_>),
    ) -> Result<(), Stuck> {
        let mut idle_rounds = 0u32;
        loop {
            let next_cable = self.cables.peek().map(|Reverse(f)| f.arrives);
            let next_peer = self
                .peers
                .iter()
                .filter_map(|p| p.next_send().map(|s| s.0))
                .min();
            let next_switch = self.switch.poll_timeout();
            let Some(t) = [next_cable, next_peer, next_switch]
                .into_iter()
                .flatten()
                .min()
            else {
                return Ok(());
            };
            if t > until {
                return Ok(());
            }
            let t = t.max(self.now);
            let mut progressed = false;
            self.now = t;
            while self.cables.peek().is_some_and(|Reverse(f)| f.arrives <= t) {
                let Some(Reverse(f)) = self.cables.pop() else {
                    break;
                };
                progressed = true;
                if f.to_switch {
                    self.switch.handle_frame(t, f.port, &f.frame);
                } else {
                    self.peer_receives(t, f.port, &f.frame);
                }
            }
            for port in 0..self.peers.len() {
                while let Some((_, _, p)) = self.peers[port].next_send().filter(|s| s.0 <= t) {
                    progressed = true;
                    self.peer_sends(t, port, p);
                }
            }
            if next_switch.is_some_and(|s| s <= t) {
                self.switch.handle_timeout(t);
            }
            while let Some(tx) = self.switch.poll_transmit(t) {
                progressed = true;
                sink(&tx);
                let trip = self.peers[tx.port].wire_back.carry(t, tx.frame);
                // The peer acts on MAC control frames alone (PFC, PAUSE).
                if tx.frame.get(12..14) == Some(&[0x88, 0x08]) {
                    let arrives = trip.landed;
                    let (port, frame) = (tx.port, tx.frame.to_vec());
                    self.seq += 1;
                    self.cables.push(Reverse(InFlight {
                        arrives,
                        seq: self.seq,
                        to_switch: false,
                        port,
                        frame,
                    }));
                }
            }
            idle_rounds = if progressed { 0 } else { idle_rounds + 1 };
            if idle_rounds > 1000 {
                return Err(Stuck(t));
            }
        }
    }

    /// Runs until nothing is left to do.
    pub fn run_to_idle(&mut self, sink: &mut impl FnMut(&Transmit<'_>)) -> Result<(), Stuck> {
        self.run_until(Nanos::MAX, sink)
    }

    fn peer_sends(&mut self, now: Nanos, port: usize, priority: usize) {
        let peer = &mut self.peers[port];
        let Some(pending) = peer.backlog[priority].pop_front() else {
            return;
        };
        let arrives = peer.wire.carry(now, &pending.frame).landed;
        peer.sent_frames += 1;
        peer.sent_bytes += pending.frame.len() as u64;
        self.seq += 1;
        self.cables.push(Reverse(InFlight {
            arrives,
            seq: self.seq,
            to_switch: true,
            port,
            frame: pending.frame,
        }));
    }

    /// A PFC or PAUSE frame from the switch reaches the peer on `port`.
    fn peer_receives(&mut self, now: Nanos, port: usize, frame: &[u8]) {
        let Ok(meta) = wire::parse(frame) else { return };
        let peer = &mut self.peers[port];
        let rate = peer.wire.bits_per_sec();
        match MacControl::parse_frame(frame, &meta) {
            Ok(MacControl::Pfc(pfc)) => {
                for p in pfc.priorities().iter() {
                    peer.pause_until[usize::from(p)] =
                        now + pause_duration(pfc.quanta[usize::from(p)], rate);
                }
            }
            Ok(MacControl::Pause { quanta }) => {
                peer.link_pause_until = now + pause_duration(quanta, rate);
            }
            _ => {}
        }
    }
}

//! Path choice over a group of equal-cost egress ports (a leaf's uplinks): ECMP on a hash
//! of the flow, flowlets, per-packet spraying, or adaptive routing by queue depth.
//!
//! - **ECMP** hashes the IP addresses and UDP ports (RoCEv2 NICs vary the UDP source port
//!   per QP for this entropy). Every switch uses the same hash unless it is given a seed
//!   of its own: with one hash, two tiers that hash the same way pick correlated members
//!   (polarization); a per-switch seed decorrelates them (RFC 2992 discusses the hash's
//!   role; Cisco and Arista call the seed "universal id" / "hash seed").
//! - **Flowlet** (Kandula et al., "Dynamic load balancing without packet reordering",
//!   CCR 2007; CONGA, SIGCOMM 2014; Cisco Nexus 9000 DLB in flowlet mode): a flow keeps
//!   its port while its packets come closer than the gap; after a gap longer than
//!   `flowlet_gap` its next packet starts a new flowlet on the least-loaded port. The
//!   flowlet table has a fixed number of entries indexed by the flow's hash, as hardware's
//!   does, so two flows may share an entry.
//! - **Per-packet** spraying (Nexus DLB per-packet mode, Dixit et al. "On the impact of
//!   packet spraying in data center networks", INFOCOM 2013; UEC 1.0's packet spraying,
//!   where a sender cycles each packet's entropy value): by default each flow's packets
//!   go round robin over the members from a start its hash picks, the flow's counter
//!   kept in a table indexed by its hash; or each packet to a member drawn at random
//!   from the switch's seeded stream (Dixit et al.'s random packet spraying). One round
//!   robin counter for the whole switch would not do: with flows as regular as
//!   simulated ones, flow k's packets come k-th in every round and keep one member.
//! - **Adaptive** (InfiniBand adaptive routing, Spectrum-X): each packet to the member
//!   whose egress queues hold the fewest bytes.
//!
//! "Least loaded" is the bytes queued on a port over all its queues; a tie goes to the
//! member after the one last chosen, so that idle ports are taken in turn. Nothing here
//! but spraying draws a random number, from a stream of the switch's own (not RED's): the
//! choice is a function of the frames, their times and the seed.

use crate::time::Nanos;
use crate::wire::FrameMeta;

/// Flowlet table entries (a power of two; the Nexus 9000's DLB table is of this order).
const FLOWLET_ENTRIES: usize = 4096;

/// How a switch picks one port of an equal-cost group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Balance {
    /// A hash of the flow's addresses and UDP ports, the same in every switch.
    #[default]
    Ecmp,
    /// ECMP with a per-switch seed mixed into the hash.
    EcmpSeeded {
        /// The salt.
        seed: u64,
    },
    /// A new least-loaded port after a gap of more than `gap` in a flow.
    Flowlet {
        /// The idle time that ends a flowlet.
        gap: Nanos,
    },
    /// Each packet of a flow to the next member in turn (`seed: None`), or to a member
    /// drawn at random from `seed`'s stream.
    PerPacket {
        /// The seed of random spraying; `None`: round robin per flow.
        seed: Option<u64>,
    },
    /// Each packet to the member with the fewest bytes queued.
    Adaptive,
}

impl Balance {
    /// The mode's name as a scenario writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Balance::Ecmp | Balance::EcmpSeeded { .. } => "ecmp",
            Balance::Flowlet { .. } => "flowlet",
            Balance::PerPacket { .. } => "per-packet",
            Balance::Adaptive => "adaptive",
        }
    }
}

/// A switch's path-choice state.
#[derive(Debug, Clone)]
pub(super) struct Balancer {
    mode: Balance,
    /// The member index chosen last (ties).
    turn: usize,
    /// Spraying's draws.
    rng: crate::rand::Rng,
    /// Flowlet mode: per entry, the port chosen (+1; 0: none yet) and the last packet's
    /// time. Round-robin spraying: per entry, the packets sprayed so far.
    flowlets: Vec<(u32, Nanos)>,
}

impl Default for Balancer {
    fn default() -> Self {
        Balancer::new(Balance::Ecmp)
    }
}

impl Balancer {
    /// A balancer in `mode`.
    pub(super) fn new(mode: Balance) -> Balancer {
        let flowlets = match mode {
            Balance::Flowlet { .. } | Balance::PerPacket { seed: None } => {
                vec![(0, Nanos::ZERO); FLOWLET_ENTRIES]
            }
            _ => Vec::new(),
        };
        let seed = match mode {
            Balance::PerPacket { seed } => seed.unwrap_or(0),
            _ => 0,
        };
        Balancer {
            mode,
            turn: 0,
            rng: crate::rand::Rng::new(seed),
            flowlets,
        }
    }

    /// The mode.
    pub(super) fn mode(&self) -> Balance {
        self.mode
    }

    /// Picks one of `group` (ports, at least one) for a frame at `now`; `load(port)` is
    /// the bytes queued on a port.
    #[inline]
    pub(super) fn choose(
        &mut self,
        now: Nanos,
        frame: &[u8],
        meta: Option<&FrameMeta>,
        group: &[usize],
        load: impl Fn(usize) -> u64,
    ) -> usize {
        let n = group.len();
        if n <= 1 {
            return group[0];
        }
        match self.mode {
            Balance::Ecmp => group[(flow_hash(frame, meta, None) % n as u64) as usize],
            Balance::EcmpSeeded { seed } => {
                group[(flow_hash(frame, meta, Some(seed)) % n as u64) as usize]
            }

            // Multiply-shift: an unbiased enough member from the draw's high bits.
            Balance::PerPacket { seed: Some(_) } => {
                group[((u128::from(self.rng.next_u64()) * n as u128) >> 64) as usize]
            }
            Balance::PerPacket { seed: None } => {
                let h = flow_hash(frame, meta, None);
                let entry = &mut self.flowlets[(h as usize) & (FLOWLET_ENTRIES - 1)].0;
                *entry = entry.wrapping_add(1);
                group[((h >> 12) as usize + *entry as usize) % n]
            }
            Balance::Adaptive => group[self.least_loaded(group, &load)],
            Balance::Flowlet { gap } => {
                let h = flow_hash(frame, meta, None);
                let slot = (h as usize) & (FLOWLET_ENTRIES - 1);
                let (port, last) = self.flowlets[slot];
                let keep = port != 0
                    && now.saturating_sub(last) <= gap
                    && group.contains(&(port as usize - 1));
                let out = if keep {
                    port as usize - 1
                } else {
                    group[self.least_loaded(group, &load)]
                };
                self.flowlets[slot] = (out as u32 + 1, now);
                out
            }
        }
    }

    /// The member with the fewest bytes queued; on a tie, the first after the last
    /// chosen.
    fn least_loaded(&mut self, group: &[usize], load: &impl Fn(usize) -> u64) -> usize {
        let n = group.len();
        let mut best = (u64::MAX, 0);
        for k in 1..=n {
            let i = (self.turn + k) % n;
            let l = load(group[i]);
            if l < best.0 {
                best = (l, i);
            }
        }
        self.turn = best.1;
        best.1
    }
}

/// A hash of the IP addresses and UDP or TCP ports (of the MACs for frames that are not
/// IP), so
/// that one flow's frames hash alike; with `seed`, the hash mixed with it. The unsalted
/// hash is the one every switch has always used.
pub(super) fn flow_hash(frame: &[u8], meta: Option<&FrameMeta>, seed: Option<u64>) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    match meta.filter(|m| m.is_ip()) {
        Some(m) => {
            let l3 = usize::from(m.l3_offset());
            let l4 = usize::from(m.l4_offset());
            let addrs = if m.is_ipv4() {
                l3 + 12..l3 + 20
            } else {
                l3 + 8..l3 + 40
            };
            h.write(frame.get(addrs).unwrap_or_default());
            // The ports: RoCE's UDP source port is its per-QP entropy, iWARP's TCP
            // ports name the connection.
            if m.udp_len() > 0 {
                h.write(frame.get(l4..l4 + 4).unwrap_or_default());
            } else if m.is_ipv4() && m.ip_proto() == crate::wire::ipv4::PROTO_TCP {
                let ihl = frame.get(l3).map_or(5, |b| usize::from(b & 0x0f)) * 4;
                h.write(frame.get(l3 + ihl..l3 + ihl + 4).unwrap_or_default());
            }
        }
        None => h.write(frame.get(..12).unwrap_or_default()),
    }
    match seed {
        // Fx mixes its low bits poorly: take the high ones.
        None => h.finish() >> 32,
        // Fx alone keeps the flows' differences in a few bits whatever the seed: a
        // full-avalanche finalizer (SplitMix64's) makes each seed a fresh hash.
        Some(seed) => mix64(h.finish() ^ seed) >> 32,
    }
}

/// SplitMix64's finalizer (Steele, Lea, Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): every input bit flips about half the output bits.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spraying_uses_every_member_alike_and_adaptive_the_emptiest() {
        let group = [4, 5, 6, 7];
        let mut b = Balancer::new(Balance::PerPacket { seed: Some(7) });
        let mut counts = [0u32; 8];
        for _ in 0..40_000 {
            counts[b.choose(Nanos(0), &[], None, &group, |_| 0)] += 1;
        }
        // Binomial(40000, 1/4): sd 87; 5 sd either side of 10000.
        for c in &counts[4..] {
            assert!((9_565..=10_435).contains(c), "{counts:?}");
        }
        let mut a = Balancer::new(Balance::Adaptive);
        let depth = |p: usize| [0, 0, 0, 0, 900, 300, 100, 200][p];
        assert_eq!(a.choose(Nanos(0), &[], None, &group, depth), 6);
        // Equal loads: turn by turn from the last one chosen.
        assert_eq!(a.choose(Nanos(0), &[], None, &group, |_| 7), 7);
        assert_eq!(a.choose(Nanos(0), &[], None, &group, |_| 7), 4);
        // Round robin per flow: one flow's packets take the members in turn.
        let mut r = Balancer::new(Balance::PerPacket { seed: None });
        let frame = [0u8; 60];
        let picks: Vec<usize> = (0..8)
            .map(|_| r.choose(Nanos(0), &frame, None, &group, |_| 0))
            .collect();
        let start = picks[0] - 4;
        let expected: Vec<usize> = (0..8).map(|i| 4 + (start + i) % 4).collect();
        assert_eq!(picks, expected);
    }

    #[test]
    fn a_flowlet_keeps_its_port_until_a_gap() {
        let group = [1, 2];
        let gap = Nanos(1000);
        let mut b = Balancer::new(Balance::Flowlet { gap });
        let frame = [0u8; 60];
        let first = b.choose(Nanos(0), &frame, None, &group, |_| 0);
        // Its port fills up; within the gap the flow stays.
        let busy = |p: usize| if p == first { 10_000 } else { 0 };
        assert_eq!(b.choose(Nanos(900), &frame, None, &group, busy), first);
        assert_eq!(b.choose(Nanos(1800), &frame, None, &group, busy), first);
        // After a gap it moves to the emptier port.
        assert_ne!(b.choose(Nanos(2801), &frame, None, &group, busy), first);
    }
}

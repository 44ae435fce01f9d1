//! Networks to simulate: one switch with N hosts (a star), a leaf–spine fabric whose
//! leaves spread remote traffic over the spines by ECMP on the UDP source port, a
//! three-tier fat tree (ToR, aggregation, core; the HPCC paper's fabric), or a ring of
//! switches routed the shorter way round (the shape of a cyclic buffer dependency).

use super::engine::{Engine, Host, Node};
use crate::config::endpoint::EndpointConfig;
use crate::config::{PortConfig, SwitchConfig};
use crate::endpoint::{Endpoint, Peer};
use crate::switch::{Balance, Switch};
use crate::time::Nanos;
use crate::wire::MacAddr;
use std::net::Ipv4Addr;

/// QP numbers start here (0 and 1 are special in InfiniBand).
const FIRST_QPN: u32 = 0x100;
/// A RoCEv2 data frame's headers and trailer: Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4.
const DATA_OVERHEAD: usize = 58;
/// An ACK: those headers and an AETH of 4.
const ACK_LEN: usize = 62;

/// The shape of the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One switch, `hosts` hosts.
    Star {
        /// Hosts on the switch, 2 to 4096.
        hosts: usize,
    },
    /// Switches in a ring, each with hosts; traffic goes the shorter way round.
    Ring {
        /// Switches in the ring, 3 to 64.
        switches: usize,
        /// Hosts on each switch.
        hosts_per_switch: usize,
    },
    /// Leaves with hosts, every leaf linked to every spine, ECMP over the spines.
    LeafSpine {
        /// Leaf switches, each with `hosts_per_leaf` hosts.
        leaves: usize,
        /// Spine switches, each linked to every leaf.
        spines: usize,
        /// Hosts under each leaf.
        hosts_per_leaf: usize,
    },
    /// A three-tier fat tree of ToR, aggregation and core switches.
    FatTree(FatTree),
}

/// A three-tier fat tree's sizes: pods of ToR and aggregation switches, every ToR linked
/// to every aggregation switch of its pod, aggregation switch `j` of each pod linked to
/// its own group of `cores / aggs_per_pod` core switches. ToRs and aggregation switches
/// spread what leaves them upward over their uplinks; the way down is one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FatTree {
    /// Pods, each `tors_per_pod` ToRs and `aggs_per_pod` aggregation switches.
    pub pods: usize,
    /// ToR switches per pod.
    pub tors_per_pod: usize,
    /// Aggregation switches per pod (a ToR's uplinks).
    pub aggs_per_pod: usize,
    /// Core switches, a multiple of `aggs_per_pod`.
    pub cores: usize,
    /// Hosts under each ToR.
    pub hosts_per_tor: usize,
}

impl FatTree {
    /// ToR switches in all.
    pub fn tors(&self) -> usize {
        self.pods * self.tors_per_pod
    }

    /// Aggregation switches in all.
    pub fn aggs(&self) -> usize {
        self.pods * self.aggs_per_pod
    }

    /// Hosts in all.
    pub fn hosts(&self) -> usize {
        self.tors() * self.hosts_per_tor
    }

    /// Links between switches: ToR to aggregation, aggregation to core.
    pub fn links(&self) -> usize {
        self.tors() * self.aggs_per_pod + self.pods * self.cores
    }
}

/// How a leaf-spine's leaves spread traffic over their uplinks (`topology.load_balancing`;
/// see docs/load-balancing.md). A star and a ring have one path between two hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadBalancing {
    /// A hash of the flow (IP addresses, UDP ports): one flow, one path.
    Ecmp {
        /// Each switch salts its hash with a seed of its own, drawn from the run's seed;
        /// otherwise every switch hashes alike (`ecmp_seed = "shared"`, the default).
        per_switch_seed: bool,
    },
    /// A flow moves to the least-loaded uplink after a pause longer than `gap`.
    Flowlet {
        /// `flowlet_gap_us`.
        gap: Nanos,
    },
    /// Each packet to another uplink (spraying): a flow's packets in turn, or each to
    /// one drawn at random.
    PerPacket {
        /// Random spraying (`spraying = "random"`) rather than round robin per flow.
        random: bool,
    },
    /// Each packet to the uplink with the fewest bytes queued.
    Adaptive,
}

/// The default flowlet gap (`flowlet_gap_us`): a few round trips of a 100 Gb/s
/// leaf-spine, so that a flow paced by its window or its rate keeps its path.
pub const DEFAULT_FLOWLET_GAP: Nanos = Nanos(50_000);

impl LoadBalancing {
    /// The names `load_balancing` takes, in the order `compare --lb` lists them.
    pub const NAMES: [&'static str; 4] = ["ecmp", "flowlet", "per-packet", "adaptive"];

    /// The mode's name as a scenario writes it.
    pub fn name(&self) -> &'static str {
        match self {
            LoadBalancing::Ecmp { .. } => "ecmp",
            LoadBalancing::Flowlet { .. } => "flowlet",
            LoadBalancing::PerPacket { .. } => "per-packet",
            LoadBalancing::Adaptive => "adaptive",
        }
    }

    /// The mode and its parameters, in words.
    pub fn describe(&self) -> String {
        match self {
            LoadBalancing::Ecmp { per_switch_seed } => format!(
                "ecmp, {}",
                if *per_switch_seed {
                    "a hash seed per switch"
                } else {
                    "one hash in every switch"
                }
            ),
            LoadBalancing::Flowlet { gap } => format!("flowlet, gap {}", gap.human()),
            LoadBalancing::PerPacket { random } => format!(
                "per-packet, {}",
                if *random {
                    "random"
                } else {
                    "round robin per flow"
                }
            ),
            LoadBalancing::Adaptive => "adaptive, least queued bytes".to_owned(),
        }
    }

    /// The mode named `name` with its defaults (flowlet: [`DEFAULT_FLOWLET_GAP`]).
    pub fn from_name(name: &str) -> Option<LoadBalancing> {
        Some(match name {
            "ecmp" => LoadBalancing::Ecmp {
                per_switch_seed: false,
            },
            "flowlet" => LoadBalancing::Flowlet {
                gap: DEFAULT_FLOWLET_GAP,
            },
            "per-packet" => LoadBalancing::PerPacket { random: false },
            "adaptive" => LoadBalancing::Adaptive,
            _ => return None,
        })
    }

    /// The switch's setting for the `index`-th switch of a network run with `seed`.
    pub fn for_switch(&self, seed: u64, index: usize) -> Balance {
        match *self {
            LoadBalancing::Ecmp {
                per_switch_seed: false,
            } => Balance::Ecmp,
            LoadBalancing::Ecmp {
                per_switch_seed: true,
            } => Balance::EcmpSeeded {
                // Not the RED seed: the hash salt is a stream of its own.
                seed: switch_seed(seed ^ 0x6563_6d70_5f73_6565, index),
            },
            LoadBalancing::Flowlet { gap } => Balance::Flowlet { gap },
            LoadBalancing::PerPacket { random } => Balance::PerPacket {
                seed: random.then(|| switch_seed(seed ^ 0x7370_7261_7969_6e67, index)),
            },
            LoadBalancing::Adaptive => Balance::Adaptive,
        }
    }
}

/// The topology, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Topology {
    /// Star or leaf–spine.
    pub shape: Shape,
    /// The hosts' links' rate, bit/s (every link's but on a fat tree).
    pub bits_per_sec: u64,
    /// The rate of the links between switches, bit/s: `bits_per_sec` but on a fat tree
    /// (`fabric_gbps`).
    pub fabric_bits_per_sec: u64,
    /// Every link's propagation delay.
    pub delay: Nanos,
    /// Loss probability on host links (star only).
    pub loss: f64,
    /// On RoCEv2: each switch's forwarding latency, from a frame's last bit in to the
    /// earliest its first bit may go out (store-and-forward). InfiniBand's is `[ib]`'s.
    pub switch_latency: Nanos,
    /// How leaves spread traffic over their uplinks (leaf-spine only); `None`: the
    /// scenario does not say, and ECMP with one hash for all (the reports then leave the
    /// uplinks out, as they did before there was a choice).
    pub load_balancing: Option<LoadBalancing>,
}

impl Default for LoadBalancing {
    fn default() -> Self {
        LoadBalancing::Ecmp {
            per_switch_seed: false,
        }
    }
}

impl Topology {
    /// Links on the path from host `a` to host `b`: 2 through one switch; across a
    /// leaf–spine, 4; around a ring, 2 plus the switches between (the shorter way).
    pub fn hops(&self, a: usize, b: usize) -> usize {
        match self.shape {
            Shape::Star { .. } => 2,
            Shape::LeafSpine { hosts_per_leaf, .. } => {
                if a / hosts_per_leaf.max(1) == b / hosts_per_leaf.max(1) {
                    2
                } else {
                    4
                }
            }
            Shape::Ring {
                switches,
                hosts_per_switch,
            } => {
                let (i, j) = (a / hosts_per_switch.max(1), b / hosts_per_switch.max(1));
                let d = i.abs_diff(j);
                2 + d.min(switches - d)
            }
            Shape::FatTree(f) => {
                let tor = |h: usize| h / f.hosts_per_tor.max(1);
                let pod = |h: usize| tor(h) / f.tors_per_pod.max(1);
                if tor(a) == tor(b) {
                    2
                } else if pod(a) == pod(b) {
                    4
                } else {
                    6
                }
            }
        }
    }

    /// Links on the longest path between two hosts.
    pub fn longest_hops(&self) -> usize {
        match self.shape {
            Shape::Star { .. } => 2,
            Shape::LeafSpine { leaves, .. } => {
                if leaves > 1 {
                    4
                } else {
                    2
                }
            }
            Shape::Ring { switches, .. } => 2 + switches / 2,
            Shape::FatTree(f) => match (f.pods, f.tors_per_pod) {
                (1, 1) => 2,
                (1, _) => 4,
                _ => 6,
            },
        }
    }

    /// The base RTT of the longest path: a full data packet of `mtu` payload bytes out and
    /// its ACK back, each hop taking the frame's serialisation (at the hosts' rate on the
    /// two host links, at the fabric's between switches), the cable and (past a switch)
    /// its latency, with no queue.
    pub fn base_rtt(&self, mtu: u32) -> Nanos {
        let hops = self.longest_hops() as u64;
        let data = mtu as usize + DATA_OVERHEAD;
        let hop = |len: usize, rate: u64| crate::link::frame_time(len, rate).0 + self.delay.0;
        let round = |rate: u64| hop(data, rate) + hop(ACK_LEN, rate);
        let host_links = hops.min(2);
        let fabric_links = hops - host_links;
        let switches = hops.saturating_sub(1) * self.switch_latency.0;
        Nanos(
            host_links * round(self.bits_per_sec)
                + fabric_links * round(self.fabric_bits_per_sec)
                + 2 * switches,
        )
    }

    /// The bandwidth-delay product of the longest path in packets of `mtu` payload bytes
    /// (IRN's BDP cap): the round trip of a full data packet out and its ACK back, each
    /// hop taking the frame's serialisation, the cable and (past a switch) its latency,
    /// at the link rate, in data frames. At least 1.
    pub fn bdp_packets(&self, mtu: u32) -> u32 {
        let data = mtu as usize + DATA_OVERHEAD;
        let rtt_ns = self.base_rtt(mtu).0;
        let frame_bits = crate::link::wire_bits(data) as u128;
        let bdp_bits = u128::from(rtt_ns) * u128::from(self.bits_per_sec) / 1_000_000_000;
        bdp_bits.div_ceil(frame_bits).clamp(1, u128::from(u32::MAX)) as u32
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        match self.shape {
            Shape::Star { hosts } => hosts,
            Shape::LeafSpine {
                leaves,
                hosts_per_leaf,
                ..
            } => leaves * hosts_per_leaf,
            Shape::Ring {
                switches,
                hosts_per_switch,
            } => switches * hosts_per_switch,
            Shape::FatTree(f) => f.hosts(),
        }
    }

    /// Links between switches (a star has none).
    pub fn fabric_links(&self) -> usize {
        match self.shape {
            Shape::Star { .. } => 0,
            Shape::LeafSpine { leaves, spines, .. } => leaves * spines,
            Shape::Ring { switches, .. } => switches,
            Shape::FatTree(f) => f.links(),
        }
    }

    /// Hosts per leaf and uplinks per leaf, as the fair-share arithmetic sees the fabric:
    /// a star is one leaf whose one "uplink" is never used; `None` on a ring or a fat
    /// tree, whose paths are not a leaf-spine's.
    pub fn leaf_groups(&self) -> Option<(usize, usize)> {
        match self.shape {
            Shape::Star { .. } => Some((usize::MAX, 1)),
            Shape::LeafSpine {
                hosts_per_leaf,
                spines,
                ..
            } => Some((hosts_per_leaf, spines)),
            Shape::Ring { .. } | Shape::FatTree(_) => None,
        }
    }
}

/// A built network: the engine and where everything is.
#[derive(Debug)]
pub struct Network {
    /// The engine holding the nodes.
    pub engine: Engine,
    /// Node index of each host, in host order.
    pub hosts: Vec<usize>,
    /// Node index of each switch (star: one; leaf–spine: leaves, then spines; fat tree:
    /// ToRs, aggregation switches, then cores, pod by pod).
    pub switches: Vec<usize>,
    /// The switches with a choice of ports (a leaf-spine's leaves, a fat tree's ToRs and
    /// aggregation switches): each one's index in [`Network::switches`] and its uplink
    /// ports.
    pub uplinks: Vec<(usize, Vec<usize>)>,
    /// A name for each switch, in the same order ("sw"; "leaf0", "spine1").
    pub switch_names: Vec<String>,
    /// For each host, the switch node and port it is attached to.
    pub attachments: Vec<(usize, usize)>,
    /// The next QP number to hand out (unique in the network).
    next_qpn: u32,
    /// The receiving side of workload flows' QPs: (host, QP index). They only answer;
    /// the time series leaves them out.
    pub workload_receive_qps: Vec<(usize, usize)>,
}

/// The MAC address of host `i`.
pub fn host_mac(i: usize) -> MacAddr {
    MacAddr([0x02, 0x00, 0xc6, 0x12, (i >> 8) as u8, i as u8])
}

/// The IPv4 address of host `i` (198.18.0.0/15, the benchmarking range).
pub fn host_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(
        198,
        18 + ((i >> 16) & 1) as u8,
        (i >> 8) as u8,
        (i as u8).wrapping_add(1),
    )
}

fn ports(
    names: impl Iterator<Item = String>,
    bits_per_sec: u64,
    cable: Nanos,
    mtu: u32,
) -> Vec<PortConfig> {
    names
        .map(|name| PortConfig {
            name,
            bits_per_sec,
            cable,
            mtu,
        })
        .collect()
}

/// The RED seed of the `index`-th switch in a network run with `seed`: each switch draws
/// its own stream, and the network's seed decides them all.
fn switch_seed(seed: u64, index: usize) -> u64 {
    crate::rand::Rng::new(seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).next_u64()
}

fn add_host(engine: &mut Engine, ep_cfg: &EndpointConfig, i: usize) -> usize {
    engine.add(Node::Host(Box::new(Host {
        endpoint: Endpoint::new(ep_cfg, host_mac(i), host_ip(i)),
        app: None,
    })))
}

/// Adds `per_switch` hosts under each of `switches` (host h on switch h / per_switch, its
/// port h % per_switch) and links them; returns the hosts' nodes and attachments.
fn attach_hosts(
    engine: &mut Engine,
    ep_cfg: &EndpointConfig,
    switches: &[usize],
    per_switch: usize,
    rate: u64,
    delay: Nanos,
) -> (Vec<usize>, Vec<(usize, usize)>) {
    let mut hosts = Vec::new();
    let mut attachments = Vec::new();
    for h in 0..switches.len() * per_switch {
        let node = add_host(engine, ep_cfg, h);
        let sw = switches[h / per_switch];
        engine.connect((sw, h % per_switch), (node, 0), rate, delay, 0.0);
        hosts.push(node);
        attachments.push((sw, h % per_switch));
    }
    (hosts, attachments)
}

/// The configuration of a star's switch: `switch_cfg` with one port per host (`h0`, `h1`,
/// ...) at the endpoints' rate with a cable of `delay`, and its RED seed drawn from `seed`.
pub fn star_switch(
    switch_cfg: &SwitchConfig,
    ep_cfg: &EndpointConfig,
    hosts: usize,
    delay: Nanos,
    seed: u64,
) -> SwitchConfig {
    let mut cfg = switch_cfg.clone();
    cfg.ports = ports(
        (0..hosts).map(|i| format!("h{i}")),
        ep_cfg.bits_per_sec(),
        delay,
        cfg.port_defaults.mtu,
    );
    cfg.seed = switch_seed(seed, 0);
    cfg
}

/// One switch (configured as `switch_cfg`, its ports replaced by one per host and its RED
/// seed drawn from `seed`) with
/// `hosts` hosts, every link at the endpoint's rate with propagation `delay` and loss
/// probability `loss`. The switch knows every host's port (static routes): nothing floods.
pub fn star(
    switch_cfg: &SwitchConfig,
    ep_cfg: &EndpointConfig,
    hosts: usize,
    delay: Nanos,
    loss: f64,
    seed: u64,
) -> Network {
    let rate = ep_cfg.bits_per_sec();
    let cfg = star_switch(switch_cfg, ep_cfg, hosts, delay, seed);
    let mut engine = Engine::new(seed);
    let mut switch = Switch::new(&cfg);
    for i in 0..hosts {
        switch.add_route(host_mac(i), &[i]);
    }
    let sw = engine.add(Node::Switch(Box::new(switch)));
    let mut host_nodes = Vec::new();
    let mut attachments = Vec::new();
    for i in 0..hosts {
        let h = add_host(&mut engine, ep_cfg, i);
        engine.connect((sw, i), (h, 0), rate, delay, loss);
        host_nodes.push(h);
        attachments.push((sw, i));
    }
    Network {
        engine,
        hosts: host_nodes,
        switches: vec![sw],
        uplinks: Vec::new(),
        switch_names: vec!["sw".to_owned()],
        attachments,
        next_qpn: FIRST_QPN,
        workload_receive_qps: Vec::new(),
    }
}

/// `leaves` leaf switches with `hosts_per_leaf` hosts each, every leaf connected to each of
/// `spines` spine switches. Leaves send remote traffic over an ECMP group of their uplinks;
/// spines send to the leaf of the destination. All links at the endpoint's rate.
pub fn leaf_spine(
    switch_cfg: &SwitchConfig,
    ep_cfg: &EndpointConfig,
    leaves: usize,
    spines: usize,
    hosts_per_leaf: usize,
    delay: Nanos,
    seed: u64,
) -> Network {
    let rate = ep_cfg.bits_per_sec();
    let mtu = switch_cfg.port_defaults.mtu;
    let mut engine = Engine::new(seed);
    let host_count = leaves * hosts_per_leaf;
    let mut leaf_nodes = Vec::new();
    for l in 0..leaves {
        let mut cfg = switch_cfg.clone();
        cfg.ports = ports(
            (0..hosts_per_leaf)
                .map(|h| format!("l{l}h{h}"))
                .chain((0..spines).map(|s| format!("l{l}up{s}"))),
            rate,
            delay,
            mtu,
        );
        cfg.seed = switch_seed(seed, l);
        let mut sw = Switch::new(&cfg);
        let uplinks: Vec<usize> = (hosts_per_leaf..hosts_per_leaf + spines).collect();
        for h in 0..host_count {
            if h / hosts_per_leaf == l {
                sw.add_route(host_mac(h), &[h % hosts_per_leaf]);
            } else {
                sw.add_route(host_mac(h), &uplinks);
            }
        }
        leaf_nodes.push(engine.add(Node::Switch(Box::new(sw))));
    }
    let mut spine_nodes = Vec::new();
    for s in 0..spines {
        let mut cfg = switch_cfg.clone();
        cfg.ports = ports((0..leaves).map(|l| format!("s{s}l{l}")), rate, delay, mtu);
        cfg.seed = switch_seed(seed, leaves + s);
        let mut sw = Switch::new(&cfg);
        for h in 0..host_count {
            sw.add_route(host_mac(h), &[h / hosts_per_leaf]);
        }
        let node = engine.add(Node::Switch(Box::new(sw)));
        for (l, &leaf) in leaf_nodes.iter().enumerate() {
            engine.connect((leaf, hosts_per_leaf + s), (node, l), rate, delay, 0.0);
        }
        spine_nodes.push(node);
    }
    let (hosts, attachments) = attach_hosts(
        &mut engine,
        ep_cfg,
        &leaf_nodes,
        hosts_per_leaf,
        rate,
        delay,
    );
    Network {
        engine,
        hosts,
        switch_names: (0..leaves)
            .map(|l| format!("leaf{l}"))
            .chain((0..spines).map(|s| format!("spine{s}")))
            .collect(),
        switches: leaf_nodes.into_iter().chain(spine_nodes).collect(),
        uplinks: (0..leaves)
            .map(|l| (l, (hosts_per_leaf..hosts_per_leaf + spines).collect()))
            .collect(),
        attachments,
        next_qpn: FIRST_QPN,
        workload_receive_qps: Vec::new(),
    }
}

/// A three-tier fat tree (see [`FatTree`]): hosts' links at the endpoint's rate,
/// every link between switches at `fabric_bits_per_sec`, each of propagation `delay`.
///
/// ToR `t` (numbered across pods) has its hosts on ports 0.. and an uplink to each
/// aggregation switch of its pod after them; aggregation switch `j` of a pod has a port
/// to each ToR of the pod, then an uplink to each core of its group (cores `j × g` to
/// `j × g + g − 1`, `g = cores / aggs_per_pod`); a core has a port per pod. A ToR sends
/// another ToR's hosts up, an aggregation switch sends another pod's up; both spread
/// what goes up over their uplinks by the load-balancing mode, and the way down has one
/// port.
pub fn fat_tree(
    switch_cfg: &SwitchConfig,
    ep_cfg: &EndpointConfig,
    size: FatTree,
    fabric_bits_per_sec: u64,
    delay: Nanos,
    seed: u64,
) -> Network {
    let FatTree {
        pods,
        tors_per_pod,
        aggs_per_pod,
        cores,
        hosts_per_tor,
    } = size;
    let (rate, fabric) = (ep_cfg.bits_per_sec(), fabric_bits_per_sec);
    let mtu = switch_cfg.port_defaults.mtu;
    let per_group = cores / aggs_per_pod.max(1);
    let (tors, aggs, host_count) = (size.tors(), size.aggs(), size.hosts());
    let tor_of = |h: usize| h / hosts_per_tor;
    let pod_of = |h: usize| tor_of(h) / tors_per_pod;
    let mut engine = Engine::new(seed);
    let mut index = 0;
    let mut make = |engine: &mut Engine, mut cfg: SwitchConfig, routes: &dyn Fn(&mut Switch)| {
        cfg.seed = switch_seed(seed, index);
        index += 1;
        let mut sw = Switch::new(&cfg);
        routes(&mut sw);
        engine.add(Node::Switch(Box::new(sw)))
    };
    let tor_up: Vec<usize> = (hosts_per_tor..hosts_per_tor + aggs_per_pod).collect();
    let mut tor_nodes = Vec::new();
    for t in 0..tors {
        let mut cfg = switch_cfg.clone();
        cfg.ports = ports(
            (0..hosts_per_tor).map(|h| format!("t{t}h{h}")),
            rate,
            delay,
            mtu,
        );
        cfg.ports.extend(ports(
            (0..aggs_per_pod).map(|j| format!("t{t}up{j}")),
            fabric,
            delay,
            mtu,
        ));
        tor_nodes.push(make(&mut engine, cfg, &|sw| {
            for h in 0..host_count {
                if tor_of(h) == t {
                    sw.add_route(host_mac(h), &[h % hosts_per_tor]);
                } else {
                    sw.add_route(host_mac(h), &tor_up);
                }
            }
        }));
    }
    let agg_up: Vec<usize> = (tors_per_pod..tors_per_pod + per_group).collect();
    let mut agg_nodes = Vec::new();
    for p in 0..pods {
        for j in 0..aggs_per_pod {
            let a = p * aggs_per_pod + j;
            let mut cfg = switch_cfg.clone();
            cfg.ports = ports(
                (0..tors_per_pod)
                    .map(|i| format!("a{a}t{i}"))
                    .chain((0..per_group).map(|k| format!("a{a}up{k}"))),
                fabric,
                delay,
                mtu,
            );
            let node = make(&mut engine, cfg, &|sw| {
                for h in 0..host_count {
                    if pod_of(h) == p {
                        sw.add_route(host_mac(h), &[tor_of(h) % tors_per_pod]);
                    } else {
                        sw.add_route(host_mac(h), &agg_up);
                    }
                }
            });
            for i in 0..tors_per_pod {
                let tor = tor_nodes[p * tors_per_pod + i];
                engine.connect((tor, hosts_per_tor + j), (node, i), fabric, delay, 0.0);
            }
            agg_nodes.push(node);
        }
    }
    let mut core_nodes = Vec::new();
    for c in 0..cores {
        let mut cfg = switch_cfg.clone();
        cfg.ports = ports((0..pods).map(|p| format!("c{c}p{p}")), fabric, delay, mtu);
        let node = make(&mut engine, cfg, &|sw| {
            for h in 0..host_count {
                sw.add_route(host_mac(h), &[pod_of(h)]);
            }
        });
        // Core c serves aggregation position c / per_group, on that one's uplink
        // c % per_group.
        let (j, k) = (c / per_group, c % per_group);
        for p in 0..pods {
            let agg = agg_nodes[p * aggs_per_pod + j];
            engine.connect((agg, tors_per_pod + k), (node, p), fabric, delay, 0.0);
        }
        core_nodes.push(node);
    }
    let (hosts, attachments) =
        attach_hosts(&mut engine, ep_cfg, &tor_nodes, hosts_per_tor, rate, delay);
    Network {
        engine,
        hosts,
        switch_names: (0..tors)
            .map(|t| format!("tor{t}"))
            .chain((0..aggs).map(|a| format!("agg{a}")))
            .chain((0..cores).map(|c| format!("core{c}")))
            .collect(),
        switches: tor_nodes
            .into_iter()
            .chain(agg_nodes)
            .chain(core_nodes)
            .collect(),
        uplinks: (0..tors)
            .map(|t| (t, tor_up.clone()))
            .chain((0..aggs).map(|a| (tors + a, agg_up.clone())))
            .collect(),
        attachments,
        next_qpn: FIRST_QPN,
        workload_receive_qps: Vec::new(),
    }
}

/// `switches` switches in a ring, each with `hosts_per_switch` hosts; switch i's ports are
/// its hosts (`r{i}h{j}`), then `r{i}cw` to switch i + 1 and `r{i}ccw` to switch i − 1
/// (mod N). Traffic takes the shorter way round, clockwise on a tie: with flows two hops
/// clockwise on a 4-ring, every ring link's buffers wait on the next one's, a cycle.
pub fn ring(
    switch_cfg: &SwitchConfig,
    ep_cfg: &EndpointConfig,
    switches: usize,
    hosts_per_switch: usize,
    delay: Nanos,
    seed: u64,
) -> Network {
    let rate = ep_cfg.bits_per_sec();
    let mtu = switch_cfg.port_defaults.mtu;
    let mut engine = Engine::new(seed);
    let host_count = switches * hosts_per_switch;
    let (cw, ccw) = (hosts_per_switch, hosts_per_switch + 1);
    let mut nodes = Vec::new();
    for i in 0..switches {
        let mut cfg = switch_cfg.clone();
        cfg.ports = ports(
            (0..hosts_per_switch)
                .map(|h| format!("r{i}h{h}"))
                .chain([format!("r{i}cw"), format!("r{i}ccw")]),
            rate,
            delay,
            mtu,
        );
        cfg.seed = switch_seed(seed, i);
        let mut sw = Switch::new(&cfg);
        for h in 0..host_count {
            let home = h / hosts_per_switch;
            let ahead = (home + switches - i) % switches;
            let port = match ahead {
                0 => h % hosts_per_switch,
                a if a <= switches - a => cw,
                _ => ccw,
            };
            sw.add_route(host_mac(h), &[port]);
        }
        nodes.push(engine.add(Node::Switch(Box::new(sw))));
    }
    for i in 0..switches {
        let next = (i + 1) % switches;
        engine.connect((nodes[i], cw), (nodes[next], ccw), rate, delay, 0.0);
    }
    let (hosts, attachments) =
        attach_hosts(&mut engine, ep_cfg, &nodes, hosts_per_switch, rate, delay);
    Network {
        engine,
        hosts,
        switch_names: (0..switches).map(|i| format!("r{i}")).collect(),
        switches: nodes,
        uplinks: Vec::new(),
        attachments,
        next_qpn: FIRST_QPN,
        workload_receive_qps: Vec::new(),
    }
}

impl Network {
    /// Runs the link between leaf `leaf` and spine `spine` of a leaf-spine at
    /// `bits_per_sec`, both ways, from `at` on (see [`Engine::schedule_link_rate`]).
    /// Nothing happens on another shape, or for a leaf or spine that does not exist.
    pub fn set_uplink_rate_at(&mut self, at: Nanos, leaf: usize, spine: usize, bits_per_sec: u64) {
        let Some((index, ports)) = self.uplinks.iter().find(|(i, _)| *i == leaf) else {
            return;
        };
        if let Some(&port) = ports.get(spine) {
            let node = self.switches[*index];
            self.engine.schedule_link_rate(at, node, port, bits_per_sec);
        }
    }

    /// Sets how every switch with a choice of ports picks one, each from the run's
    /// `seed` and its index (a per-switch ECMP seed).
    pub fn set_load_balancing(&mut self, mode: LoadBalancing, seed: u64) {
        for (index, _) in &self.uplinks {
            let balance = mode.for_switch(seed, *index);
            if let Node::Switch(s) = self.engine.node_mut(self.switches[*index]) {
                s.set_balance(balance);
            }
        }
    }

    /// Sets how the switch with uplinks at `index` (a leaf's number on a leaf-spine)
    /// picks one, over what [`set_load_balancing`](Self::set_load_balancing) set. Nothing
    /// happens for a switch without a choice.
    pub fn set_switch_load_balancing(&mut self, index: usize, mode: LoadBalancing, seed: u64) {
        if self.uplinks.iter().any(|(i, _)| *i == index)
            && let Node::Switch(s) = self.engine.node_mut(self.switches[index])
        {
            s.set_balance(mode.for_switch(seed, index));
        }
    }

    /// Creates an RC QP between host `a` and host `b` (QP numbers unique in the
    /// network); returns the QP index on each side.
    pub fn connect_qp(&mut self, a: usize, b: usize) -> (usize, usize) {
        let (qpn_a, qpn_b) = (self.next_qpn, self.next_qpn + 1);
        self.next_qpn += 2;
        let qa = self.endpoint_mut(a).create_qp(
            qpn_a,
            Peer {
                mac: host_mac(b),
                ip: host_ip(b),
                qpn: qpn_b,
            },
            0,
        );
        let qb = self.endpoint_mut(b).create_qp(
            qpn_b,
            Peer {
                mac: host_mac(a),
                ip: host_ip(a),
                qpn: qpn_a,
            },
            0,
        );
        (qa, qb)
    }

    /// Host `i`'s endpoint.
    pub fn endpoint(&self, i: usize) -> &Endpoint {
        match self.engine.node(self.hosts[i]) {
            Node::Host(h) => &h.endpoint,
            Node::Switch(_) => unreachable!("hosts holds host nodes only"),
        }
    }

    /// Host `i`'s endpoint, to change.
    pub fn endpoint_mut(&mut self, i: usize) -> &mut Endpoint {
        match self.engine.node_mut(self.hosts[i]) {
            Node::Host(h) => &mut h.endpoint,
            Node::Switch(_) => unreachable!("hosts holds host nodes only"),
        }
    }

    /// Host `i`.
    pub fn host(&self, i: usize) -> &Host {
        match self.engine.node(self.hosts[i]) {
            Node::Host(h) => h,
            Node::Switch(_) => unreachable!("hosts holds host nodes only"),
        }
    }

    /// Host `i`, to give it an application.
    pub fn host_mut(&mut self, i: usize) -> &mut Host {
        match self.engine.node_mut(self.hosts[i]) {
            Node::Host(h) => h,
            Node::Switch(_) => unreachable!("hosts holds host nodes only"),
        }
    }

    /// Every host, in host order, taken out of the network: a driver other than the
    /// simulator (the live lab) runs the very hosts the simulator would.
    pub fn into_hosts(self) -> Vec<Host> {
        let mut nodes: Vec<Option<Node>> = self.engine.into_nodes().into_iter().map(Some).collect();
        self.hosts
            .iter()
            .map(|&n| match nodes[n].take() {
                Some(Node::Host(h)) => *h,
                _ => unreachable!("hosts holds host nodes only, each once"),
            })
            .collect()
    }

    /// Switch `i` (in [`Network::switches`] order).
    pub fn switch(&self, i: usize) -> &Switch {
        match self.engine.node(self.switches[i]) {
            Node::Switch(s) => s,
            Node::Host(_) => unreachable!("switches holds switch nodes only"),
        }
    }
}

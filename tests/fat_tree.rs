//! The three-tier fat tree in virtual time: a flow climbs only as high as its receiver
//! needs, ECMP with one hash everywhere polarizes the tiers where a seed per switch does
//! not, the links between switches run at their own rate, and the HPCC paper's fabric
//! builds as its topology file has it.

use rocelab::sim::run::{Outcome, run};
use rocelab::sim::scenario::{Scenario, Shape};

/// A fat tree of 2 pods, each 2 ToRs of 2 hosts and 2 aggregation switches, 4 cores
/// (switches tor0-3, agg0-3, core0-3; hosts 0-3 in pod 0, 4-7 in pod 1), with `rest`
/// (flows, workloads, topology keys) after the topology table.
fn small(rest: &str) -> Scenario {
    let text = format!(
        "seed = 1\nduration_ms = 1\n\
         [topology]\nkind = \"fat-tree\"\npods = 2\ntors_per_pod = 2\naggs_per_pod = 2\n\
         cores = 4\nhosts_per_tor = 2\nlink_gbps = 100\nfabric_gbps = 400\n{rest}"
    );
    Scenario::from_toml("fat-tree", &text, None).expect("a valid fat tree")
}

/// The ports, of those named (`switch:port`), that sent anything.
fn busy(o: &Outcome, ports: &[&str]) -> Vec<String> {
    ports
        .iter()
        .filter(|name| {
            let (switch, port) = name.split_once(':').expect("switch:port");
            let i = o
                .net
                .switch_names
                .iter()
                .position(|n| n == switch)
                .expect("a switch of the tree");
            let sw = o.net.switch(i);
            let p = sw.port_index(port).expect("a port of the switch");
            sw.counters(p).classes.iter().any(|c| c.tx_frames > 0)
        })
        .map(|n| (*n).to_owned())
        .collect()
}

/// Every switch port of the small tree that carries traffic up or across: the ToRs'
/// uplinks, the aggregation switches' uplinks, and the cores' ports.
const UP: [&str; 8] = [
    "tor0:t0up0",
    "tor0:t0up1",
    "agg0:a0up0",
    "agg0:a0up1",
    "agg1:a1up0",
    "agg1:a1up1",
    "core0:c0p1",
    "core1:c1p1",
];

#[test]
fn a_flow_climbs_only_as_high_as_its_receiver_needs() {
    // The data goes up from host 0 on one path; its ACKs come back on a path of their own
    // (the reverse flow hashes apart), so only the ports the data leaves by are counted.
    let one = |to: usize| {
        let s = small(&format!(
            "ecmp_seed = \"per-switch\"\n\
             [[flow]]\nfrom = 0\nto = {to}\nbytes = 65536\nmessage_bytes = 65536\n"
        ));
        let o = run(&s).expect("a run");
        assert!(
            o.qps[0].completion_ns.is_some(),
            "to host {to}: it finished"
        );
        o
    };
    let cores: Vec<String> = (0..4).map(|c| format!("core{c}:c{c}p1")).collect();
    let cores: Vec<&str> = cores.iter().map(String::as_str).collect();
    // Under its own ToR: nothing goes up.
    let o = one(1);
    assert!(busy(&o, &UP).is_empty(), "{:?}", busy(&o, &UP));
    // Another ToR of the pod: one uplink of tor0, no aggregation uplink, no core.
    let o = one(2);
    assert_eq!(busy(&o, &UP[..2]).len(), 1);
    assert!(busy(&o, &UP[2..6]).is_empty() && busy(&o, &cores).is_empty());
    // Another pod: one uplink of tor0, one of pod 0's aggregation switches', one core.
    let o = one(4);
    assert_eq!(busy(&o, &UP[..2]).len(), 1);
    assert_eq!(busy(&o, &UP[2..6]).len(), 1);
    assert_eq!(busy(&o, &cores).len(), 1);
}

#[test]
fn one_hash_everywhere_leaves_half_the_cores_idle_and_a_seed_per_switch_uses_them_all() {
    // Every host sends to every other; what leaves pod 0 upward (its flows to pod 1 and
    // the ACKs of pod 1's) crosses an aggregation switch's uplink. With one hash in every
    // switch, a ToR's choice of aggregation switch (hash mod 2) is also that switch's
    // choice of core (hash mod 2): aggregation switch 0 only ever sends up to its first
    // core, 1 to its second.
    let flows = "[[workload]]\nkind = \"all-to-all\"\nbytes = 8192\n";
    let pod0_up = &UP[2..6];
    let shared = run(&small(&format!("ecmp_seed = \"shared\"\n{flows}"))).expect("a run");
    assert_eq!(busy(&shared, pod0_up), ["agg0:a0up0", "agg1:a1up1"]);
    let seeded = run(&small(&format!("ecmp_seed = \"per-switch\"\n{flows}"))).expect("a run");
    assert_eq!(busy(&seeded, pod0_up), pod0_up);
}

#[test]
fn the_links_between_switches_run_at_their_own_rate() {
    let s = small("[[flow]]\nfrom = 0\nto = 4\n");
    let o = run(&s).expect("a run");
    let rate = |sw: usize, port: usize| o.net.switch(sw).config().ports[port].bits_per_sec;
    // tor0: hosts on ports 0-1 at 100 Gb/s, uplinks on 2-3 at 400; every other port too.
    assert_eq!(rate(0, 0), 100_000_000_000);
    assert_eq!(rate(0, 2), 400_000_000_000);
    assert_eq!(rate(4, 0), 400_000_000_000);
    assert_eq!(rate(8, 1), 400_000_000_000);
    // The base RTT of the longest path (6 links): two host links' round trips at 100 Gb/s
    // and four at 400, each data frame of 1024 + 58 B and ACK of 62 B with 24 B of
    // preamble, gap and FCS, plus 1 µs of cable per link each way.
    let t = &s.topology;
    let host = ((1082 + 24) * 8 + (62 + 24) * 8) as f64 / 100.0;
    let fabric = ((1082 + 24) * 8 + (62 + 24) * 8) as f64 / 400.0;
    let expected = 2.0 * host + 4.0 * fabric + 12.0 * 1000.0;
    assert!(
        (t.base_rtt(1024).0 as f64 - expected).abs() <= 6.0,
        "{} ns against {expected}",
        t.base_rtt(1024).0
    );
    assert_eq!(t.hops(0, 1), 2);
    assert_eq!(t.hops(0, 2), 4);
    assert_eq!(t.hops(0, 7), 6);
}

#[test]
fn the_hpcc_papers_fabric_builds_as_its_topology_file_has_it() {
    // fat.txt of the HPCC simulator: 320 servers, 20 ToRs, 20 aggregation switches,
    // 16 cores; 320 host links at 100 Gb/s, 80 ToR-aggregation and 80 aggregation-core
    // links at 400 Gb/s.
    let s = Scenario::load_edited("hpcc-paper", |_| Ok(())).expect("the built-in");
    let Shape::FatTree(f) = s.topology.shape else {
        panic!("a fat tree, not {:?}", s.topology.shape)
    };
    assert_eq!((f.pods, f.tors_per_pod, f.aggs_per_pod), (5, 4, 4));
    assert_eq!((f.cores, f.hosts_per_tor, f.hosts()), (16, 16, 320));
    assert_eq!(f.links(), 160);
    assert_eq!(s.topology.fabric_bits_per_sec, 400_000_000_000);
    let net = s.build(1);
    assert_eq!(net.switches.len(), 56);
    assert_eq!(net.hosts.len(), 320);
    // Every core has a port to each pod; each aggregation switch 4 down and 4 up.
    for (i, name) in net.switch_names.iter().enumerate() {
        let ports = net.switch(i).port_count();
        let expected = match &name[..3] {
            "tor" => 20,
            "agg" => 8,
            _ => 5,
        };
        assert_eq!(ports, expected, "{name}");
    }
    // The ToRs and the aggregation switches choose among their uplinks; cores do not.
    assert_eq!(net.uplinks.len(), 40);
}

#[test]
fn a_fat_tree_that_cannot_be_built_is_refused_with_the_key() {
    let fat = "[topology]\nkind = \"fat-tree\"\npods = 2\ntors_per_pod = 2\naggs_per_pod = 2\n\
               cores = 4\nhosts_per_tor = 2\nlink_gbps = 100\n";
    let refused = |text: &str| {
        let text = format!("seed = 1\nduration_ms = 1\n{text}[[flow]]\nfrom = 0\nto = 1\n");
        Scenario::from_toml("t", &text, None)
            .expect_err("refused")
            .to_string()
    };
    let e = refused(&fat.replace("cores = 4", "cores = 3"));
    assert!(
        e.contains("topology.cores") && e.contains("multiple of aggs_per_pod"),
        "{e}"
    );
    let e = refused(&fat.replace("pods = 2\n", ""));
    assert!(e.contains("topology.pods") && e.contains("needed"), "{e}");
    let e = refused(&format!("{fat}leaves = 2\n"));
    assert!(
        e.contains("topology.leaves") && e.contains("not used"),
        "{e}"
    );
    let e = refused(&format!("{fat}fabric_gbps = 0\n"));
    assert!(e.contains("topology.fabric_gbps"), "{e}");
    let e = refused(
        "[topology]\nkind = \"leaf-spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n\
         link_gbps = 100\nfabric_gbps = 400\n",
    );
    assert!(
        e.contains("topology.fabric_gbps") && e.contains("only a fat tree"),
        "{e}"
    );
    let e = refused(&format!(
        "{fat}[topology.switch_load_balancing]\ntor0 = \"adaptive\"\n"
    ));
    assert!(
        e.contains("topology.switch_load_balancing") && e.contains("fat tree"),
        "{e}"
    );
}

#[test]
fn incasts_without_a_receiver_draw_one_per_burst_at_the_period_their_load_sets() {
    // 8 hosts at 100 Gb/s; bursts of 3 x 100 kB at 10 % of the 8 links: 2.4 Mb every
    // 2.4 Mb / 80 Gb/s = 30 µs.
    let s = small(
        "[[workload]]\nkind = \"incast-bursts\"\nfan_in = 3\nbytes = 100000\nload = 0.1\n\
         duration_us = 300\n",
    );
    assert_eq!(s.jobs.len(), 30, "10 bursts of 3");
    let mut receivers = std::collections::BTreeSet::new();
    for (k, burst) in s.jobs.chunks(3).enumerate() {
        let to = burst[0].to;
        receivers.insert(to);
        for j in burst {
            assert_eq!(j.arrival.0, 30_000 * k as u64, "burst {k}");
            assert_eq!(j.to, to, "one receiver per burst");
            assert_ne!(j.from, to);
        }
        let mut from: Vec<usize> = burst.iter().map(|j| j.from).collect();
        from.dedup();
        assert_eq!(from.len(), 3, "three senders: {burst:?}");
    }
    assert!(receivers.len() > 3, "receivers drawn afresh: {receivers:?}");
    let e = Scenario::from_toml(
        "t",
        "seed = 1\nduration_ms = 1\n[topology]\nkind = \"star\"\nhosts = 4\nlink_gbps = 100\n\
         [[workload]]\nkind = \"incast-bursts\"\nbytes = 1000\nload = 0.1\nperiod_us = 10\n",
        None,
    )
    .expect_err("both")
    .to_string();
    assert!(
        e.contains("workload[0].load") && e.contains("not both"),
        "{e}"
    );
}

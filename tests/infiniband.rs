//! InfiniBand in the simulator (`fabric = "ib"`): credit-based link-level flow control
//! per VL, checked against closed forms computed here from the IBA's rules and the
//! simulator's framing; and `rocelab compare`, which sets the fabrics side by side.

mod common;

use rocelab::sim::run::{Outcome, run};
use rocelab::sim::scenario::Scenario;

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml("test", text, None).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn outcome(text: &str) -> (Scenario, Outcome) {
    let s = scenario(text);
    let o = run(&s).unwrap();
    (s, o)
}

/// The InfiniBand packet (LRH to VCRC) standing for an untagged RoCEv2 IPv4 frame of
/// `len` bytes: the Ethernet (14), IPv4 (20) and UDP (8) headers give way to an LRH (8);
/// BTH, payload and ICRC stay; a VCRC (2) follows (IBA vol. 1, 7.7).
fn ib_packet(len: usize) -> u64 {
    (len - 14 - 20 - 8 + 8 + 2) as u64
}

/// Its bytes on the wire: the packet and a start and an end delimiter, no gap (the
/// simulator's framing, docs/infiniband.md).
fn ib_wire_bytes(len: usize) -> u64 {
    ib_packet(len) + 2
}

/// Credit blocks of 64 bytes (IBA vol. 1, 7.9.4.1) a packet takes.
fn blocks_of(len: usize) -> u64 {
    ib_packet(len).div_ceil(64)
}

/// A middle packet of a WRITE with a 4096-byte MTU: Ethernet 14, IPv4 20, UDP 8, BTH 12,
/// payload, ICRC 4.
const MIDDLE_FRAME: usize = 14 + 20 + 8 + 12 + 4096 + 4;

/// One flow from host 0 to host 1 through one switch at 100 Gb/s over 1 µs cables,
/// `buffer` bytes of credit per VL, updates sent at once, the switch storing and
/// forwarding with no latency of its own (the credit loop is then the link's alone).
fn one_link(buffer: u64) -> String {
    format!(
        r#"
duration_ms = 6
measure_from_ms = 1
fabric = "ib"
[ib]
buffer_per_vl_bytes = {buffer}
update_ns = 0
switch_latency_ns = 0
cut_through = false
[topology]
kind = "star"
hosts = 2
link_gbps = 100
delay_ns = 1000
[endpoint]
mtu = 4096
ack_every = 1024
[[flow]]
from = 0
to = 1
message_bytes = 1048576
"#
    )
}

#[test]
fn one_link_sustains_the_lesser_of_line_rate_and_credit_over_round_trip() {
    let rate = 100e9;
    let delay = 1000.0;
    // A packet and a flow-control packet, each rounded up to the simulator's nanosecond.
    let packet_ns = (ib_wire_bytes(MIDDLE_FRAME) as f64 * 8.0 / rate * 1e9).ceil();
    let fc_ns = ((6 + 2) as f64 * 8.0 / rate * 1e9).ceil();
    // The credit loop: the packet is serialised and crosses the cable, the switch
    // forwards it at once (its egress is idle) and frees its blocks, and the update
    // crosses back.
    let round_trip = packet_ns + delay + fc_ns + delay;
    let per_packet = blocks_of(MIDDLE_FRAME);
    let line = 4096.0 * 8.0 / (ib_wire_bytes(MIDDLE_FRAME) as f64 * 8.0 / rate) / 1e9;
    for buffer in [8192u64, 16384, 32768, 65536, 131072] {
        let window = buffer / 64 / per_packet;
        let credit = window as f64 * 4096.0 * 8.0 / round_trip;
        let expected = line.min(credit);
        let (_, o) = outcome(&one_link(buffer));
        let got = o.qps[0].gbps;
        // One packet's payload over the 5 ms measured.
        let one_packet = 4096.0 * 8.0 / 5e-3 / 1e9;
        assert!(
            (got - expected).abs() <= one_packet,
            "buffer {buffer} B: {window} packets per {round_trip} ns: expected {expected:.4} Gb/s, got {got:.4}"
        );
        assert_eq!(credit_overruns(&o), 0);
    }
}

/// Packets received beyond an advertised buffer, anywhere: 0 unless a sender broke
/// the rule.
fn credit_overruns(o: &Outcome) -> u64 {
    let net = &o.net;
    let mut n = 0;
    for vl in 0..8 {
        for h in 0..net.hosts.len() {
            n += net
                .endpoint(h)
                .credit_stats(vl, net.engine.now())
                .expect("credit")
                .overruns;
        }
        for s in 0..net.switches.len() {
            let sw = net.switch(s);
            for p in 0..sw.port_count() {
                n += sw
                    .credit_stats(p, vl, net.engine.now())
                    .expect("credit")
                    .overruns;
            }
        }
    }
    n
}

/// Frames the switches dropped, every cause.
fn switch_drops(o: &Outcome) -> u64 {
    let net = &o.net;
    (0..net.switches.len())
        .map(|s| {
            let sw = net.switch(s);
            (0..sw.port_count())
                .map(|p| {
                    sw.counters(p)
                        .classes
                        .iter()
                        .map(|c| c.dropped())
                        .sum::<u64>()
                })
                .sum::<u64>()
        })
        .sum()
}

fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    sum * sum / (x.len() as f64 * squares)
}

/// An `n`:1 incast at 100 Gb/s on one switch, credits as default (the most the counters
/// advertise, above the bandwidth-delay product of 1 µs cables).
fn incast(n: usize) -> String {
    let mut text = format!(
        "duration_ms = 3\nmeasure_from_ms = 1\nfabric = \"ib\"\n[topology]\nkind = \"star\"\nhosts = {}\nlink_gbps = 100\ndelay_ns = 1000\n[endpoint]\nmtu = 4096\n",
        n + 1
    );
    for i in 0..n {
        text.push_str(&format!(
            "[[flow]]\nfrom = {i}\nto = {n}\nmessage_bytes = \"64K\"\n"
        ));
    }
    text
}

#[test]
fn an_incast_of_any_size_gets_line_rate_in_equal_shares_and_drops_nothing() {
    // A 64 KiB message: 16 packets, the first with a RETH.
    let first = ib_wire_bytes(MIDDLE_FRAME + 16);
    let rest = ib_wire_bytes(MIDDLE_FRAME);
    let line = 65536.0 * 8.0 / ((first + 15 * rest) as f64 * 8.0 / 100e9) / 1e9;
    for n in [2, 8, 64] {
        let (_, o) = outcome(&incast(n));
        let rates: Vec<f64> = o
            .qps
            .iter()
            .filter(|q| q.gbps > 0.0)
            .map(|q| q.gbps)
            .collect();
        assert_eq!(rates.len(), n);
        let total: f64 = rates.iter().sum();
        assert!(
            (total - line).abs() / line < 0.002,
            "{n}:1: total {total:.3} Gb/s, line rate {line:.3}"
        );
        assert!(
            jain(&rates) >= 0.99,
            "{n}:1: Jain {:.4} of {rates:?}",
            jain(&rates)
        );
        assert_eq!(switch_drops(&o), 0, "{n}:1");
        assert_eq!(credit_overruns(&o), 0, "{n}:1");
        let retransmitted: u64 = o
            .qps
            .iter()
            .map(|q| q.status.counters.retransmitted_packets)
            .sum();
        assert_eq!(retransmitted, 0, "{n}:1");
    }
}

/// IB congestion control's `marking_rate` (the IBA's `Marking_Rate`): the switch marks
/// FECN on one packet in `marking_rate + 1` above the threshold, so the senders take fewer
/// BECNs per packet, climb their tables less far and keep more of the link; the fabric's
/// description says so, and nothing is dropped either way. (Not 1/16 as many marks per
/// packet: with fewer BECNs the queue stays above the threshold longer. The spacing itself
/// is tested in tests/switch_ecn.rs.)
#[test]
fn a_marking_rate_spaces_the_fecn_marks_and_keeps_more_of_the_link() {
    let run_with = |rate: u16| {
        let text = format!(
            "{}[ib.cc]\nenabled = true\nmarking_rate = {rate}\n",
            incast(2)
        );
        let (s, o) = outcome(&text);
        let total: f64 = o.qps.iter().map(|q| q.gbps).sum();
        let marked: u64 = o.qps.iter().map(|q| q.ce_marked).sum();
        let sent: u64 = o
            .qps
            .iter()
            .map(|q| q.status.counters.data_packets_sent)
            .sum();
        assert_eq!(switch_drops(&o), 0, "marking_rate {rate}");
        (s.fabric.describe(), total, marked as f64 / sent as f64)
    };
    let (every, every_gbps, every_fraction) = run_with(0);
    let (spaced, spaced_gbps, spaced_fraction) = run_with(15);
    assert!(!every.contains("one packet in"), "{every}");
    assert!(
        spaced.contains("FECN above 32 KB on one packet in 16"),
        "{spaced}"
    );
    assert!(
        spaced_fraction < every_fraction,
        "marked fraction {spaced_fraction:.4} with 15, {every_fraction:.4} with 0"
    );
    assert!(
        spaced_gbps > every_gbps * 1.2,
        "{spaced_gbps:.2} Gb/s with 15, {every_gbps:.2} with 0"
    );
}

#[test]
fn credit_stalls_spread_upstream_and_slow_a_victim_as_pfc_does() {
    let text = rocelab::sim::scenario::scenario_text("victim-flow").expect("built in");
    let s = Scenario::load_edited("victim-flow", |t| {
        t.remove("variant");
        t.insert("fabric".into(), "ib".into());
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let o = run(&s).unwrap();
    let victim = s.flows.iter().find(|f| f.from == 2).expect("the victim");
    assert_eq!(victim.to, 7);
    let goodput = |h: usize| o.qps.iter().find(|q| q.host == h).map(|q| q.gbps).unwrap();
    // Its max-min fair share: the spine link less the two incast senders of its leaf at
    // 25 Gb/s each, 50 Gb/s on the wire, 49 of payload.
    let fair = 49.0;
    let got = goodput(2);
    assert!(
        got < 0.8 * fair,
        "the victim got {got:.2} Gb/s of its {fair}"
    );
    // The spine's port to leaf 1 waited for credit: the stall spread upstream.
    let spine = o.net.switches.len() - 1;
    let sw = o.net.switch(spine);
    let now = o.net.engine.now();
    let stalled = (0..sw.port_count())
        .map(|p| sw.credit_stats(p, 3, now).unwrap().credit_stalled.0)
        .max()
        .unwrap();
    assert!(
        stalled > now.0 / 4,
        "the spine waited {stalled} ns for credit"
    );
    assert_eq!(switch_drops(&o), 0);
    assert_eq!(credit_overruns(&o), 0);
}

#[test]
fn a_flow_alone_takes_its_ideal_fct_on_infiniband_too() {
    let topologies = [
        (
            "[topology]\nkind = \"star\"\nhosts = 4\nlink_gbps = 100\ndelay_ns = 1000",
            0,
            3,
        ),
        (
            "[topology]\nkind = \"leaf-spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\nlink_gbps = 400\ndelay_ns = 500",
            0,
            3,
        ),
    ];
    for (topology, from, to) in topologies {
        for bytes in [1u64, 1000, 100_000, 5_000_000] {
            let text = format!(
                "duration_ms = 50\nfabric = \"ib\"\n{topology}\n[[workload]]\nkind = \"incast-bursts\"\nhosts = [{from}, {to}]\nto = {to}\nbytes = {bytes}\nperiod_us = 2000\nbursts = 3\n"
            );
            let (s, o) = outcome(&text);
            let hops = s.topology.hops(from, to) as u64;
            assert_eq!(o.flows.len(), 3);
            for f in &o.flows {
                let fct = f.fct().expect("finished").0;
                // The first flow starts with the links: it waits for the first
                // advertisement of credit, one cable and one link packet away.
                let wait = if f.arrival.0 == 0 {
                    s.topology.delay.0 + 1
                } else {
                    0
                };
                let ideal = f.ideal.0 + wait;
                // Whole nanoseconds: within one per link crossed, the data's and the ACK's
                // (as on RoCE, tests/workloads.rs), and the sender's own link packets (the
                // credit of the ACKs it takes in): at most 8 bytes per 4096 bytes' time,
                // the default update interval.
                let tolerance = 2 * hops + 1 + ideal * 8 / 4104;
                assert!(
                    fct.abs_diff(ideal) <= tolerance,
                    "{bytes} B over {hops} links: FCT {fct} ns, ideal {ideal} ns"
                );
            }
        }
    }
}

/// `rocelab compare` on the victim-flow scenario: every fabric in order; the victim held to
/// a third of its fair share by PFC alone and by credits alone (head-of-line blocking
/// alike), and given much of it back by DCQCN and by IB congestion control, which stops
/// the credit stalls; a JSON document whose keys docs/json.md lists, and an SVG per
/// metric.
#[test]
fn compare_sets_the_fabrics_side_by_side_as_text_json_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("cmp");
    let v = common::json_of(
        std::process::Command::new(env!("CARGO_BIN_EXE_rocelab")).args([
            "compare",
            "victim-flow",
            "--fabrics",
            "roce,roce-pfc,ib,ib-cc",
            "--json",
            "-",
            "--out",
            out_dir.to_str().unwrap(),
        ]),
    );
    let missing = common::undocumented_keys("compare", &v);
    assert!(missing.is_empty(), "not in docs/json.md: {missing:?}");
    let fabrics = v["fabrics"].as_array().unwrap();
    let names: Vec<&str> = fabrics
        .iter()
        .map(|f| f["fabric"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["roce", "roce-pfc", "ib", "ib-cc"]);
    let victim = |i: usize| fabrics[i]["victims"][0]["goodput_gbps"].as_f64().unwrap();
    let fair = |i: usize| fabrics[i]["victims"][0]["fair_gbps"].as_f64().unwrap();
    for (i, blocked) in [(0, false), (1, true), (2, true), (3, false)] {
        let share = victim(i) / fair(i);
        assert_eq!(
            share < 0.4,
            blocked,
            "{}: victim at {share:.2} of its share",
            names[i]
        );
    }
    let cc = &fabrics[3]["summary"];
    assert!(cc["ce_marked"].as_u64().unwrap() > 0);
    assert_eq!(cc["cnps_sent"], cc["ce_marked"], "a BECN per FECN");
    let stalled = |i: usize| {
        let s = &fabrics[i]["summary"];
        s["host_credit_stalled_ns"].as_u64().unwrap()
            + s["switch_credit_stalled_ns"].as_u64().unwrap()
    };
    assert!(
        stalled(3) * 100 < stalled(2),
        "{} vs {}",
        stalled(3),
        stalled(2)
    );
    for f in fabrics {
        let victim = &f["victims"][0];
        assert_eq!(
            (victim["from"].as_u64(), victim["to"].as_u64()),
            (Some(2), Some(7))
        );
        let fair = victim["fair_gbps"].as_f64().unwrap();
        // Half the spine link, as payload in 64 KiB messages of 4 KiB packets.
        assert!((fair - 49.0).abs() < 1.0, "{fair}");
        assert_eq!(f["summary"]["lossless_drops"].as_u64(), Some(0));
    }
    let ib = &fabrics[2]["summary"];
    assert_eq!(ib["switch_pfc_sent"].as_u64(), Some(0));
    assert!(ib["switch_credit_stalled_ns"].as_u64().unwrap() > 0);
    assert!(ib["ingress_peak_bytes"].as_u64().unwrap() <= 131_072);
    let pfc = &fabrics[1]["summary"];
    assert!(pfc["switch_pfc_sent"].as_u64().unwrap() > 0);
    assert_eq!(pfc["switch_credit_stalled_ns"].as_u64(), Some(0));
    for svg in ["goodput.svg", "victim.svg", "buffer.svg", "stalls.svg"] {
        let text = std::fs::read_to_string(out_dir.join(svg)).unwrap();
        assert!(
            text.contains("IB credits") && text.contains("RoCE PFC only"),
            "{svg}"
        );
    }
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("compare.json")).unwrap())
            .unwrap();
    assert_eq!(saved, v);
}

#[test]
fn compare_refuses_unknown_fabrics_and_bad_keys_before_running() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&["compare", "incast", "--fabrics", "roce,ethernet"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("'ethernet' is not a fabric setting"), "{err}");
    let o = run(&["compare", "incast", "--set", "ib.buffer_per_vl_bytes=1K"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("ib.buffer_per_vl_bytes") && err.contains("one full-size packet"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "nothing ran");
}

#[test]
fn bad_ib_tables_are_refused_with_the_key() {
    let base = "duration_ms = 1\n[topology]\nkind = \"star\"\nhosts = 2\nlink_gbps = 100\n[[flow]]\nfrom = 0\nto = 1\n";
    // `top` goes before the tables, `ib` is the [ib] table's body.
    let refused = |top: &str, ib: &str| {
        let ib = if ib.is_empty() {
            String::new()
        } else {
            format!("[ib]\n{ib}\n")
        };
        Scenario::from_toml("t", &format!("{top}\n{base}{ib}"), None)
            .map(|_| ())
            .expect_err(top)
            .to_string()
    };
    let ib = "fabric = \"ib\"";
    assert!(refused("fabric = \"fc\"", "").contains("give \"roce\", \"ib\" or \"iwarp\""));
    assert!(refused("", "update_ns = 5").contains("give fabric = \"ib\" too"));
    assert!(refused(ib, "buffer_per_vl_bytes = \"256K\"").contains("at most 131072"));
    assert!(refused(ib, "sl_to_vl = [0, 1]").contains("give 8 VLs"));
    assert!(refused(ib, "sl_to_vl = [0, 1, 2, 3, 4, 5, 6, 15]").contains("VL 15"));
    assert!(refused(ib, "refresh_ns = 0").contains("ib.refresh_ns"));
    assert!(refused(ib, "credits = 5").contains("credits"));
    assert!(refused(ib, "vl_arb_low = [[9, 4]]").contains("VL 9"));
    assert!(refused(ib, "vl_arb_low = [[1, 4]]").contains("would never be sent"));
    assert!(refused(ib, "vl_high_limit = 256").contains("256"));
    assert!(refused(ib, "cc = { enabled = true, table = [[4, 1]] }").contains("shift is 0-3"));
    assert!(
        refused(ib, "cc = { enabled = true, ccti_limit = 200 }")
            .contains("past the table's last index, 127")
    );
    assert!(refused(ib, "cc = { enabled = true, ccti_timer = 0 }").contains("ib.cc.ccti_timer"));
    assert!(refused(ib, "cc = { enabled = true, marking = 3 }").contains("marking"));
}

/// One packet alone across a leaf-spine path (three switches, four links): cut-through
/// switches forward once the LRH (8 bytes) is in, so the one-way latency is three header
/// times, three switch latencies, four cables and one whole packet; store-and-forward
/// ones wait for each whole packet. A 1-byte flow's FCT is the data's one-way latency
/// and its ACK's.
#[test]
fn cut_through_latency_is_the_header_times_switch_latencies_and_cables() {
    let rate = 100e9;
    let (delay, latency) = (500.0, 130.0);
    let ns = |bytes: u64| bytes as f64 * 8.0 / rate * 1e9;
    // The data packet: 1 byte of payload behind BTH and RETH; the ACK: BTH and AETH.
    let data = ib_wire_bytes(14 + 20 + 8 + 12 + 16 + 1 + 4);
    let ack = ib_wire_bytes(14 + 20 + 8 + 12 + 4 + 4);
    for cut_through in [true, false] {
        let one_way = |packet: u64| {
            let lead = if cut_through { ns(8) } else { ns(packet) };
            3.0 * (lead + delay + latency) + ns(packet) + delay
        };
        let expected = one_way(data) + one_way(ack);
        let text = format!(
            "duration_ms = 5\nfabric = \"ib\"\n[ib]\nswitch_latency_ns = {latency}\ncut_through = {cut_through}\n[topology]\nkind = \"leaf-spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\nlink_gbps = 100\ndelay_ns = {delay}\n[[workload]]\nkind = \"incast-bursts\"\nhosts = [0, 3]\nto = 3\nbytes = 1\nperiod_us = 1000\nbursts = 2\n"
        );
        let (s, o) = outcome(&text);
        assert_eq!(s.topology.hops(0, 3), 4);
        // The second flow: the links have long exchanged their first credits.
        let f = &o.flows[1];
        let fct = f.fct().expect("finished").0 as f64;
        // The simulator's nanoseconds: at most one up per link crossed, both ways.
        assert!(
            fct >= expected - 0.5 && fct <= expected + 8.0,
            "cut-through {cut_through}: FCT {fct} ns, expected {expected:.2}"
        );
        assert!(
            (f.ideal.0 as f64 - expected).abs() <= 0.5,
            "ideal {:?}",
            f.ideal
        );
    }
    // The RoCEv2 switch stores and forwards, with its own latency (topology's): each
    // frame whole (with FCS and preamble) at every hop.
    let one_way = |frame: u64| 3.0 * (ns(frame + 12) + delay + latency) + ns(frame + 12) + delay;
    let expected = one_way(14 + 20 + 8 + 12 + 16 + 1 + 4) + one_way(14 + 20 + 8 + 12 + 4 + 4);
    let text = format!(
        "duration_ms = 5\n[topology]\nkind = \"leaf-spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\nlink_gbps = 100\ndelay_ns = {delay}\nswitch_latency_ns = {latency}\n[[workload]]\nkind = \"incast-bursts\"\nhosts = [0, 3]\nto = 3\nbytes = 1\nperiod_us = 1000\nbursts = 2\n"
    );
    let (_, o) = outcome(&text);
    let fct = o.flows[1].fct().expect("finished").0 as f64;
    assert!(
        fct >= expected - 0.5 && fct <= expected + 8.0,
        "RoCEv2: FCT {fct} ns, expected {expected:.2}"
    );
}

/// Ring all-reduce on InfiniBand: every size right, and every rank's every step timed
/// (the jitter `compare` reports), on either fabric.
#[test]
fn ring_allreduce_is_right_on_infiniband_and_its_steps_are_timed() {
    for fabric in ["roce", "ib"] {
        let s = Scenario::load_edited("ring", |t| {
            rocelab::config::set_key(t, &format!("fabric=\"{fabric}\""))?;
            rocelab::config::set_key(t, "allreduce.max_bytes=\"1M\"")
        })
        .unwrap();
        let o = run(&s).unwrap();
        assert_eq!(o.allreduce.len(), 8, "8 KB to 1 MB");
        for row in &o.allreduce {
            assert_eq!(row.result.wrong, Some(0), "{fabric} {}", row.result.size);
            let st = row.steps;
            // 4 ranks, 2 (N - 1) steps each.
            assert_eq!(st.count, 4 * 6, "{fabric} {}", row.result.size);
            assert!(st.min_ns > 0 && st.min_ns <= st.p50_ns && st.p50_ns <= st.p99_ns);
            assert!(st.p99_ns <= st.max_ns);
            assert!(st.max_ns <= row.result.time_ns.unwrap());
        }
    }
}

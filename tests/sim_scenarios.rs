//! The built-in scenarios that show one lossless mechanism each, checked against numbers
//! derived here: line-rate goodput from the frame overheads, the watchdog's detection
//! and restoration windows from its timings and the storm's schedule, and counts that
//! must balance exactly.

use rocelab::endpoint::fault::PauseStorm;
use rocelab::link::frame_time;
use rocelab::sim::run::{Outcome, run};
use rocelab::sim::scenario::Scenario;
use rocelab::sim::summary::{Summary, summary};
use rocelab::time::Nanos;
use rocelab::wire::pfc::FRAME_LEN as PFC_FRAME_LEN;

/// Bytes a RoCEv2 WRITE-only packet of `payload` bytes takes on the wire: Ethernet 14,
/// IPv4 20, UDP 8, BTH 12, RETH 16, ICRC 4, FCS 4, preamble 8 and inter-frame gap 12.
fn wire_bytes(payload: u64) -> u64 {
    message_wire_bytes(payload, payload)
}

/// Bytes a WRITE message of `message` bytes takes on the wire in packets of at most
/// `mtu` bytes of payload: each packet's headers and trailers as above, RETH on the first.
fn message_wire_bytes(message: u64, mtu: u64) -> u64 {
    let packets = message.div_ceil(mtu);
    message + packets * (14 + 20 + 8 + 12 + 4 + 4 + 8 + 12) + 16
}

/// Bytes of that packet a receive buffer holds: the frame without FCS, preamble and gap.
fn frame_bytes(payload: u64) -> u64 {
    payload + 14 + 20 + 8 + 12 + 16 + 4
}

fn run_all(name: &str) -> Vec<(Scenario, Outcome, Summary)> {
    let scenario = Scenario::load(name).expect("a built-in scenario");
    let runs = if scenario.variants.is_empty() {
        vec![scenario]
    } else {
        scenario.variants.clone()
    };
    runs.into_iter()
        .map(|s| {
            let outcome = run(&s).expect("the scenario runs");
            let sum = summary(&s, &outcome);
            (s, outcome, sum)
        })
        .collect()
}

fn assert_within(got: f64, want: f64, tolerance: f64, what: &str) {
    assert!(
        (got - want).abs() <= want * tolerance,
        "{what}: {got:.4} Gb/s, expected {want:.4} within {:.1} %",
        tolerance * 100.0
    );
}

#[test]
fn pfc_incast_pauses_every_sender_and_loses_nothing_at_line_rate() {
    let runs = run_all("pfc-incast");
    let (s, outcome, sum) = &runs[0];
    let message = s.flows[0].message_bytes as u64;
    let line = s.topology.bits_per_sec as f64 / 1e9 * message as f64 / wire_bytes(message) as f64;
    assert_within(sum.goodput_gbps, line, 0.01, "pfc-incast goodput");
    assert_eq!(sum.lossless_drops + sum.lossy_drops, 0, "nothing dropped");
    assert_eq!(sum.retransmitted, 0, "nothing sent twice");
    assert_eq!(sum.ce_marked, 0, "ECN is off");
    let sw = outcome.net.switch(0);
    for f in &s.flows {
        let port = sw.port_index(&format!("h{}", f.from)).unwrap();
        assert!(
            sw.counters(port).classes[3].tx_pause_frames > 0,
            "the switch paused sender h{}",
            f.from
        );
    }
}

#[test]
fn what_happened_tells_the_pauses_and_their_time() {
    let runs = run_all("pfc-incast");
    let (s, outcome, _) = &runs[0];
    let story = rocelab::report::sim::what_happened(s, outcome);
    assert!(story.starts_with("what happened\n"), "{story}");
    assert!(
        story.contains("sw held the peer on h0 in XOFF for priority 3"),
        "{story}"
    );
    assert!(story.contains("h0 was paused"), "{story}");
    assert!(story.contains("the lossless class lost nothing"), "{story}");
    let sw = outcome.net.switch(0);
    let h0 = sw.port_index("h0").unwrap();
    let held = sw.xoff_time(h0, 3, outcome.net.engine.now()).0 as f64;
    assert!(held > 0.0 && held < outcome.net.engine.now().0 as f64);
    // The host, from the frames it received, was paused as long as the switch held it
    // (each XOFF and XON a link's delay later).
    let paused = outcome
        .net
        .endpoint(0)
        .paused_time(3, outcome.net.engine.now())
        .0 as f64;
    assert!((paused - held).abs() <= 0.01 * held, "{paused} vs {held}");
}

#[test]
fn ecn_vs_pfc_marks_instead_of_pausing_and_both_are_lossless() {
    let runs = run_all("ecn-vs-pfc");
    let [(_, _, ecn), (s, _, pfc)] = &runs[..] else {
        panic!("two variants")
    };
    assert_eq!(ecn.variant, "ECN + DCQCN");
    assert!(ecn.ce_marked > 0 && ecn.cnps_sent > 0, "{ecn:?}");
    assert_eq!(ecn.switch_pfc_sent, 0, "DCQCN keeps the queue below XOFF");
    assert_eq!(pfc.variant, "PFC only");
    assert!(pfc.switch_pfc_sent > 0, "{pfc:?}");
    assert_eq!(pfc.ce_marked + pfc.cnps_sent, 0);
    for v in [ecn, pfc] {
        assert_eq!(v.lossless_drops + v.retransmitted, 0, "{v:?}");
    }
    let message = s.flows[0].message_bytes as u64;
    let line = s.topology.bits_per_sec as f64 / 1e9 * message as f64 / wire_bytes(message) as f64;
    assert_within(pfc.goodput_gbps, line, 0.01, "PFC-only goodput");
}

#[test]
fn a_slow_receiver_pauses_the_switch_which_pauses_the_senders() {
    let runs = run_all("slow-receiver");
    let [(s, outcome, pfc), (_, _, ecn)] = &runs[..] else {
        panic!("two variants")
    };
    let drain = s.faults[0].faults.slow_receiver.expect("a slow receiver");
    let message = s.flows[0].message_bytes as u64;
    let drain_goodput = drain.drain_bps as f64 / 1e9 * message as f64 / frame_bytes(message) as f64;
    assert_eq!(pfc.variant, "PFC only");
    // The receive buffer drains in exact time (no frame rounded up to a whole ns: that
    // cost 0.09 % here, 1074-byte frames taking 860 ns in place of 859.2).
    assert_within(
        pfc.goodput_gbps,
        drain_goodput,
        0.0002,
        "goodput at the drain rate",
    );
    assert!(pfc.host_pfc_sent > 0 && pfc.switch_pfc_sent > 0, "{pfc:?}");
    assert_eq!(pfc.lossless_drops + pfc.host_drops + pfc.retransmitted, 0);
    let sw = outcome.net.switch(0);
    let h2 = sw.port_index("h2").unwrap();
    assert_eq!(
        sw.counters(h2).classes[3].rx_pause_frames,
        pfc.host_pfc_sent,
        "every PFC frame the host sent reached the switch"
    );
    // DCQCN cuts the senders when the queue is marked: never above the drain rate.
    assert!(ecn.goodput_gbps <= drain_goodput * 1.005, "{ecn:?}");
    assert!(ecn.ce_marked > 0 && ecn.host_pfc_sent < pfc.host_pfc_sent);
    assert_eq!(ecn.lossless_drops + ecn.host_drops, 0);
}

#[test]
fn a_victim_flow_is_blocked_by_pfc_alone_and_freed_by_dcqcn() {
    let runs = run_all("victim-flow");
    let [(s, pfc_net, pfc), (_, dcqcn_net, dcqcn)] = &runs[..] else {
        panic!("two variants")
    };
    // The victim is the only flow to a host nobody else sends to.
    let victim = s
        .flows
        .iter()
        .find(|f| s.flows.iter().filter(|g| g.to == f.to).count() == 1)
        .expect("a victim flow");
    let incast: Vec<_> = s.flows.iter().filter(|f| f.to != victim.to).collect();
    let per_leaf = match s.topology.shape {
        rocelab::sim::scenario::Shape::LeafSpine { hosts_per_leaf, .. } => hosts_per_leaf,
        other => panic!("a leaf-spine, not {other:?}"),
    };
    let leaf = |h: usize| h / per_leaf;
    // Max-min fair share: the congested port splits its link among the incast; the
    // victim's uplink carries the incast senders of its own leaf, and the rest is its.
    let link = s.topology.bits_per_sec as f64 / 1e9;
    let sharing = incast
        .iter()
        .filter(|f| leaf(f.from) == leaf(victim.from))
        .count() as f64;
    let wire_share = link - sharing * link / incast.len() as f64;
    let m = victim.message_bytes as u64;
    let fair = wire_share * m as f64 / message_wire_bytes(m, u64::from(s.endpoint.mtu)) as f64;
    let goodput = |o: &Outcome| {
        o.qps
            .iter()
            .find(|q| q.host == victim.from)
            .map(|q| q.gbps)
            .expect("the victim's QP")
    };
    let (blocked, freed) = (goodput(pfc_net), goodput(dcqcn_net));
    // The story names the victim, its goodput and its fair share, and why it falls short.
    let story = rocelab::report::sim::what_happened(s, pfc_net);
    let said = format!(
        "victim: h{} -> h{}, the only flow to h{}, got {blocked:.1} Gb/s of goodput against its max-min fair share of {fair:.1} Gb/s ({:.0} %): held back by pauses meant for the incast's senders (head-of-line blocking",
        victim.from,
        victim.to,
        victim.to,
        100.0 * blocked / fair
    );
    assert!(story.contains(&said), "{said}\n{story}");
    let story = rocelab::report::sim::what_happened(&runs[1].0, dcqcn_net);
    assert!(
        story.contains(&format!(
            "got {freed:.1} Gb/s of goodput against its max-min fair share of {fair:.1} Gb/s"
        )),
        "{story}"
    );
    assert!(!story.contains("head-of-line"), "{story}");
    assert!(
        blocked < 0.5 * fair,
        "PFC alone: victim {blocked:.2} Gb/s, fair share {fair:.2}"
    );
    assert!(
        freed > 0.8 * fair,
        "DCQCN: victim {freed:.2} Gb/s, fair share {fair:.2}"
    );
    assert!(
        pfc_net.net.endpoint(victim.from).counters().pauses_received > 0,
        "the victim's host was paused"
    );
    assert!(
        pfc.switch_pfc_sent > dcqcn.switch_pfc_sent * 10,
        "{pfc:?} {dcqcn:?}"
    );
    assert_eq!(pfc.lossless_drops + dcqcn.lossless_drops, 0);
}

#[test]
fn the_watchdog_detects_and_restores_a_pause_storm_within_its_windows() {
    for (s, outcome, sum) in run_all("pfc-storm") {
        let name = s.variant.clone().unwrap();
        let wd = s.switch.watchdog;
        let storm: PauseStorm = s.faults[0].faults.pause_storm.expect("a storm");
        let sw = outcome.net.switch(0);
        let h2 = sw.port_index("h2").unwrap();
        let [record] = sw.storms() else {
            panic!("{name}: one storm, got {:?}", sw.storms())
        };
        assert_eq!((record.port, record.queue), (h2, 3), "{name}");
        // The queue stops when the first XOFF arrives (a frame time and the cable after
        // it was sent); it may have sent its last frame just before.
        let rate = s.topology.bits_per_sec;
        let hop = frame_time(PFC_FRAME_LEN, rate) + s.topology.delay;
        let stopped = storm.start + hop;
        let detect_from = stopped + wd.detection - Nanos::from_micros(10);
        let detect_to = stopped + wd.detection + wd.poll;
        assert!(
            (detect_from..=detect_to).contains(&record.detected),
            "{name}: detected at {:?}, expected within [{detect_from:?}, {detect_to:?}]",
            record.detected
        );
        // The last XOFF: the storm's last frame time before it stops.
        let stop = storm.stop.unwrap();
        let interval = storm.interval(rate);
        let k = (stop.0 - 1 - storm.start.0) / interval.0;
        let last_xoff = storm.start + Nanos(k * interval.0) + hop;
        let restored = record.restored.expect("restored");
        assert!(
            (last_xoff + wd.restoration..=last_xoff + wd.restoration + wd.poll).contains(&restored),
            "{name}: restored at {restored:?}, last XOFF at {last_xoff:?}"
        );
        let c = &sw.counters(h2).classes[3];
        assert_eq!((c.storms_detected, c.storms_restored), (1, 1), "{name}");
        assert_eq!(sum.storms_detected, 1);
        // Counted exactly: what the senders' ports took in for host 2 either left on
        // h2, was dropped by the watchdog, or is still queued.
        let into_h2: u64 = s
            .flows
            .iter()
            .map(|f| {
                let p = sw.port_index(&format!("h{}", f.from)).unwrap();
                sw.counters(p).classes[3].rx_frames
            })
            .sum();
        assert!(c.dropped_watchdog > 0, "{name}: the drop action dropped");
        assert_eq!(
            into_h2,
            c.tx_frames + c.dropped_watchdog + sw.queue_frames(h2, 3) as u64,
            "{name}"
        );
        assert_eq!(
            sum.lossless_drops, c.dropped_watchdog,
            "{name}: no other drop"
        );
        // Every XOFF of the storm reached the switch.
        let sent = (stop.0 - 1 - storm.start.0) / interval.0 + 1;
        assert_eq!(c.rx_pause_frames, sent, "{name}");
    }
}

#[test]
fn a_cyclic_buffer_dependency_deadlocks_under_pfc_and_the_watchdog_breaks_it() {
    use rocelab::series::SwitchProbe as _;
    let runs = run_all("deadlock");
    let [
        (s, stuck, _),
        (_, dropped, drop_sum),
        (_, forward, forward_sum),
    ] = &runs[..]
    else {
        panic!("three variants")
    };
    assert_eq!(s.flows.len(), 4);
    // PFC alone: not one byte delivered after the deadlock formed, to the end.
    for q in &stuck.qps {
        assert_eq!(q.gbps, 0.0, "host {} moved data in a deadlock", q.host);
    }
    // ... and it is a deadlock: every switch's queue to the next holds frames, paused.
    let end = stuck.net.engine.now();
    for i in 0..stuck.net.switches.len() {
        let sw = stuck.net.switch(i);
        let cw = sw.port_index(&format!("r{i}cw")).unwrap();
        assert!(sw.queue_frames(cw, 3) > 0, "r{i}: frames stuck");
        assert!(sw.queue_paused(cw, 3, end), "r{i}: held by the next switch");
    }
    // The story calls it what it is, names the four ring queues, and the way out.
    let story = rocelab::report::sim::what_happened(s, stuck);
    let line = story
        .lines()
        .find(|l| l.contains("PFC deadlock: from"))
        .unwrap_or_else(|| panic!("{story}"));
    for i in 0..4 {
        assert!(line.contains(&format!("r{i}/r{i}cw q3")), "{line}");
    }
    assert!(
        line.contains("a cyclic buffer dependency") && line.contains("the PFC watchdog"),
        "{line}"
    );
    let story = rocelab::report::sim::what_happened(&runs[2].0, forward);
    assert!(!story.contains("PFC deadlock"), "{story}");
    // Drop: the watchdog flushes every ring queue; the flows resend and make progress.
    assert!(drop_sum.storms_detected >= 4, "{drop_sum:?}");
    assert!(drop_sum.lossless_drops > 0);
    for q in &dropped.qps {
        assert!(q.gbps > 0.0, "host {}: progress after the flush", q.host);
    }
    // Forward: the stormed queues ignore the pause and the flows run at more than half
    // their share: two flows on every ring link.
    let link = s.topology.bits_per_sec as f64 / 1e9;
    let m = s.flows[0].message_bytes as u64;
    let fair = link / 2.0 * m as f64 / wire_bytes(m) as f64;
    assert!(forward_sum.storms_detected >= 4);
    for q in &forward.qps {
        assert!(
            q.gbps > 0.5 * fair,
            "host {}: {:.2} Gb/s, fair share {fair:.2}",
            q.host,
            q.gbps
        );
    }
}

#[test]
fn senders_that_ignore_pause_overflow_the_headroom() {
    let mut text = rocelab::sim::scenario::scenario_text("pfc-incast")
        .unwrap()
        .to_owned();
    for h in 0..4 {
        text.push_str(&format!(
            "\n[[fault]]\nhost = {h}\nkind = \"ignore-pause\"\n"
        ));
    }
    let s = Scenario::from_toml("deaf", &text, None).expect("valid");
    let outcome = run(&s).unwrap();
    let sum = summary(&s, &outcome);
    assert!(sum.lossless_drops > 0, "{sum:?}");
    let ignored: u64 = (0..4)
        .map(|h| outcome.net.endpoint(h).counters().pauses_ignored)
        .sum();
    assert!(ignored > 0);
    assert!(sum.retransmitted > 0, "go-back-N recovers the drops");
    // Each kind of drop is explained: the rule, its inputs, the formula, the fix.
    let story = rocelab::report::sim::what_happened(&s, &outcome);
    assert!(story.contains("XOFF was in force"), "{story}");
    assert!(story.contains("headroom = 2 x MTU"), "{story}");
    assert!(story.contains("a peer that honours pause"), "{story}");
    let sw = outcome.net.switch(0);
    let first = &sw.drops()[0];
    assert_eq!(first.cause, rocelab::switch::DropCause::IngressOverflow);
    assert!(first.xoff && first.pg_headroom + first.bytes > first.headroom_size);
}

#[test]
fn faults_and_variants_are_checked_with_their_keys() {
    let base = rocelab::sim::scenario::scenario_text("pfc-incast").unwrap();
    let bad = |extra: &str| {
        Scenario::from_toml("t", &format!("{base}\n{extra}"), None)
            .expect_err(extra)
            .to_string()
    };
    let e = bad("[[fault]]\nhost = 9\nkind = \"ignore-pause\"");
    assert!(e.contains("fault[0].host") && e.contains("0-4"), "{e}");
    let e = bad("[[fault]]\nhost = 1\nkind = \"slow-receiver\"\ndrain_gbps = 40");
    assert!(e.contains("fault[0].drain_gbps"), "{e}");
    let e = bad("[[fault]]\nhost = 1\nkind = \"slow-receiver\"\ndrain_gbps = 5\nxoff_bytes = 100");
    assert!(e.contains("fault[0].xoff_bytes"), "{e}");
    let e = bad("[[fault]]\nhost = 1\nkind = \"pause-storm\"\nstart_us = 5\nstop_us = 4");
    assert!(e.contains("fault[0].stop_us"), "{e}");
    let e = bad("[[fault]]\nhost = 1\nkind = \"stuck\"");
    assert!(e.contains("stuck"), "{e}");
    let e = bad(
        "[[fault]]\nhost = 1\nkind = \"ignore-pause\"\n[[fault]]\nhost = 1\nkind = \"ignore-pause\"",
    );
    assert!(e.contains("fault[1]") && e.contains("already"), "{e}");
    let e = bad("[[variant]]\nswitch = { ecn = true }");
    assert!(e.contains("variant[0].name"), "{e}");
    let e = bad("[[variant]]\nname = \"a\"\ntopology = { hosts = 3 }");
    assert!(e.contains("variant[0].topology"), "{e}");
    let e = bad("[[variant]]\nname = \"a\"\nswitch = { buffer = { shared_bytes = -1 } }");
    assert!(e.contains("variant[0] (a)"), "{e}");
    let e = bad("[[variant]]\nname = \"a\"\n[[variant]]\nname = \"a\"");
    assert!(e.contains("variant[1].name"), "{e}");
    let ring = |topology: &str| {
        let text = base.replace(
            "kind = \"star\"\nhosts = 5                # hosts 0-3 send to host 4",
            topology,
        );
        assert_ne!(text, base, "the star is replaced");
        Scenario::from_toml("t", &text, None)
    };
    let e = ring("kind = \"ring\"\nswitches = 2\nhosts_per_switch = 3").unwrap_err();
    assert!(e.to_string().contains("topology.switches"), "{e}");
    let e = ring("kind = \"ring\"\nswitches = 3\nhosts = 5").unwrap_err();
    assert!(e.to_string().contains("topology.hosts"), "{e}");
    let ok = ring("kind = \"ring\"\nswitches = 3\nhosts_per_switch = 2").expect("a ring");
    assert_eq!(ok.topology.hosts(), 6);
}

#[test]
fn misplaced_roce_traffic_is_named_once_with_its_path_and_fix() {
    // SONiC's maps: DSCP 26 is lossy; CNPs (DSCP 48) go to a DWRR queue.
    let base = rocelab::sim::scenario::scenario_text("ecn-vs-pfc").unwrap();
    let text = base.replace("preset = \"default\"", "preset = \"sonic\"");
    let s = Scenario::from_toml("t", &text, None).unwrap();
    let lossy = &s.variants[0];
    let outcome = run(lossy).unwrap();
    let story = rocelab::report::sim::what_happened(lossy, &outcome);
    assert!(story.contains("classification (warnings)"), "{story}");
    assert!(
        story.contains("DSCP 26 -> traffic class 1 -> queue 1, a lossy class"),
        "{story}"
    );
    assert_eq!(
        story.matches("RoCE data (UDP 4791)").count(),
        1,
        "once: {story}"
    );

    // RoCE at DSCP 3 is lossless there; its CNPs are not prioritised.
    let text = text.replacen("[[flow]]", "[endpoint]\ndscp = 3\n\n[[flow]]", 1);
    let s = Scenario::from_toml("t", &text, None).unwrap();
    let marked = &s.variants[0];
    let outcome = run(marked).unwrap();
    let sum = summary(marked, &outcome);
    assert!(sum.cnps_sent > 0, "{sum:?}");
    let warnings = outcome.net.switch(0).warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .message
            .contains("CNPs arrive with DSCP 48 and go DSCP 48 -> traffic class 6 -> queue 6"),
        "{warnings:?}"
    );
}

#[test]
fn incast_64_cycles_past_kmax_and_a_steeper_pmax_holds_the_queue_below_it() {
    let runs = run_all("incast-64");
    let names: Vec<&str> = runs
        .iter()
        .map(|(s, _, _)| s.variant.as_deref().unwrap_or_default())
        .collect();
    assert_eq!(names, ["jump at Kmax", "gentle", "Pmax 50 %"]);
    // Payload the link can carry: 40 Gb/s × 1000 / 1098 (1000-byte messages).
    let max = 40.0 * 1000.0 / message_wire_bytes(1000, 1024) as f64;
    // The queue of the receiver's port, per sample, from 10 ms (past the start-up).
    let queue = |outcome: &Outcome| -> Vec<f64> {
        let col = outcome
            .series
            .columns
            .iter()
            .find(|c| c.name == "queue_sw_h64_q3_bytes")
            .expect("the receiver's queue");
        outcome
            .series
            .times
            .iter()
            .zip(&col.values)
            .filter(|(t, _)| t.0 >= 10_000_000)
            .map(|(_, v)| *v)
            .collect()
    };
    let kmax = 200_000.0;
    // Climbs past Kmax, then drains to (almost) nothing, again and again.
    let crossings = |q: &[f64], level: f64| {
        q.windows(2)
            .filter(|w| w[0] <= level && w[1] > level)
            .count()
    };
    for (s, outcome, sum) in &runs[..2] {
        let q = queue(outcome);
        let name = s.variant.as_deref().unwrap_or_default();
        assert!(
            crossings(&q, kmax) >= 8,
            "{name}: {} crossings of Kmax",
            crossings(&q, kmax)
        );
        assert!(
            q.iter().filter(|&&v| v < 10_000.0).count() > q.len() / 4,
            "{name}: drains"
        );
        assert!(
            sum.goodput_gbps < 0.8 * max,
            "{name}: {:.2} of {max:.2} Gb/s",
            sum.goodput_gbps
        );
    }
    let (_, outcome, sum) = &runs[2];
    let q = queue(outcome);
    assert!(
        q.iter().all(|&v| v < kmax),
        "Pmax 50 %: below Kmax throughout"
    );
    assert_within(sum.goodput_gbps, max, 0.02, "Pmax 50 %");
    assert_eq!(sum.lossless_drops + sum.lossy_drops, 0);
}

/// nccl-tests runs its sizes one after the other in one process, the background traffic
/// running throughout, and so does the live lab: `back_to_back` runs them so on one
/// network, after an untimed warm-up. Every size is reported once (the warm-up not), its
/// data right, each rank starting a size no earlier than it finished the one before; the
/// sizes' fabric counts add up to no more than the whole run's.
#[test]
fn a_back_to_back_sweep_runs_every_size_on_one_network_after_its_warm_up() {
    let text = r#"
seed = 7
[topology]
kind = "star"
hosts = 6
link_gbps = 10
[switch]
preset = "nexus-ai"
[endpoint]
mtu = 4096
[[flow]]
from = 4
to = 0
message_bytes = 65536
[[flow]]
from = 5
to = 0
message_bytes = 65536
[allreduce]
ranks = [0, 1, 2, 3]
min_bytes = "64K"
max_bytes = "1M"
factor = 4
back_to_back = true
warm_up_bytes = "64K"
"#;
    let s = Scenario::from_toml("b2b", text, None).unwrap();
    let out = run(&s).unwrap();
    let sizes: Vec<u64> = out.allreduce.iter().map(|r| r.result.size).collect();
    assert_eq!(sizes, [65536, 262144, 1048576]);
    for row in &out.allreduce {
        assert!(row.result.time_ns.is_some(), "{row:?}");
        assert_eq!(row.result.wrong, Some(0));
    }
    // One network: the background flows ran throughout, so r0's port marked CE, and the
    // rows' counts are parts of the whole run's.
    let marked: u64 = out.allreduce.iter().map(|r| r.fabric.ecn_marked).sum();
    let sw = out.net.switch(0);
    let total: u64 = (0..sw.port_count())
        .flat_map(|p| {
            sw.counters(p)
                .classes
                .iter()
                .map(|c| c.ecn_marked)
                .collect::<Vec<_>>()
        })
        .sum();
    assert!(total > 0 && marked <= total, "{marked} of {total}");
    // Each rank ran the warm-up and the three sizes on one sweep, in order.
    for h in 0..4 {
        let sweep = out.net.host(h).app.as_ref().unwrap().size_sweep().unwrap();
        let spans: Vec<(u64, u64)> = sweep
            .results(out.net.endpoint(h))
            .iter()
            .map(|r| r.span_ns.unwrap())
            .collect();
        assert_eq!(spans.len(), 4);
        assert!(spans.windows(2).all(|w| w[1].0 >= w[0].1), "{spans:?}");
    }
    // A warm-up needs the sizes on one network.
    let fresh = text.replace("back_to_back = true\n", "");
    let err = Scenario::from_toml("b2b", &fresh, None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("allreduce.warm_up_bytes") && err.contains("back_to_back"),
        "{err}"
    );
}

//! The built-in scenarios that show one lossless mechanism each, checked against numbers
//! derived here: line-rate goodput from the frame overheads, the watchdog's detection
//! and restoration windows from its timings and the storm's schedule, and counts that
//! must balance exactly.

use rocelab::endpoint::fault::PauseStorm;
use rocelab::link::frame_time;
use rocelab::report::sim::{Summary, summary};
use rocelab::sim::run::{Outcome, run};
use rocelab::sim::scenario::Scenario;
use rocelab::time::Nanos;
use rocelab::wire::pfc::FRAME_LEN as PFC_FRAME_LEN;

/// Bytes a RoCEv2 WRITE-only packet of `payload` bytes takes on the wire: Ethernet 14,
/// IPv4 20, UDP 8, BTH 12, RETH 16, ICRC 4, FCS 4, preamble 8 and inter-frame gap 12.
fn wire_bytes(payload: u64) -> u64 {
    payload + 14 + 20 + 8 + 12 + 16 + 4 + 4 + 8 + 12
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
    assert_within(
        pfc.goodput_gbps,
        drain_goodput,
        0.01,
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
}

//! Short frames (`wire::elide`): the simulator carries a flow's data, one repeated byte
//! nobody reads, as its length. Every core counts a short frame at its length on the wire
//! (serialisation, buffers, ECN and PFC thresholds, counters, pacing), and every path that
//! needs a whole frame restores it, so a run's report and time series are the same byte
//! for byte as with every payload carried in full: on workloads over a leaf-spine, on
//! each congestion control of the 16:1 incast (HPCC's telemetry among them, whose frames
//! go whole), with a slow receiver that buffers frames whole, with selective repeat and
//! drops on lossy queues, and with PFC storms and the watchdog that flushes queues.

mod common;

use common::peers::{built_in, report_and_series};
use rocelab::sim::scenario::Scenario;

/// The report and the time series of `scenario`, and the frames it moved.
fn outputs(scenario: &Scenario, whole_frames: bool) -> (String, String, u64) {
    let mut s = scenario.clone();
    s.whole_frames = whole_frames;
    let (report, series, outcome) = report_and_series(&s);
    (report, series, outcome.net.engine.stats().frames_delivered)
}

/// Runs `scenario` (and each of its variants) with short frames and with whole ones, and
/// checks that both wrote the same.
fn same_either_way(scenario: &Scenario) {
    let runs = if scenario.variants.is_empty() {
        vec![scenario.clone()]
    } else {
        scenario.variants.clone()
    };
    for s in &runs {
        let name = format!("{} {}", s.name, s.variant.as_deref().unwrap_or(""));
        let (report, series, frames) = outputs(s, true);
        assert!(frames > 1000, "{name}: a run that moves frames ({frames})");
        let (r, se, f) = outputs(s, false);
        assert_eq!(f, frames, "{name}: frames moved");
        assert!(r == report, "{name}: the report with short frames differs");
        assert!(se == series, "{name}: the series with short frames differs");
    }
}

#[test]
fn web_search_on_a_leaf_spine_is_the_same_with_short_frames() {
    same_either_way(&built_in("web-search", &["duration_ms=0.2"]));
}

#[test]
fn each_congestion_control_of_the_incast_is_the_same_with_short_frames() {
    same_either_way(&built_in(
        "incast-16-cc",
        &["duration_ms=0.3", "measure_from_ms=0.1"],
    ));
}

#[test]
fn a_slow_receiver_and_selective_repeat_are_the_same_with_short_frames() {
    // The slow receiver buffers frames whole: short ones are restored on the way in.
    same_either_way(&built_in(
        "slow-receiver",
        &["duration_ms=2", "measure_from_ms=0.5"],
    ));
    // Selective repeat over lossy queues: drops, out-of-order placement, resends.
    same_either_way(&built_in(
        "incast-8",
        &[
            "duration_ms=1",
            "measure_from_ms=0",
            "switch.pfc=false",
            "switch.buffer.shared_bytes=300000",
            "endpoint.transport=\"selective-repeat\"",
        ],
    ));
}

#[test]
fn a_pfc_storm_and_the_watchdog_that_drops_are_the_same_with_short_frames() {
    // pfc-storm's NIC stuck sending XOFF, in milliseconds rather than hundreds of them:
    // the watchdog flushes the queue it holds (drop records with the frames whole).
    let text = r#"
        seed = 1
        duration_ms = 8
        sample_us = 100
        [topology]
        kind = "star"
        hosts = 3
        link_gbps = 10
        delay_ns = 1000
        [switch]
        preset = "default"
        buffer.shared_bytes = 2000000
        watchdog = { detection_ms = 1, restoration_ms = 2, poll_ms = 1, action = "drop" }
        [[flow]]
        from = 0
        to = 2
        [[flow]]
        from = 1
        to = 2
        [[fault]]
        host = 2
        kind = "pause-storm"
        start_us = 500
        stop_us = 5000
    "#;
    let s = Scenario::from_toml("short-storm", text, None).expect("a valid scenario");
    same_either_way(&s);
}

//! One run on several threads (`rocelab sim --threads N`): the network split into shards
//! that run in windows of the shortest propagation delay between them. Whatever the
//! split, every node sees the same events in the same order, so the report and the time
//! series are the same byte for byte as on one thread: on a leaf-spine with workloads, a
//! fat tree, iWARP and InfiniBand, a link that slows down mid-run, a ring all-reduce.

mod common;

use common::peers::{built_in, report_and_series};
use rocelab::sim::run::run;
use rocelab::sim::scenario::Scenario;

/// The report and the time series of `scenario` run on `threads`, and the threads the
/// engine ran on.
fn outputs(scenario: &Scenario, threads: usize) -> (String, String, usize) {
    let mut s = scenario.clone();
    s.threads = threads;
    let (report, series, outcome) = report_and_series(&s);
    (report, series, outcome.net.engine.threads())
}

/// Runs `scenario` on 1 thread, then on each of `threads`, and checks that each wrote
/// what one thread wrote and ran on as many threads as `ran` says.
fn same_on(scenario: &Scenario, threads: &[(usize, usize)]) {
    let (report, series, one) = outputs(scenario, 1);
    assert_eq!(one, 1);
    assert!(
        report.contains("\"frames_simulated\""),
        "a report: {}",
        &report[..report.len().min(400)]
    );
    for &(asked, ran) in threads {
        let (r, s, n) = outputs(scenario, asked);
        assert_eq!(n, ran, "{}: threads run for {asked} asked", scenario.name);
        assert!(
            r == report,
            "{}: the report on {asked} threads differs from one thread's",
            scenario.name
        );
        assert!(
            s == series,
            "{}: the series on {asked} threads differs from one thread's",
            scenario.name
        );
    }
}

#[test]
fn web_search_on_a_leaf_spine_is_the_same_on_two_three_and_four_threads() {
    // 16 leaves of 8 hosts, 8 spines: up to 16 shards.
    let s = built_in("web-search", &["duration_ms=0.2"]);
    same_on(&s, &[(2, 2), (3, 3), (4, 4)]);
}

#[test]
fn a_fat_tree_with_incasts_is_the_same_on_two_threads() {
    let s = built_in(
        "hpcc-paper-incast",
        &[
            "duration_ms=0.05",
            "topology.pods=2",
            "topology.tors_per_pod=2",
            "topology.aggs_per_pod=2",
            "topology.cores=4",
            "topology.hosts_per_tor=16",
            "workload.1.fan_in=20",
        ],
    );
    same_on(&s, &[(2, 2), (5, 5)]);
}

#[test]
fn iwarp_with_its_drops_and_infiniband_cutting_through_are_the_same_on_two_threads() {
    // iWARP: lossy queues (PFC off), TCP retransmitting what the switches dropped.
    let s = built_in("web-search", &["duration_ms=0.1", "fabric=\"iwarp\""]);
    same_on(&s, &[(2, 2)]);
    // InfiniBand: credits, and switches that take a packet in once its LRH is in.
    let s = built_in(
        "web-search",
        &["duration_ms=0.1", "fabric=\"ib\"", "ib.cut_through=true"],
    );
    same_on(&s, &[(2, 2)]);
}

#[test]
fn a_link_that_slows_down_mid_run_is_the_same_on_two_threads() {
    // The engine changes the link's rate between windows, every node still.
    let s = built_in(
        "slow-uplink",
        &[
            "duration_ms=0.5",
            "measure_from_ms=0",
            "fault.0.start_us=150",
            "fault.0.stop_us=350",
        ],
    );
    assert!(!s.link_faults.is_empty(), "slow-uplink slows a link");
    same_on(&s, &[(2, 2)]);
}

#[test]
fn a_ring_all_reduce_across_leaves_is_the_same_on_two_threads() {
    let s = built_in("ring-across-leaves", &[]);
    assert!(s.allreduce.is_some());
    same_on(&s, &[(2, 2)]);
}

#[test]
fn a_star_runs_on_one_thread_and_says_why() {
    // One switch: its hosts go with it, so there is one shard to run.
    let mut s = built_in("incast", &[]);
    s.threads = 4;
    let net = s.build(s.seed);
    assert_eq!(net.engine.threads(), 1);
    let why = net.engine.fewer_threads().expect("a reason for one thread");
    assert!(why.contains("1 switch splits into 1 part"), "{why}");
}

#[test]
fn links_without_delay_leave_no_lookahead_and_one_thread() {
    let mut s = built_in("web-search", &["duration_ms=0.05", "topology.delay_ns=0"]);
    s.threads = 2;
    let net = s.build(s.seed);
    assert_eq!(net.engine.threads(), 1);
    let why = net.engine.fewer_threads().expect("a reason for one thread");
    assert!(why.contains("no propagation delay"), "{why}");
    // And it still runs.
    run(&s).expect("the run ends");
}

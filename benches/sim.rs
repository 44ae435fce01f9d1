//! The simulator's speed: simulated frames per wall-clock second, on one core unless a
//! case says otherwise.
//!
//! Run: `cargo bench --bench sim`. A "frame" is one frame handed over a link (a data frame
//! from a sender to the switch and from the switch to the receiver counts twice; ACKs and
//! CNPs count too), each one parsed, queued, scheduled and ICRC-checked by the real cores.
//!
//! - `incast_2to1_40g_5ms`: the built-in `incast` scenario (2:1 at 40 Gb/s, DCQCN, the
//!   paper's marking) warmed up for 20 ms outside the timing, then 5 ms of steady state
//!   timed: the regime the DCQCN checks run in.
//! - `incast_64to1_40g_5ms`: the same with 64 senders (65 ports): the per-frame cost
//!   should not grow with the port count.
//! - `incast_2to1_40g_5ms_ib`: the 2:1 incast on InfiniBand (`fabric = "ib"`: credits,
//!   cut-through, flow-control packets as frames of their own).
//! - `web_search_128_leaf_spine_1ms`: the built-in `web-search` scenario (Poisson
//!   web-search flows at 50 % load on 128 hosts, 8 leaves and 4 spines at 100 Gb/s), its
//!   first millisecond.
//! - `permutation_128_8mb`: the built-in `permutation` scenario (every one of 128 hosts
//!   sends 8 MB to another on 16 leaves and 8 spines at 100 Gb/s, go-back-N with PFC, no
//!   congestion control, an ACK per packet, MTU 4096) from start to the last completion:
//!   the run docs/benchmarks.md times against htsim.
//! - `web_search_128_leaf_spine_1ms_2threads` and `permutation_128_8mb_2threads`: the
//!   same two on two threads (`Scenario::threads`, `rocelab sim --threads 2`): the same
//!   frames, in less time when the machine gives the run both its cores.
//! - `ring_4x100g_16mb`: a ring all-reduce of 16 MB over 4 ranks at 100 Gb/s with 4 KB
//!   MTU, from the first WRITE to the last rank's completion (building the network and
//!   filling the buffers are outside the timing).
//! - `elephants_ecmp_2ms` and `elephants_adaptive_2ms`: the built-in `elephants` scenario
//!   (four cross-leaf flows on a 2-leaf, 4-spine fabric at 100 Gb/s), its first 2 ms, with
//!   `topology.load_balancing` ECMP and adaptive. Adaptive reads every uplink's queue for
//!   each frame a leaf sends up, ECMP hashes once; the two side by side give its cost per
//!   frame.
//!
//! The run is deterministic, so the frame count of each case is measured once and
//! criterion reports elements (frames) per second.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rocelab::sim::allreduce;
use rocelab::sim::scenario::{FlowPlan, Scenario, Shape};
use rocelab::sim::topology::Network;
use rocelab::time::Nanos;

const WARM: Nanos = Nanos(20_000_000);
const SPAN: Nanos = Nanos(5_000_000);

/// The built-in 2:1 incast with `senders` senders instead of 2 (same links, switch and
/// DCQCN), warmed up.
fn warmed_incast(senders: usize) -> Network {
    warmed_incast_on(senders, "roce")
}

/// [`warmed_incast`] on `fabric` (`"roce"` or `"ib"`).
fn warmed_incast_on(senders: usize, fabric: &str) -> Network {
    let mut s = Scenario::load_edited("incast", |t| {
        t.insert("fabric".into(), fabric.into());
        Ok(())
    })
    .expect("built-in scenario");
    s.topology.shape = Shape::Star { hosts: senders + 1 };
    let flow = s.flows[0];
    s.flows = (0..senders)
        .map(|from| FlowPlan {
            from,
            to: senders,
            ..flow
        })
        .collect();
    let mut net = s.build(s.seed);
    net.engine.start();
    net.engine.run(WARM).unwrap();
    net
}

fn ring() -> Network {
    let s = Scenario::load("ring").expect("built-in scenario");
    let mut net = s.build(s.seed);
    let ranks: Vec<usize> = (0..net.hosts.len()).collect();
    allreduce::ring_allreduce(&mut net, &ranks, 4 << 20, 1, Nanos::ZERO);
    net
}

fn incast_frames(senders: usize, fabric: &str) -> u64 {
    let mut net = warmed_incast_on(senders, fabric);
    let before = net.engine.stats().frames_delivered;
    net.engine.run(WARM + SPAN).unwrap();
    net.engine.stats().frames_delivered - before
}

fn ring_frames() -> u64 {
    let mut net = ring();
    allreduce::run_to_done(&mut net, Nanos::from_secs(1)).unwrap();
    assert!(net.engine.apps_done());
    net.engine.stats().frames_delivered
}

/// Built-in scenario `name`, built with its seed to run on `threads` and started.
fn started(name: &str, threads: usize) -> Network {
    let mut s = Scenario::load(name).expect("built-in scenario");
    s.threads = threads;
    let mut net = s.build(s.seed);
    net.engine.start();
    net
}

/// Frames `net` hands over in its first `span`; with `to_completion`, every application
/// must be done by then.
fn frames_in(mut net: Network, span: Nanos, to_completion: bool) -> u64 {
    net.engine.run(span).unwrap();
    assert!(
        !to_completion || net.engine.apps_done(),
        "done within the span"
    );
    net.engine.stats().frames_delivered
}

/// The built-in `web-search` scenario (128 hosts on a leaf-spine, 50 % load): its first
/// millisecond.
const WEB_SEARCH_SPAN: Nanos = Nanos(1_000_000);

/// The built-in `permutation` scenario: every flow completes within this span.
const PERMUTATION_SPAN: Nanos = Nanos(5_000_000);

/// The built-in `elephants` scenario with `topology.load_balancing = mode`, started.
fn elephants(mode: &str) -> Network {
    let s = Scenario::load_edited("elephants", |t| {
        if let Some(toml::Value::Table(topology)) = t.get_mut("topology") {
            topology.insert("load_balancing".into(), mode.into());
        }
        Ok(())
    })
    .expect("built-in scenario");
    let mut net = s.build(s.seed);
    net.engine.start();
    net
}

const ELEPHANTS_SPAN: Nanos = Nanos(2_000_000);

fn elephants_frames(mode: &str) -> u64 {
    let mut net = elephants(mode);
    net.engine.run(ELEPHANTS_SPAN).unwrap();
    net.engine.stats().frames_delivered
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim");
    group.sample_size(10);

    for senders in [2, 64] {
        group.throughput(Throughput::Elements(incast_frames(senders, "roce")));
        group.bench_function(format!("incast_{senders}to1_40g_5ms"), |b| {
            b.iter_batched(
                || warmed_incast(senders),
                |mut net| {
                    net.engine.run(WARM + SPAN).unwrap();
                    net
                },
                BatchSize::PerIteration,
            )
        });
    }

    group.throughput(Throughput::Elements(incast_frames(2, "ib")));
    group.bench_function("incast_2to1_40g_5ms_ib", |b| {
        b.iter_batched(
            || warmed_incast_on(2, "ib"),
            |mut net| {
                net.engine.run(WARM + SPAN).unwrap();
                net
            },
            BatchSize::PerIteration,
        )
    });

    for (id, name, span, to_completion) in [
        (
            "web_search_128_leaf_spine_1ms",
            "web-search",
            WEB_SEARCH_SPAN,
            false,
        ),
        ("permutation_128_8mb", "permutation", PERMUTATION_SPAN, true),
    ] {
        let frames = frames_in(started(name, 1), span, to_completion);
        for threads in [1, 2] {
            let id = match threads {
                1 => id.to_owned(),
                n => format!("{id}_{n}threads"),
            };
            group.throughput(Throughput::Elements(frames));
            group.bench_function(id, |b| {
                b.iter_batched(
                    || started(name, threads),
                    |mut net| {
                        net.engine.run(span).unwrap();
                        net
                    },
                    BatchSize::PerIteration,
                )
            });
        }
    }

    for mode in ["ecmp", "adaptive"] {
        group.throughput(Throughput::Elements(elephants_frames(mode)));
        group.bench_function(format!("elephants_{mode}_2ms"), |b| {
            b.iter_batched(
                || elephants(mode),
                |mut net| {
                    net.engine.run(ELEPHANTS_SPAN).unwrap();
                    net
                },
                BatchSize::PerIteration,
            )
        });
    }

    group.throughput(Throughput::Elements(ring_frames()));
    group.bench_function("ring_4x100g_16mb", |b| {
        b.iter_batched(
            ring,
            |mut net| {
                allreduce::run_to_done(&mut net, Nanos::from_secs(1)).unwrap();
                net
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

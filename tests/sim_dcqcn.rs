//! DCQCN's published behaviour, reproduced in the simulator (../shared/DCQCN.md, "Checks
//! any faithful implementation passes"): N:1 incast converges to C/N each with the queue
//! between Kmin and Kmax and no PFC; QCN-like timers leave staggered flows unfair where
//! the paper's converge; with ECN off, PFC carries the load and nothing is lost.

use rocelab::config::endpoint::{DcqcnConfig, EndpointConfig};
use rocelab::config::{RedProfile, SwitchConfig};
use rocelab::endpoint::app::flow::Flow;
use rocelab::sim::Step;
use rocelab::sim::topology::{self, Network};
use rocelab::time::Nanos;

/// The paper's 40G testbed marking: Kmin 5 KB, Kmax 200 KB, Pmax 1 %.
fn paper_ecn() -> RedProfile {
    RedProfile {
        kmin_bytes: 5_000,
        kmax_bytes: 200_000,
        pmax: 0.01,
        gentle: false,
    }
}

/// HPCC's 25G marking (DCQCN.md, switch-side values): Kmin 100 KB, Kmax 400 KB, Pmax 0.2.
/// The paper's 1 % is tuned for a few flows: eight flows at 25 Gb/s push the queue past
/// Kmax, where every frame is marked and all eight cut in lockstep.
fn hpcc_25g_ecn() -> RedProfile {
    RedProfile {
        kmin_bytes: 100_000,
        kmax_bytes: 400_000,
        pmax: 0.2,
        gentle: false,
    }
}

fn switch_cfg(ecn: Option<RedProfile>) -> SwitchConfig {
    let mut cfg = SwitchConfig::preset("default").unwrap();
    cfg.queues[3].ecn = ecn;
    cfg
}

/// `senders` hosts each send an endless flow of 1000-byte messages to the last host,
/// starting at `starts[i]`; the network runs with `seed`.
fn incast(switch: &SwitchConfig, ep: &EndpointConfig, starts: &[Nanos], seed: u64) -> Network {
    let senders = starts.len();
    let mut net = topology::star(switch, ep, senders + 1, Nanos(1000), 0.0, seed);
    let sink = senders;
    Flow::prepare_receiver(net.endpoint_mut(sink), 1000);
    for (s, &start) in starts.iter().enumerate() {
        let (q, _) = net.connect_qp(s, sink);
        net.host_mut(s).app = Some(Flow::new(q, None, 1000, start).into());
    }
    net
}

/// Payload bits per second of the line: a 1000-byte WRITE Only with RETH is a 1074-byte
/// frame (14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 16 RETH + 1000 + 4 ICRC) plus 24 bytes
/// of preamble, SFD, FCS and inter-frame gap on the wire.
fn payload_gbps(line_gbps: f64) -> f64 {
    line_gbps * 1000.0 / (1074.0 + 24.0)
}

/// What [`trace`] saw between `from` and `to`.
struct Trace {
    /// Each sender's payload rate in Gb/s in every step.
    rates: Vec<Vec<f64>>,
    /// The sink port's lossless queue depth every 10 µs.
    queue: Vec<u64>,
    /// PFC frames the switch sent in the span.
    pfc: u64,
}

/// Starts `net` and runs it to `to`, measuring from `from` on in steps of `step`.
fn trace(net: &mut Network, from: Nanos, to: Nanos, step: Nanos) -> Trace {
    let senders = net.hosts.len() - 1;
    net.engine.start();
    net.engine.run(from).unwrap();
    net.engine.sample_every(Nanos::from_micros(10));
    let pfc_before = pfc_sent(net);
    let (mut rates, mut queue) = (Vec::new(), Vec::new());
    let mut before = sent(net, senders);
    let mut next = from + step;
    while net.engine.run(to).unwrap() == Step::Sampled {
        queue.push(net.switch(0).queue_bytes(senders, 3));
        if net.engine.now() >= next {
            let now = sent(net, senders);
            rates.push(rates_gbps(&before, &now, step));
            (before, next) = (now, next + step);
        }
    }
    Trace {
        rates,
        queue,
        pfc: pfc_sent(net) - pfc_before,
    }
}

/// The mean of each column of `rows`.
fn means(rows: &[Vec<f64>]) -> Vec<f64> {
    (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c]).sum::<f64>() / rows.len() as f64)
        .collect()
}

/// Payload bytes each sender sent (no loss here, so none twice).
fn sent(net: &Network, senders: usize) -> Vec<u64> {
    (0..senders)
        .map(|s| net.endpoint(s).counters().data_bytes_sent)
        .collect()
}

fn rates_gbps(before: &[u64], after: &[u64], window: Nanos) -> Vec<f64> {
    before
        .iter()
        .zip(after)
        .map(|(b, a)| (a - b) as f64 * 8.0 / window.0 as f64)
        .collect()
}

fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    sum * sum / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>())
}

fn pfc_sent(net: &Network) -> u64 {
    let sw = net.switch(0);
    (0..sw.port_count())
        .map(|p| sw.counters(p).classes[3].tx_pause_frames)
        .sum()
}

/// DCQCN.md: "The ns3-rdma sample is a 2:1 incast at 40 Gb/s, 1 µs links, 1000-byte
/// payloads: expect about 20 + 20 Gb/s", "the queue oscillating inside [Kmin, Kmax] and,
/// when Kmax is below the PFC XOFF point, no PFC frames in steady state". Both flows start
/// at line rate together; after 20 ms of convergence each gets half the payload rate
/// (± 2 Gb/s) over 180 ms (DCQCN's fairness drifts by a few Gb/s over tens of ms), the bottleneck stays busy, the queue never passes Kmax and
/// averages above Kmin (its troughs touch empty between cuts, as in the paper's traces),
/// and no PFC frame is sent. Three seeds, so the result is not one lucky draw.
#[test]
fn two_to_one_at_40g_converges_to_20_each_inside_kmin_kmax_without_pfc() {
    let ep = EndpointConfig {
        link_gbps: 40.0,
        ..EndpointConfig::default()
    };
    let red = paper_ecn();
    let switch = switch_cfg(Some(red));
    for seed in 1..=3 {
        let mut net = incast(&switch, &ep, &[Nanos(0), Nanos(0)], seed);
        let (from, to) = (Nanos::from_millis(20), Nanos::from_millis(200));
        let Trace { rates, queue, pfc } = trace(&mut net, from, to, to - from);
        let fair = payload_gbps(40.0) / 2.0;
        let rates = &rates[0];
        for r in rates {
            assert!(
                (r - fair).abs() <= 2.0,
                "seed {seed}: rates {rates:?}, fair {fair:.2} Gb/s"
            );
        }
        let total: f64 = rates.iter().sum();
        assert!(
            total >= 0.95 * payload_gbps(40.0),
            "seed {seed}: bottleneck idle, {total:.2} Gb/s"
        );
        let max = *queue.iter().max().unwrap();
        let mean = queue.iter().sum::<u64>() / queue.len() as u64;
        assert!(
            max <= red.kmax_bytes,
            "seed {seed}: queue reached {max} B > Kmax"
        );
        assert!(
            mean >= red.kmin_bytes,
            "seed {seed}: mean queue {mean} B < Kmin"
        );
        assert_eq!(pfc, 0, "seed {seed}: no PFC in steady state");
        let cnps: u64 = (0..2)
            .map(|s| net.endpoint(s).counters().cnps_received)
            .sum();
        assert!(cnps > 0);
    }
}

/// 8:1 at 25 Gb/s with HPCC's 25G marking: each near 25/8 = 3.125 Gb/s of line (its
/// payload share), Jain fairness ≥ 0.95, the bottleneck busy.
#[test]
fn eight_to_one_at_25g_is_fair() {
    let ep = EndpointConfig {
        link_gbps: 25.0,
        ..EndpointConfig::default()
    };
    let mut net = incast(&switch_cfg(Some(hpcc_25g_ecn())), &ep, &[Nanos(0); 8], 1);
    let (from, to) = (Nanos::from_millis(20), Nanos::from_millis(60));
    let rates = &trace(&mut net, from, to, to - from).rates[0];
    let line = payload_gbps(25.0);
    let total: f64 = rates.iter().sum();
    assert!(
        total >= 0.95 * line,
        "total {total:.2} of {line:.2}: {rates:?}"
    );
    assert!(jain(rates) >= 0.95, "Jain {:.3}: {rates:?}", jain(rates));
    for r in rates {
        assert!((r - line / 8.0).abs() < 0.35 * line / 8.0, "{rates:?}");
    }
}

/// DCQCN.md: "With QCN-like timers (T = 1.5 ms, B = 150 KB) two staggered flows stay
/// unfair; with T = 55 µs and B = 10 MB they converge to C/2 each." The second flow joins
/// 10 ms after the first. With the paper's timers increases come from the rate timer,
/// equal for both flows (additive increase: fair); with QCN-like timers they come from the
/// byte counter, faster for the faster flow (multiplicative: whatever split the joining
/// burst left tends to persist). Measured as the mean gap between the two flows' rates in
/// 1-ms windows over 40–120 ms, over four seeds: the joining flow starts with alpha 1 while
/// the first one's has decayed for the 10 ms it ran alone, so the joining flow's first cuts
/// are deeper and the two take until about 40 ms to meet.
#[test]
fn qcn_like_timers_leave_staggered_flows_unfair_where_the_papers_converge() {
    let measure = |dcqcn: DcqcnConfig| {
        let ep = EndpointConfig {
            link_gbps: 40.0,
            dcqcn,
            ..EndpointConfig::default()
        };
        let (mut gaps, mut long_run) = (Vec::new(), Vec::new());
        for seed in 1..=4 {
            let starts = [Nanos(0), Nanos::from_millis(10)];
            let mut net = incast(&switch_cfg(Some(paper_ecn())), &ep, &starts, seed);
            let (from, to) = (Nanos::from_millis(40), Nanos::from_millis(120));
            let rates = trace(&mut net, from, to, Nanos::from_millis(1)).rates;
            gaps.extend(rates.iter().map(|r| (r[0] - r[1]).abs()));
            long_run.push(means(&rates));
        }
        (gaps.iter().sum::<f64>() / gaps.len() as f64, long_run)
    };
    let (paper_gap, paper_rates) = measure(DcqcnConfig::default());
    let (qcn_gap, qcn_rates) = measure(DcqcnConfig {
        rate_timer_us: 1500.0,
        byte_counter_bytes: 150_000,
        ..DcqcnConfig::default()
    });
    let fair = payload_gbps(40.0) / 2.0;
    for r in paper_rates.iter().flatten() {
        assert!(
            (r - fair).abs() <= 2.0,
            "paper timers, rates {paper_rates:?}"
        );
    }
    assert!(
        qcn_gap >= 1.5 * paper_gap,
        "mean rate gap: QCN-like {qcn_gap:.2} Gb/s ({qcn_rates:?}), paper {paper_gap:.2} Gb/s"
    );
}

/// With ECN off, DCQCN never hears of the congestion: PFC holds the senders back, and the
/// lossless class loses nothing.
#[test]
fn with_ecn_off_pfc_carries_the_load_losslessly() {
    let ep = EndpointConfig {
        link_gbps: 40.0,
        ..EndpointConfig::default()
    };
    let mut cfg = switch_cfg(None);
    cfg.shared_bytes = 512 << 10; // XOFF below what two senders' windows can queue
    let mut net = topology::star(&cfg, &ep, 3, Nanos(1000), 0.0, 1);
    Flow::prepare_receiver(net.endpoint_mut(2), 1000);
    for s in 0..2 {
        let (q, _) = net.connect_qp(s, 2);
        net.host_mut(s).app = Some(Flow::new(q, Some(20_000_000), 1000, Nanos(0)).into());
    }
    let end = rocelab::sim::allreduce::run_to_done(&mut net, Nanos::from_secs(1)).unwrap();
    assert!(net.engine.apps_done(), "not done by {end:?}");
    assert!(pfc_sent(&net) > 0, "PFC must carry the load");
    let sw = net.switch(0);
    let drops: u64 = (0..3).map(|p| sw.counters(p).classes[3].dropped()).sum();
    assert_eq!(drops, 0);
    assert_eq!(net.endpoint(2).counters().data_packets_received, 2 * 20_000);
    let paused: u64 = (0..2)
        .map(|s| net.endpoint(s).counters().pauses_received)
        .sum();
    assert!(paused > 0);
    assert_eq!(
        (0..2)
            .map(|s| net.endpoint(s).counters().cnps_received)
            .sum::<u64>(),
        0
    );
    let retransmitted: u64 = (0..2)
        .map(|s| net.endpoint(s).counters().retransmitted_packets)
        .sum();
    assert_eq!(retransmitted, 0, "lossless: nothing to retransmit");
}

/// A QP starts with alpha = 1 (the paper's reaction point: Rc = Rt = line rate, alpha 1),
/// whenever it starts: two QPs that first send 10 ms into the run and get their first CNP
/// a few µs later (less than one alpha period K = 55 µs after they started) cut from
/// 100 Gb/s to 100 × (1 − 1/2) = 50 Gb/s, as one cut with alpha = 1 at 100 Gb/s does.
/// An alpha clock that ran from time 0 decayed alpha over the 10 ms the QPs had not
/// started, and cut them to 75.4 Gb/s.
#[test]
fn a_qp_that_starts_late_cuts_with_alpha_one_at_its_first_cnp() {
    let ep = EndpointConfig {
        link_gbps: 100.0,
        dcqcn: DcqcnConfig {
            byte_counter_bytes: 0,
            // One CNP per QP in the whole run.
            cnp_interval_us: 3_600_000_000.0,
            ..DcqcnConfig::default()
        },
        ..EndpointConfig::default()
    };
    let every_mark = RedProfile {
        kmin_bytes: 20_000,
        kmax_bytes: 20_000,
        pmax: 1.0,
        gentle: false,
    };
    let start = Nanos::from_millis(10);
    let mut net = incast(&switch_cfg(Some(every_mark)), &ep, &[start, start], 1);
    net.engine.start();
    net.engine.sample_every(Nanos::from_micros(1));
    let mut first_cut = [None; 2];
    while first_cut.contains(&None)
        && net.engine.run(start + Nanos::from_millis(1)).unwrap() == Step::Sampled
    {
        for (s, cut) in first_cut.iter_mut().enumerate() {
            let e = net.endpoint(s);
            if cut.is_none() && e.counters().cnps_received > 0 {
                *cut = Some((net.engine.now(), e.qp_rate_bps(0)));
            }
        }
    }
    for (s, cut) in first_cut.iter().enumerate() {
        let (at, rate) = cut.expect("every sender gets a CNP");
        assert!(
            at < start + Nanos::from_micros(55),
            "sender {s}: CNP at {at:?}"
        );
        assert_eq!(rate, 50_000_000_000, "sender {s}: Rc after the first cut");
    }
}

/// docs/dcqcn.md: with `cnp_mode = "first_mark"` the marks inside a CNP window go
/// unanswered and the steady queue of the `incast` scenario settles deeper than with the
/// default `"deferred"` (a CNP for every window with a mark, as the paper's fluid model
/// assumes): 22.3 KB against 15.9 KB on average from 10 ms on.
#[test]
fn first_mark_leaves_the_incast_queue_deeper_than_deferred() {
    let mean_queue = |mode: &str| {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
            .args(["sim", "incast", "--set"])
            .arg(format!("endpoint.dcqcn.cnp_mode={mode}"))
            .arg("--out")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let csv = std::fs::read_to_string(dir.path().join("series.csv")).unwrap();
        let mut lines = csv.lines();
        let head: Vec<&str> = lines.next().unwrap().split(',').collect();
        let t = head.iter().position(|c| *c == "time_us").unwrap();
        let q = head
            .iter()
            .position(|c| *c == "queue_sw_h2_q3_bytes")
            .unwrap();
        let v: Vec<f64> = lines
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|r| r[t].parse::<f64>().unwrap() >= 10_000.0)
            .map(|r| r[q].parse().unwrap())
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let deferred = mean_queue("deferred");
    let first_mark = mean_queue("first_mark");
    assert!(
        (15_000.0..17_000.0).contains(&deferred),
        "deferred: {deferred:.0} B"
    );
    assert!(
        first_mark > deferred * 1.25,
        "first_mark {first_mark:.0} B, deferred {deferred:.0} B"
    );
}

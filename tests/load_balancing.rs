//! Load balancing on a leaf-spine in virtual time: ECMP's collisions against their
//! probability, the four elephants under each mode, what spraying costs go-back-N, and
//! that a scenario naming no mode runs and reports as before.

use rocelab::sim::balance;
use rocelab::sim::run::{Outcome, run};
use rocelab::sim::scenario::Scenario;
use rocelab::sim::summary::jain;

/// The built-in `elephants` with `sets` laid over it (`key=value`, as `--set`).
fn elephants(sets: &[String]) -> Scenario {
    Scenario::load_edited("elephants", |table| {
        for s in sets {
            rocelab::config::set_key(table, s)?;
        }
        Ok(())
    })
    .expect("the elephants with these keys")
}

fn goodputs(o: &Outcome) -> Vec<f64> {
    o.qps.iter().map(|q| q.gbps).collect()
}

/// The flows' payload at line rate: 4096 B in a frame of 4096 + 58 B, plus 24 B of
/// preamble, gap and FCS, at 100 Gb/s.
const LINE_GOODPUT_GBPS: f64 = 100.0 * 4096.0 / (4096.0 + 58.0 + 24.0);

#[test]
fn four_flows_on_four_uplinks_avoid_each_other_as_often_as_4_factorial_over_4_to_the_4() {
    // Leaf 0's four uplinks under ECMP with a seed per switch: the seed changes the hash,
    // so over many seeds each flow lands on a uniform uplink, independently. Distinct
    // uplinks used: 4 with probability 4!/4^4 = 24/256, 3 with 144/256, 2 with 84/256,
    // 1 with 4/256 (Stirling numbers: 4!/(4-k)! S(4,k) / 4^4).
    const SEEDS: u64 = 2000;
    let mut used = [0u64; 5];
    // Short runs of one-packet messages: which uplinks the first packets take is all
    // that is asked.
    let text = rocelab::sim::scenario::scenario_text("elephants")
        .unwrap()
        .replace("message_bytes = \"1M\"", "message_bytes = \"4K\"")
        .replace("duration_ms = 4", "duration_ms = 0.02")
        .replace("measure_from_ms = 1", "measure_from_ms = 0");
    for seed in 1..=SEEDS {
        let text = text.replace("seed = 1\n", &format!("seed = {seed}\n"));
        let s = Scenario::from_toml("elephants", &text, None).unwrap();
        assert_eq!(s.seed, seed);
        let o = run(&s).expect("a short run");
        let lb = balance::uplinks(&o.net, s.topology.bits_per_sec);
        let leaf0 = &lb[0];
        assert_eq!(leaf0.switch, "leaf0");
        let busy = leaf0.uplinks.iter().filter(|u| u.tx_bytes > 0).count();
        used[busy] += 1;
    }
    println!("runs by uplinks used (0-4): {used:?} of {SEEDS}");
    let expected = [0.0, 4.0 / 256.0, 84.0 / 256.0, 144.0 / 256.0, 24.0 / 256.0];
    for k in 1..=4 {
        let p = expected[k];
        let got = used[k] as f64 / SEEDS as f64;
        let sd = (p * (1.0 - p) / SEEDS as f64).sqrt();
        assert!(
            (got - p).abs() <= 4.0 * sd,
            "{k} uplinks used in {got:.4} of runs, expected {p:.4} ± {:.4}: {used:?}",
            4.0 * sd
        );
    }
}

/// Mean total goodput and mean Jain index of the elephants over seeds 1-3 with `sets`.
fn over_seeds(sets: &[&str]) -> (f64, f64, Vec<Outcome>) {
    let mut total = 0.0;
    let mut fairness = 0.0;
    let mut outcomes = Vec::new();
    for seed in 1..=3 {
        let mut keys: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
        keys.push(format!("seed={seed}"));
        let o = run(&elephants(&keys)).expect("the elephants run");
        let g = goodputs(&o);
        assert_eq!(g.len(), 4, "four flows");
        total += g.iter().sum::<f64>();
        fairness += jain(&g).unwrap_or(0.0);
        outcomes.push(o);
    }
    (total / 3.0, fairness / 3.0, outcomes)
}

#[test]
fn adaptive_and_spraying_with_selective_repeat_carry_the_four_elephants() {
    let target = 0.9 * 4.0 * LINE_GOODPUT_GBPS;
    for mode in ["adaptive", "per-packet"] {
        let lb = format!("topology.load_balancing=\"{mode}\"");
        let (goodput, fairness, _) = over_seeds(&[&lb, "endpoint.transport=\"selective-repeat\""]);
        assert!(
            goodput >= target,
            "{mode}: {goodput:.1} Gb/s, under 90 % of {:.1}",
            4.0 * LINE_GOODPUT_GBPS
        );
        assert!(fairness >= 0.95, "{mode}: Jain {fairness:.3}");
    }
}

#[test]
fn spraying_costs_go_back_n_what_selective_repeat_keeps() {
    // Random spraying reorders (paths' queues differ): go-back-N discards every packet
    // that overtook another and resends from the gap; selective repeat places it.
    let random = "topology.spraying=\"random\"";
    let pp = "topology.load_balancing=\"per-packet\"";
    let (gbn, _, gbn_runs) = over_seeds(&[pp, random, "endpoint.transport=\"go-back-n\""]);
    let (sr, _, sr_runs) = over_seeds(&[pp, random, "endpoint.transport=\"selective-repeat\""]);
    let resent = |runs: &[Outcome]| -> u64 {
        runs.iter()
            .flat_map(|o| (0..o.net.hosts.len()).map(|h| o.net.endpoint(h).counters()))
            .map(|c| c.retransmitted_packets)
            .sum()
    };
    assert!(
        gbn < 0.5 * sr,
        "go-back-n {gbn:.1} Gb/s against selective repeat's {sr:.1}"
    );
    assert!(
        resent(&gbn_runs) > 10 * resent(&sr_runs),
        "go-back-n resent {}, selective repeat {}",
        resent(&gbn_runs),
        resent(&sr_runs)
    );
}

#[test]
fn a_reorder_tolerance_spares_spurious_retransmissions() {
    let base = [
        "topology.load_balancing=\"per-packet\"".to_owned(),
        "topology.spraying=\"random\"".to_owned(),
    ];
    let spurious = |extra: &[&str]| {
        let mut keys = base.to_vec();
        keys.extend(extra.iter().map(|s| (*s).to_owned()));
        let s = elephants(&keys);
        let o = run(&s).expect("a run");
        let b = balance::report(&s, &o).expect("a scenario naming a mode");
        (b.spurious_retransmissions, b.goodput_gbps)
    };
    // IRN's rule: a packet overtaken once is resent, though it was only late.
    let (strict, strict_gbps) = spurious(&["endpoint.selective_repeat.reorder_packets=1"]);
    let (tolerant, tolerant_gbps) = spurious(&[]);
    assert!(
        tolerant * 5 < strict,
        "spurious: {tolerant} with the tolerance, {strict} without"
    );
    assert!(tolerant_gbps > strict_gbps);
}

#[test]
fn ecmp_collides_and_adaptive_evens_the_uplinks() {
    let run_mode = |mode: &str| {
        let s = elephants(&[format!("topology.load_balancing=\"{mode}\"")]);
        let o = run(&s).expect("a run");
        balance::report(&s, &o).expect("a mode")
    };
    let ecmp = run_mode("ecmp");
    let adaptive = run_mode("adaptive");
    // Seed 1's hash puts two flows on one uplink and leaves one idle: 4 / 3 of the mean.
    let leaf0 = |b: &balance::BalanceReport| b.switches[0].imbalance.unwrap();
    assert!((leaf0(&ecmp) - 4.0 / 3.0).abs() < 0.01, "{}", leaf0(&ecmp));
    assert!(leaf0(&adaptive) < 1.01, "{}", leaf0(&adaptive));
    assert!(ecmp.effective_bandwidth.unwrap() < 0.8);
    assert!(adaptive.effective_bandwidth.unwrap() > 0.99);
}

#[test]
fn a_scenario_naming_no_mode_runs_and_reports_as_before() {
    // leaf-spine names no mode: its report has no load_balancing section, and naming
    // ECMP with the shared hash changes no number.
    let plain = Scenario::load("victim-flow").unwrap();
    let named = Scenario::load_edited("victim-flow", |t| {
        rocelab::config::set_key(t, "topology.load_balancing=\"ecmp\"")
    })
    .unwrap();
    assert!(plain.topology.load_balancing.is_none());
    let (a, b) = (run(&plain).unwrap(), run(&named).unwrap());
    assert_eq!(goodputs(&a), goodputs(&b));
    let json = rocelab::report::sim::json(&plain, &a);
    assert!(json.get("load_balancing").is_none());
    assert!(
        rocelab::report::sim::json(&named, &b)
            .get("load_balancing")
            .is_some()
    );
}

#[test]
fn load_balancing_keys_are_checked() {
    let bad = |sets: &[&str]| {
        Scenario::load_edited("elephants", |t| {
            for s in sets {
                rocelab::config::set_key(t, s)?;
            }
            Ok(())
        })
        .unwrap_err()
        .to_string()
    };
    let e = bad(&["topology.load_balancing=\"spray\""]);
    assert!(
        e.contains("topology.load_balancing") && e.contains("adaptive"),
        "{e}"
    );
    let e = bad(&["topology.flowlet_gap_us=10"]);
    assert!(e.contains("topology.flowlet_gap_us"), "{e}");
    let e = bad(&["topology.ecmp_seed=\"each\""]);
    assert!(e.contains("per-switch"), "{e}");
    let e = Scenario::load_edited("incast", |t| {
        rocelab::config::set_key(t, "topology.load_balancing=\"adaptive\"")
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("only a leaf-spine"), "{e}");
}

#[test]
fn a_ring_across_leaves_goes_at_its_slowest_step() {
    // Eight flows each way over four uplinks: a step gets at most half its link, 49.02
    // Gb/s of payload, which is the busbw a ring reaches (6.13 GB/s). ECMP piles some
    // steps up on one uplink, and the ring waits for them.
    let busbw = |mode: &str| {
        let s = Scenario::load_edited("ring-across-leaves", |t| {
            rocelab::config::set_key(t, &format!("topology.load_balancing=\"{mode}\""))?;
            rocelab::config::set_key(t, "allreduce.max_bytes=\"4M\"")
        })
        .unwrap();
        let o = run(&s).unwrap();
        let busbw = o.allreduce.last().unwrap().result.busbw();
        // The report's bound is the same closed form, from the ring's fair shares; a
        // 4 MB / 16 step is 64 packets and one RETH, hence the 16 B.
        let report = balance::report(&s, &o).unwrap().allreduce.unwrap();
        let per_step = 4.0 * 1024.0 * 1024.0 / 16.0;
        let expected = 100.0 / 2.0 / 8.0 * per_step / (64.0 * 4178.0 + 16.0);
        assert!(
            (report.bound_gbytes_per_s - expected).abs() < 1e-6,
            "bound {:.4} GB/s, expected {expected:.4}",
            report.bound_gbytes_per_s
        );
        assert_eq!(report.busbw_gbytes_per_s, Some(busbw));
        busbw
    };
    let bound = LINE_GOODPUT_GBPS / 2.0 / 8.0;
    let (ecmp, adaptive) = (busbw("ecmp"), busbw("adaptive"));
    assert!(
        adaptive >= 0.85 * bound && adaptive <= bound,
        "{adaptive:.3} GB/s"
    );
    assert!(
        ecmp < 0.5 * adaptive,
        "ecmp {ecmp:.3}, adaptive {adaptive:.3}"
    );
}

/// The built-in `slow-uplink` (leaf 0's uplink to spine 0 at 25 Gb/s from 1 ms), shortened
/// to 3.5 ms measured from 1.5 ms, under `mode`.
fn slow_uplink(mode: &str) -> (Scenario, Outcome) {
    let s = Scenario::load_edited("slow-uplink", |t| {
        rocelab::config::set_key(t, &format!("topology.load_balancing=\"{mode}\""))?;
        rocelab::config::set_key(t, "duration_ms=3.5")?;
        rocelab::config::set_key(t, "measure_from_ms=1.5")
    })
    .unwrap();
    let o = run(&s).unwrap();
    (s, o)
}

#[test]
fn a_slow_uplink_runs_at_its_new_speed_and_adaptive_routing_goes_around_it() {
    // Eight flows over 3.25 uplinks' worth of speed: 40.6 Gb/s each at best. ECMP
    // leaves the flows it hashed onto the slow uplink there; adaptive routing sees its
    // queue and sends each flow's packets around it.
    let (s, ecmp) = slow_uplink("ecmp");
    let (_, adaptive) = slow_uplink("adaptive");
    // The slow uplink is busy all the time under ECMP: 1 ms at 100 Gb/s, then 2.5 ms at
    // 25, of 3.5 ms at 100 (utilization counts against the link's own speed).
    let lb = balance::uplinks(&ecmp.net, s.topology.bits_per_sec);
    let slow = lb[0].uplinks[0].utilization;
    let expected = (1.0 + 2.5 * 0.25) / 3.5;
    assert!(
        (slow - expected).abs() < 0.02,
        "the slow uplink's utilization {slow:.3}, expected {expected:.3}"
    );
    let report = balance::report(&s, &adaptive).unwrap();
    let capacity = 3.25 * LINE_GOODPUT_GBPS;
    assert!(
        (report.capacity_gbps - capacity).abs() < 0.5,
        "capacity {:.1} Gb/s, expected {capacity:.1}",
        report.capacity_gbps
    );
    let (je, ja) = (
        jain(&goodputs(&ecmp)).unwrap(),
        jain(&goodputs(&adaptive)).unwrap(),
    );
    let total: f64 = goodputs(&adaptive).iter().sum();
    assert!(ja >= 0.95, "adaptive: Jain {ja:.3}");
    assert!(total >= 0.85 * capacity, "adaptive: {total:.1} Gb/s");
    assert!(je < 0.85, "ecmp: Jain {je:.3}");
}

#[test]
fn slow_link_faults_are_checked() {
    let bad = |scenario: &str, fault: &str| {
        let text = rocelab::sim::scenario::scenario_text(scenario).unwrap();
        let text = format!("{text}\n[[fault]]\nkind = \"slow-link\"\n{fault}\n");
        Scenario::from_toml(scenario, &text, None)
            .unwrap_err()
            .to_string()
    };
    let e = bad("elephants", "leaf = 2\nspine = 0\ngbps = 10");
    assert!(e.contains("fault[0].leaf") && e.contains("0-1"), "{e}");
    let e = bad("elephants", "leaf = 0\nspine = 4\ngbps = 10");
    assert!(e.contains("fault[0].spine") && e.contains("0-3"), "{e}");
    let e = bad("elephants", "leaf = 0\nspine = 0\ngbps = 100");
    assert!(e.contains("fault[0].gbps") && e.contains("below"), "{e}");
    let e = bad(
        "elephants",
        "leaf = 0\nspine = 0\ngbps = 10\nstart_us = 5\nstop_us = 5",
    );
    assert!(e.contains("fault[0].stop_us"), "{e}");
    let e = bad("incast", "leaf = 0\nspine = 0\ngbps = 10");
    assert!(e.contains("leaf-spine"), "{e}");
    // One link, one fault.
    let e = bad("slow-uplink", "leaf = 0\nspine = 0\ngbps = 10\n");
    assert!(e.contains("already has a slow-link fault"), "{e}");
}

/// The built-in `all-to-all` under `mode`.
fn all_to_all(mode: &str) -> (Scenario, Outcome) {
    let s = Scenario::load_edited("all-to-all", |t| {
        rocelab::config::set_key(t, &format!("topology.load_balancing=\"{mode}\""))
    })
    .unwrap();
    let o = run(&s).unwrap();
    (s, o)
}

#[test]
fn an_all_to_all_ends_with_its_last_flow_and_ecmp_collisions_delay_it() {
    // Each leaf sends 64 flows of 256 KiB across the spines. A flow is 64 packets of
    // 4096 B, each 4096 + 58 + 24 B on the wire, plus the first one's 16 B RETH: the
    // leaf's four uplinks need 64 x (64 x 4178 + 16) B at 400 Gb/s at the least.
    let bound_ns = 64.0 * (64.0 * 4178.0 + 16.0) * 8.0 / 400.0;
    let exchange = |mode: &str| {
        let (s, o) = all_to_all(mode);
        assert_eq!(o.flows.len(), 16 * 15, "{mode}: every pair, once");
        balance::report(&s, &o).unwrap().exchange.unwrap()
    };
    let (ecmp, adaptive) = (exchange("ecmp"), exchange("adaptive"));
    for x in [&ecmp, &adaptive] {
        assert!(
            (x.bound_ns as f64 - bound_ns).abs() <= 1.0,
            "bound {} ns, expected {bound_ns:.0}",
            x.bound_ns
        );
    }
    let (e, a) = (ecmp.efficiency.unwrap(), adaptive.efficiency.unwrap());
    // Adaptive keeps every uplink busy until the end; ECMP's hash leaves one uplink with
    // more flows than the others, and the exchange waits for it (62 % on seed 1).
    assert!(a >= 0.9, "adaptive: {a:.3} of the bound");
    assert!(e < 0.8 * a, "ecmp {e:.3} against adaptive {a:.3}");
}

#[test]
fn a_leaf_can_balance_with_a_mode_of_its_own() {
    // The slow uplink's flows all leave from leaf 0: adaptive routing there is what
    // matters, whatever the fabric-wide mode; on leaf 1, which sends only ACKs up, it
    // changes nothing.
    let run_with = |leaf: &str| {
        let s = Scenario::load_edited("slow-uplink", |t| {
            rocelab::config::set_key(t, "topology.load_balancing=\"ecmp\"")?;
            rocelab::config::set_key(
                t,
                &format!("topology.switch_load_balancing.{leaf}=\"adaptive\""),
            )?;
            rocelab::config::set_key(t, "duration_ms=3.5")?;
            rocelab::config::set_key(t, "measure_from_ms=1.5")
        })
        .unwrap();
        let o = run(&s).unwrap();
        let report = balance::report(&s, &o).unwrap();
        let modes: Vec<Option<String>> = report.switches.iter().map(|s| s.mode.clone()).collect();
        (jain(&goodputs(&o)).unwrap(), modes, s)
    };
    let (on_sender, modes, s) = run_with("leaf0");
    assert_eq!(modes, [Some("adaptive".to_owned()), None]);
    assert!(
        s.describe_load_balancing()
            .unwrap()
            .contains("leaf0: adaptive"),
        "{:?}",
        s.describe_load_balancing()
    );
    let (on_receiver, _, _) = run_with("leaf1");
    assert!(on_sender >= 0.95, "adaptive on leaf 0: Jain {on_sender:.3}");
    assert!(
        on_receiver < 0.85,
        "adaptive on leaf 1 only: Jain {on_receiver:.3}"
    );
    let bad = |key: &str| {
        Scenario::load_edited("slow-uplink", |t| {
            rocelab::config::set_key(t, &format!("topology.switch_load_balancing.{key}"))
        })
        .unwrap_err()
        .to_string()
    };
    assert!(bad("spine0=\"adaptive\"").contains("a spine has one path"));
    assert!(bad("leaf2=\"adaptive\"").contains("give leaf0 to leaf1"));
    assert!(bad("leaf0=\"fastest\"").contains("\"adaptive\""));
}

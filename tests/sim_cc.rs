//! Congestion control beyond DCQCN (docs/congestion-control.md) on the 16:1 incast at
//! 100 Gb/s, MTU 1024 (`incast-16-cc`), from 2 ms on: HPCC holds 85-99 % of the payload
//! the link carries with a queue near empty; DCTCP with step marking at K = 300 KB fills
//! the link with the queue around K; TIMELY and Swift keep at least 85 %, Swift fairly;
//! nothing is lost. And the telemetry HPCC needs: a switch appends its hop to a packet that
//! asks, keeps the ICRC valid, and the hop's numbers are the port's.

mod common;

use common::net::{Driver, config, roce};
use rocelab::link::frame_time;
use rocelab::sim::run::{Outcome, run};
use rocelab::sim::scenario::Scenario;
use rocelab::sim::summary::{Summary, summary};
use rocelab::wire::int::{INT_REQUEST, IntHop, TRAILER_LEN, hops};
use rocelab::wire::{Ecn, icrc};

/// Payload the bottleneck carries, Gb/s: 1 MiB messages in 1024-byte packets, each
/// 1024 + 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 4 ICRC + 4 FCS + 8 preamble + 12 gap
/// = 1106 bytes on the wire (RETH on one packet in 1024 is 16 bytes in a MiB: 0.001 %).
const CAPACITY_GBPS: f64 = 100.0 * 1024.0 / 1106.0;

struct Run {
    sum: Summary,
    mean_queue_bytes: f64,
}

/// The mean of the receiver's egress queue (switch port to host 16, queue 3) from 2 ms.
fn mean_queue(outcome: &Outcome) -> f64 {
    let col = outcome
        .series
        .columns
        .iter()
        .find(|c| c.name == "queue_sw_h16_q3_bytes")
        .expect("the receiver's queue");
    let q: Vec<f64> = outcome
        .series
        .times
        .iter()
        .zip(&col.values)
        .filter(|(t, _)| t.0 >= 2_000_000)
        .map(|(_, v)| *v)
        .collect();
    q.iter().sum::<f64>() / q.len().max(1) as f64
}

fn run_variants() -> Vec<(String, Run)> {
    let scenario = Scenario::load("incast-16-cc").expect("a built-in scenario");
    scenario
        .variants
        .iter()
        .map(|s| {
            let outcome = run(s).expect("the scenario runs");
            let run = Run {
                sum: summary(s, &outcome),
                mean_queue_bytes: mean_queue(&outcome),
            };
            (s.variant.clone().unwrap_or_default(), run)
        })
        .collect()
}

/// rocelab's own figures of `incast-16-cc`, per variant, as a change must explain them.
const GOLDEN: &str = "tests/data/golden/incast-16-cc.json";

/// The figures of each variant that the golden file holds: goodput (Gb/s), Jain's index,
/// the receiver's mean queue (bytes, from 2 ms) and CE marks.
fn figures(runs: &[(String, Run)]) -> serde_json::Value {
    let variants: serde_json::Map<String, serde_json::Value> = runs
        .iter()
        .map(|(name, r)| {
            let round = |x: f64, places: i32| (x * 10f64.powi(places)).round() / 10f64.powi(places);
            (
                name.clone(),
                serde_json::json!({
                    "goodput_gbps": round(r.sum.goodput_gbps, 3),
                    "jain": r.sum.jain.map(|j| round(j, 4)),
                    "mean_queue_bytes": round(r.mean_queue_bytes, 0),
                    "ce_marked": r.sum.ce_marked,
                }),
            )
        })
        .collect();
    serde_json::json!({
        "scenario": "incast-16-cc",
        "about": "rocelab's figures for the 16:1 incast at 100 Gb/s, MTU 1024, seed 1, measured from 2 ms; checked by tests/sim_cc.rs within goodput 0.5 %, Jain 0.005, mean queue 5 % or 2 KB, CE marks 5 % or 20. A change that moves them must say why and write them again: ROCELAB_BLESS=1 cargo test --test sim_cc",
        "variants": variants,
    })
}

/// The golden figures hold: the simulator is deterministic, so a difference is a change
/// to a congestion control, the switch or the endpoint, and the tolerances only absorb
/// the last digits. `ROCELAB_BLESS=1` writes the file from this run instead.
fn check_golden(runs: &[(String, Run)]) {
    let now = figures(runs);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
    if std::env::var("ROCELAB_BLESS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&now).unwrap() + "\n").unwrap();
        eprintln!("wrote {GOLDEN}");
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{GOLDEN}: {e}"));
    let golden: serde_json::Value = serde_json::from_str(&text).unwrap();
    let (want, got) = (&golden["variants"], &now["variants"]);
    assert_eq!(
        want.as_object().unwrap().keys().collect::<Vec<_>>(),
        got.as_object().unwrap().keys().collect::<Vec<_>>(),
        "{GOLDEN}: the variants"
    );
    let near = |a: f64, b: f64, rel: f64, abs: f64| (a - b).abs() <= (rel * b.abs()).max(abs);
    for (name, w) in want.as_object().unwrap() {
        let g = &got[name];
        let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        for (key, rel, abs) in [
            ("goodput_gbps", 0.005, 0.0),
            ("jain", 0.0, 0.005),
            ("mean_queue_bytes", 0.05, 2000.0),
            ("ce_marked", 0.05, 20.0),
        ] {
            assert!(
                near(f(g, key), f(w, key), rel, abs),
                "{name}.{key}: {} now, {} in {GOLDEN}; if the change is meant, say why and run ROCELAB_BLESS=1 cargo test --test sim_cc",
                g[key],
                w[key]
            );
        }
    }
}

#[test]
fn incast_16_at_100g_each_control_as_published() {
    let runs = run_variants();
    check_golden(&runs);
    let names: Vec<&str> = runs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "dcqcn",
            "dcqcn_paper",
            "dcqcn_vwin",
            "dctcp",
            "hpcc",
            "timely",
            "swift"
        ]
    );
    let get = |name: &str| &runs.iter().find(|(n, _)| n == name).expect(name).1;
    for (name, r) in &runs {
        eprintln!(
            "{name:12} {:7.3} Gb/s ({:.3} of {CAPACITY_GBPS:.3}), Jain {:.3}, mean queue {:6.1} KB, PFC {}",
            r.sum.goodput_gbps,
            r.sum.goodput_gbps / CAPACITY_GBPS,
            r.sum.jain.unwrap_or(0.0),
            r.mean_queue_bytes / 1000.0,
            r.sum.switch_pfc_sent,
        );
        assert_eq!(r.sum.lossless_drops, 0, "{name}: lossless drops");
        assert_eq!(
            r.sum.retransmitted, 0,
            "{name}: nothing lost, nothing resent"
        );
    }

    // DCQCN with run.py's window (BDP × Rc / line): the sixteen windows bound what can
    // queue to 16 BDPs, 16 × 100 Gb/s × 4.19 µs (the star's base RTT) = 838 KB; without
    // it the queue runs past Kmax.
    let bound = 16.0 * 100e9 * 4.19e-6 / 8.0;
    let vwin = get("dcqcn_vwin").mean_queue_bytes;
    assert!(vwin <= bound, "dcqcn_vwin: mean queue {vwin:.0} bytes");
    assert!(get("dcqcn").mean_queue_bytes > bound);

    let hpcc = get("hpcc");
    let share = hpcc.sum.goodput_gbps / CAPACITY_GBPS;
    assert!(
        (0.85..=0.99).contains(&share),
        "HPCC: {share:.3} of the link"
    );
    assert!(
        hpcc.mean_queue_bytes <= 30_000.0,
        "HPCC: mean queue {:.0} bytes",
        hpcc.mean_queue_bytes
    );
    assert!(
        hpcc.sum.ce_marked < 1_000,
        "HPCC keeps the queue below Kmin: {} marks",
        hpcc.sum.ce_marked
    );

    let dctcp = get("dctcp");
    let k = 300_000.0;
    assert!(
        dctcp.sum.goodput_gbps >= 0.95 * CAPACITY_GBPS,
        "DCTCP: {:.3} Gb/s",
        dctcp.sum.goodput_gbps
    );
    assert!(
        (0.5 * k..=1.5 * k).contains(&dctcp.mean_queue_bytes),
        "DCTCP: mean queue {:.0} bytes, K = {k}",
        dctcp.mean_queue_bytes
    );
    assert_eq!(
        dctcp.sum.cnps_sent, 0,
        "DCTCP echoes CE in its ACKs, no CNPs"
    );
    assert!(dctcp.sum.ce_marked > 0, "DCTCP: the step marks");

    // TIMELY's fairness is reported, not asserted: it has no unique fixed point (Zhu et
    // al., CoNEXT 2016), so its rates settle wherever the start left them.
    let timely = get("timely");
    assert!(
        timely.sum.goodput_gbps >= 0.85 * CAPACITY_GBPS,
        "TIMELY: {:.3} Gb/s",
        timely.sum.goodput_gbps
    );

    let swift = get("swift");
    assert!(
        swift.sum.goodput_gbps >= 0.85 * CAPACITY_GBPS,
        "Swift: {:.3} Gb/s",
        swift.sum.goodput_gbps
    );
    assert!(
        swift.sum.jain.is_some_and(|j| j >= 0.9),
        "Swift: Jain {:?}",
        swift.sum.jain
    );
}

const L: usize = 1082;

/// A switch appends its hop to a RoCE frame flagged for telemetry: one hop each, the
/// ICRC written again, the time between two hops one frame's time on the 100 Gb/s wire,
/// the bytes between them one frame, the queue behind the second the third frame (1082
/// bytes, recorded in 80-byte units: 1040), behind the third nothing.
#[test]
fn a_switch_appends_its_hop_and_keeps_the_icrc() {
    let body = "[port_defaults]\nspeed_gbps = 100\ncable_m = 5\n\
                [classify]\ndscp_to_tc = [[26, 3]]\n[pfc]\nlossless = [3]\n\
                [queue.3]\nschedule = \"dwrr\"\n";
    let mut d = Driver::new(&config(body, 2));
    d.learn_hosts();
    for psn in 0..3 {
        let mut f = roce(0, 1, 26, Ecn::Ect0, L, psn);
        let meta = rocelab::wire::parse(&f).unwrap();
        let end = meta.icrc_offset();
        f[end - TRAILER_LEN..end].fill(0);
        f[meta.bth_offset() + 4] |= INT_REQUEST;
        icrc::fill(&mut f, &meta);
        d.rx(0, &f);
    }
    d.run_for(rocelab::time::Nanos(100_000));
    let sent: Vec<_> = d.sent.iter().filter(|s| s.port == 1).collect();
    assert_eq!(sent.len(), 3);
    let mut recorded: Vec<IntHop> = Vec::new();
    for s in &sent {
        let meta = rocelab::wire::parse(&s.frame).unwrap();
        assert_eq!(icrc::verify(&s.frame, &meta), Some(true));
        let end = meta.icrc_offset();
        let mut h = Vec::new();
        hops(&s.frame[end - TRAILER_LEN..end], &mut h);
        assert_eq!(h.len(), 1, "one switch, one hop");
        assert_eq!(h[0].rate_bps, 100_000_000_000);
        recorded.push(h[0]);
    }
    let gap = frame_time(L, 100_000_000_000).0;
    assert_eq!(recorded[2].time_since(&recorded[1]), gap);
    let bytes = recorded[2].bytes_since(&recorded[1]);
    assert!(
        bytes == 1024 || bytes == 1152,
        "{bytes}: 1082 bytes in 128-byte units"
    );
    assert_eq!(recorded[1].qlen_bytes, 1040);
    assert_eq!(recorded[2].qlen_bytes, 0);
}

/// A control or a preset the endpoint does not know is refused with the key named.
#[test]
fn unknown_controls_and_presets_are_refused_by_key() {
    let edit = |key: &'static str, value: &'static str| {
        move |t: &mut toml::Table| {
            let ep = t
                .entry("endpoint")
                .or_insert(toml::Value::Table(toml::Table::new()));
            let ep = ep.as_table_mut().unwrap();
            ep.insert(key.into(), toml::Value::String(value.into()));
            t.remove("variant");
            Ok(())
        }
    };
    let e = Scenario::load_edited("incast-16-cc", edit("cc", "bbr"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("endpoint.cc") && e.contains("bbr"), "{e}");
    let e = Scenario::load_edited("incast-16-cc", edit("preset", "hpcc_typo"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("endpoint.preset") && e.contains("hpcc_typo") && e.contains("hpcc_fixed_win"),
        "{e}"
    );
    let bad_eta = |t: &mut toml::Table| {
        let ep = t.get_mut("endpoint").unwrap().as_table_mut().unwrap();
        ep.insert("cc".into(), toml::Value::String("hpcc".into()));
        let mut hpcc = toml::Table::new();
        hpcc.insert("eta".into(), toml::Value::Float(1.5));
        ep.insert("hpcc".into(), toml::Value::Table(hpcc));
        t.remove("variant");
        Ok(())
    };
    let e = Scenario::load_edited("incast-16-cc", bad_eta)
        .unwrap_err()
        .to_string();
    assert!(e.contains("endpoint.hpcc.eta"), "{e}");
}

/// `rocelab compare --cc`: a column per congestion control on the same scenario, labelled
/// by its preset, HPCC's queues far below DCQCN's, every key in docs/json.md; a preset
/// named twice or unknown is refused before anything runs.
#[test]
fn compare_sets_congestion_controls_side_by_side() {
    let v = common::json_of(
        std::process::Command::new(env!("CARGO_BIN_EXE_rocelab")).args([
            "compare",
            "incast-16-cc",
            "--cc",
            "dcqcn,hpcc",
            "--set",
            "duration_ms=1",
            "--set",
            "measure_from_ms=0.5",
            "--json",
            "-",
        ]),
    );
    let missing = common::undocumented_keys("compare", &v);
    assert!(missing.is_empty(), "not in docs/json.md: {missing:?}");
    let columns = v["fabrics"].as_array().unwrap();
    let labels: Vec<&str> = columns
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["dcqcn", "hpcc"]);
    let q = |i: usize, k: &str| columns[i]["queues"][k].as_f64().unwrap();
    assert!(
        q(1, "p99_bytes") * 10.0 < q(0, "p99_bytes"),
        "HPCC p99 {} against DCQCN's {}",
        q(1, "p99_bytes"),
        q(0, "p99_bytes")
    );
    assert_eq!(columns[1]["summary"]["cnps_sent"], 0, "HPCC sends no CNP");
    let refused = |cc: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
            .args(["compare", "incast-16-cc", "--cc", cc])
            .output()
            .unwrap();
        assert!(!o.status.success() && o.stdout.is_empty(), "{cc} ran");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = refused("hpcc,hpcc");
    assert!(e.contains("--cc: hpcc is given twice"), "{e}");
    let e = refused("bbr");
    assert!(
        e.contains("'bbr' is not a congestion-control preset"),
        "{e}"
    );
}

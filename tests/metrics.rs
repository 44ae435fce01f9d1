//! The Prometheus metrics page: rendered from a switch that paused, marked and dropped in
//! virtual time, parsed by the official Python client's parser, and checked against the
//! switch's own counters and Prometheus's naming practices.

mod common;

use common::net::{Driver, config, roce};
use rocelab::time::Nanos;
use rocelab::wire::Ecn;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

const CFG: &str = r#"
[port_defaults]
speed_gbps = 100
cable_m = 5
[classify]
dscp_to_tc = [[26, 3]]
[pfc]
lossless = [3]
[buffer]
threshold = "static"
shared_bytes = 4194304
queue_limit_bytes = 20000
[pg.3]
xoff_bytes = 100000
xon_bytes = 50000
[queue.0]
[queue.3]
ecn = { kmin_bytes = 10000, kmax_bytes = 20000, pmax = 1.0 }
"#;

#[test]
fn the_metrics_page_parses_and_counts_what_the_switch_counted() {
    if !common::have_python_module(
        "the_metrics_page_parses_and_counts_what_the_switch_counted",
        "prometheus_client.parser",
    ) {
        return;
    }
    let cfg = config(CFG, 3);
    let mut d = Driver::new(&cfg);
    d.learn_hosts();
    d.sw.set_tx_enabled(1, false);
    // Lossless frames past XOFF (PFC, CE marks), lossy frames past the tail limit.
    for psn in 0..200 {
        d.rx(0, &roce(0, 1, 26, Ecn::Ect0, 1082, psn));
    }
    for psn in 0..40 {
        d.rx(2, &roce(2, 1, 0, Ecn::NotEct, 1082, psn));
    }
    d.sw.set_tx_enabled(1, true);
    d.run_for(Nanos::from_millis(1));
    let page = rocelab::runtime::metrics::render(&d.sw, d.now, 1_764_547_200.5);

    let out = common::run_with_input(
        Command::new("python3").arg(common::repo("scripts/check_metrics.py")),
        page.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}\n{page}",
        String::from_utf8_lossy(&out.stderr)
    );
    let families: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(&out.stdout).unwrap();

    // Names: the official practices (base units, unit nouns, _total on counters).
    for (name, v) in &families {
        let kind = v["type"].as_str().unwrap();
        if name == "process_start_time_seconds" {
            continue;
        }
        assert!(name.starts_with("rocelab_"), "{name}");
        match kind {
            "counter" => assert!(
                ["_frames", "_bytes", "_seconds", "_storms", "_restorations"]
                    .iter()
                    .any(|u| name.contains(u)),
                "counter {name} has no unit noun"
            ),
            "gauge" => assert!(
                name.ends_with("_bytes") || name == "rocelab_pg_xoff",
                "gauge {name}"
            ),
            "histogram" => assert!(name.ends_with("_seconds"), "{name}"),
            other => panic!("{name}: type {other}"),
        }
        // One label name per dimension: never "class".
        for s in v["samples"].as_array().unwrap() {
            let labels: BTreeSet<&str> = s["labels"]
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            assert!(!labels.contains("class"), "{name}: {labels:?}");
            assert!(labels.contains("port"), "{name}: {labels:?}");
        }
    }
    for want in [
        "rocelab_pfc_frames_sent",
        "rocelab_pfc_frames_received",
        "rocelab_dropped_frames",
        "rocelab_queue_depth_bytes",
        "rocelab_pg_shared_watermark_bytes",
        "rocelab_pg_headroom_watermark_bytes",
        "rocelab_pg_xoff",
        "rocelab_pause_seconds",
        "rocelab_queue_sojourn_seconds",
        "rocelab_watchdog_storms",
        "rocelab_ecn_marked_frames",
    ] {
        assert!(
            families.contains_key(want),
            "{want} missing: {:?}",
            families.keys()
        );
    }
    assert_eq!(families["process_start_time_seconds"]["type"], "gauge");

    let value = |family: &str, sample: &str, labels: &[(&str, &str)]| -> f64 {
        families[family]["samples"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["name"] == sample)
            .find(|s| labels.iter().all(|(k, v)| s["labels"][k] == *v))
            .unwrap_or_else(|| panic!("{sample} {labels:?}"))["value"]
            .as_f64()
            .unwrap()
    };
    let c0 = &d.sw.counters(0).classes[3];
    let c1 = &d.sw.counters(1).classes;
    assert!(c0.tx_pause_frames > c0.tx_xon_frames && c0.tx_xon_frames > 0);
    assert_eq!(
        value(
            "rocelab_pfc_frames_sent",
            "rocelab_pfc_frames_sent_total",
            &[("port", "p0"), ("priority", "3"), ("kind", "xoff")]
        ),
        (c0.tx_pause_frames - c0.tx_xon_frames) as f64
    );
    assert_eq!(
        value(
            "rocelab_pfc_frames_sent",
            "rocelab_pfc_frames_sent_total",
            &[("port", "p0"), ("priority", "3"), ("kind", "xon")]
        ),
        c0.tx_xon_frames as f64
    );
    assert!(c1[0].dropped_tail > 0);
    assert_eq!(
        value(
            "rocelab_dropped_frames",
            "rocelab_dropped_frames_total",
            &[("port", "p1"), ("queue", "0"), ("reason", "tail")]
        ),
        c1[0].dropped_tail as f64
    );
    assert!(c1[3].ecn_marked > 0);
    assert_eq!(
        value(
            "rocelab_ecn_marked_frames",
            "rocelab_ecn_marked_frames_total",
            &[("port", "p1"), ("queue", "3")]
        ),
        c1[3].ecn_marked as f64
    );
    // The sojourn histogram: +Inf holds every frame sent from the queue, and the
    // buckets never decrease.
    let bucket = |le: &str| {
        value(
            "rocelab_queue_sojourn_seconds",
            "rocelab_queue_sojourn_seconds_bucket",
            &[("port", "p1"), ("queue", "3"), ("le", le)],
        )
    };
    assert_eq!(bucket("+Inf"), c1[3].tx_frames as f64);
    let les = [
        "1e-06", "1e-05", "0.0001", "0.001", "0.01", "0.1", "1.0", "+Inf",
    ];
    for w in les.windows(2) {
        assert!(bucket(w[0]) <= bucket(w[1]), "{w:?}");
    }
    assert_eq!(
        value(
            "rocelab_queue_sojourn_seconds",
            "rocelab_queue_sojourn_seconds_count",
            &[("port", "p1"), ("queue", "3")]
        ),
        c1[3].tx_frames as f64
    );
}

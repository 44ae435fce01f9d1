//! JSON as a stable interface: every document rocelab writes carries `"schema":
//! "rocelab.<kind>/1"`, and every key of every document appears in docs/json.md. A key
//! added or renamed without the document fails here.

mod common;

use common::net::roce;
use rocelab::time::Nanos;
use rocelab::wire::Ecn;
use std::collections::BTreeSet;
use std::process::Command;

fn rocelab(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn every_document_has_a_schema_and_every_key_is_documented() {
    let dir = tempfile::tempdir().unwrap();
    let mut docs: Vec<(String, serde_json::Value)> = Vec::new();

    // inspect: every line.
    for pcap in ["pcaps/roce_mixed.pcapng", "pcaps/roce_rc_ipv4.pcap"] {
        let out = rocelab(&["inspect", "--json", common::repo(pcap).to_str().unwrap()]);
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            docs.push(("inspect".into(), serde_json::from_str(line).unwrap()));
        }
    }
    // replay, with drops so that every section is there.
    let cap = dir.path().join("in.pcap");
    common::write_pcap(
        &cap,
        (0..400u64)
            .map(|i| {
                (
                    Nanos(100 * i),
                    roce((i % 2) as usize, 2, 26, Ecn::Ect0, 1082, i as u32),
                )
            })
            .chain([(Nanos(100 * 400), roce(2, 0, 26, Ecn::Ect0, 1082, 0))]),
    );
    let out = rocelab(&[
        "replay",
        "--split-by",
        "mac",
        cap.to_str().unwrap(),
        "--peer-ignores-pause",
        "--set",
        "buffer.shared_bytes=64K",
        "--json",
        "-",
    ]);
    docs.push((
        "replay".into(),
        serde_json::from_slice(&out.stdout).unwrap(),
    ));
    // conformance.
    let out = rocelab(&["conformance", "--preset", "sonic", "--json", "-"]);
    docs.push((
        "conformance".into(),
        serde_json::from_slice(&out.stdout).unwrap(),
    ));
    // sim: a report with PFC, ECN and CNPs, and a variants summary.
    for (scenario, sub, set) in [
        ("pfc-incast", "", "seed=1"),
        ("incast", "", "seed=1"),
        ("ecn-vs-pfc", "summary.json", "seed=1"),
        // Workload flows, some finished and some not.
        ("web-search", "", "duration_ms=0.3"),
    ] {
        let d = dir.path().join(scenario);
        rocelab(&["sim", scenario, "--set", set, "--out", d.to_str().unwrap()]);
        let file = if sub.is_empty() {
            d.join("report.json")
        } else {
            d.join(sub)
        };
        let text = std::fs::read_to_string(&file).unwrap();
        docs.push(("sim".into(), serde_json::from_str(&text).unwrap()));
    }

    let missing: Vec<String> = docs
        .iter()
        .flat_map(|(what, v)| common::undocumented_keys(what, v))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(
        missing.is_empty(),
        "keys not in docs/json.md:\n  {}",
        missing.join("\n  ")
    );
}

/// series.csv has the same columns for a scenario whatever happened in it: ECN on or
/// off, another seed, another buffer (the lossless priorities, which have PG columns,
/// are part of the fabric).
#[test]
fn series_csv_columns_depend_on_the_fabric_only() {
    let dir = tempfile::tempdir().unwrap();
    let header = |name: &str, extra: &[&str]| {
        let d = dir.path().join(name);
        let mut args = vec!["sim", "pfc-incast", "--out", d.to_str().unwrap()];
        args.extend_from_slice(extra);
        rocelab(&args);
        let csv = std::fs::read_to_string(d.join("series.csv")).unwrap();
        csv.lines().next().unwrap().to_owned()
    };
    let base = header("base", &[]);
    assert!(base.split(',').count() > 20, "{base}");
    for (name, extra) in [
        (
            "small-buffer",
            &["--set", "switch.buffer.shared_bytes=64K"][..],
        ),
        ("ecn", &["--set", "switch.ecn=true"][..]),
        ("seed", &["--seed", "7"][..]),
    ] {
        assert_eq!(header(name, extra), base, "{name}");
    }
}

//! `--counters`: the default table (a port column on every row, under 120 columns), and
//! SONiC's and NX-OS's shapes carrying the same numbers as the JSON report.

use std::process::Command;

fn sim(style: &str, dir: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(["sim", "pfc-incast", "--counters", style, "--out"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The switch's counters of port `name`, class `class`, from report.json.
fn json_counter(dir: &std::path::Path, name: &str, class: u64, key: &str) -> u64 {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let port = v["switches"][0]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap()
        .clone();
    port["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == class)
        .map_or(0, |c| c[key].as_u64().unwrap())
}

#[test]
fn every_shape_carries_the_reports_numbers() {
    let dir = std::env::temp_dir().join(format!("rocelab-counters-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let table = sim("table", &dir);
    let switch = table.split("switch sw:\n").nth(1).unwrap();
    let rows: Vec<&str> = switch
        .lines()
        .take_while(|l| !l.is_empty() && !l.starts_with("* "))
        .collect();
    assert!(rows[0].starts_with("port"), "{switch}");
    for l in switch
        .lines()
        .take_while(|l| !l.starts_with("what happened"))
    {
        assert!(
            l.chars().count() <= 120,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    // Every data row names its port first: a grep for a port finds all its rows.
    for r in &rows[1..] {
        let port = r.split_whitespace().next().unwrap();
        assert!(["h0", "h1", "h2", "h3", "h4"].contains(&port), "{r}");
    }
    let tx_pfc_h0 = json_counter(&dir, "h0", 3, "tx_pause_frames");
    assert!(tx_pfc_h0 > 0);
    let h0: Vec<&str> = rows[1..]
        .iter()
        .find(|r| r.starts_with("h0 ") && r.contains("3*"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(h0[6].parse::<u64>().unwrap(), tx_pfc_h0, "PFC tx column");

    std::fs::remove_dir_all(&dir).unwrap();
    let sonic = sim("sonic", &dir);
    // show pfc counters: the Tx table's h0 row, PFC3 is the fifth column.
    let tx_table = sonic.split("  Port Tx").nth(1).unwrap();
    let h0 = tx_table
        .lines()
        .find(|l| l.trim_start().starts_with("h0 "))
        .unwrap();
    let cols: Vec<&str> = h0.split_whitespace().collect();
    assert_eq!(cols.len(), 9, "{h0}");
    assert_eq!(cols[4].parse::<u64>().unwrap(), tx_pfc_h0);
    assert!(sonic.contains("PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7"));
    // show queue counters: h4's UC3 carries the incast.
    assert!(sonic.contains("TxQ    Counter/pkts    Counter/bytes    Drop/pkts    Drop/bytes"));
    let uc3 = sonic
        .lines()
        .find(|l| l.trim_start().starts_with("h4") && l.contains("UC3"))
        .unwrap();
    let cols: Vec<&str> = uc3.split_whitespace().collect();
    assert_eq!(
        cols[2].parse::<u64>().unwrap(),
        json_counter(&dir, "h4", 3, "tx_frames")
    );
    // show pfcwd stats: a row per port's lossless queue, no storm in this run.
    let wd = sonic.split("STORM DETECTED/RESTORED").nth(1).unwrap();
    let h4 = wd
        .lines()
        .find(|l| l.trim_start().starts_with("h4:3"))
        .unwrap();
    assert_eq!(
        h4.split_whitespace().collect::<Vec<_>>(),
        ["h4:3", "operational", "0/0", "0/0", "N/A", "N/A", "N/A"]
    );
    assert!(!wd.contains("h4:0"), "only lossless queues are watched");

    std::fs::remove_dir_all(&dir).unwrap();
    let nxos = sim("nxos", &dir);
    assert!(nxos.contains("RxPPP") && nxos.contains("TxPPP"));
    let h0 = nxos.lines().find(|l| l.starts_with("h0 ")).unwrap();
    assert_eq!(
        h0.split_whitespace()
            .last()
            .unwrap()
            .parse::<u64>()
            .unwrap(),
        tx_pfc_h0
    );
    assert!(nxos.contains("Egress Queuing for h4 [System]"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SONiC's `show queue wredcounters` and `show pfcwd stats` in a run with ECN marks and
/// a storm the watchdog detected and restored (pfc-storm, its first variant): the same
/// numbers as its report.json. They were missing from `--counters sonic`.
#[test]
fn sonic_shows_ecn_marks_and_the_watchdogs_storms() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(["sim", "pfc-storm", "--counters", "sonic", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let sonic = stdout.split("=== variant 2/2").next().unwrap();
    let counter = |key: &str| json_counter(&dir.path().join("nexus-timings"), "h2", 3, key);
    let wred = sonic
        .split("TxQ    WredDrp/pkts    WredDrp/bytes    EcnMarked/pkts    EcnMarked/bytes")
        .nth(1)
        .unwrap();
    let uc3 = wred
        .lines()
        .find(|l| l.trim_start().starts_with("h2") && l.contains("UC3"))
        .unwrap();
    let ce = counter("ce_marked");
    assert!(ce > 0, "{sonic}");
    assert_eq!(
        uc3.split_whitespace().collect::<Vec<_>>(),
        ["h2", "UC3", "0", "N/A", &ce.to_string(), "N/A"]
    );
    let wd = sonic.split("STORM DETECTED/RESTORED").nth(1).unwrap();
    let h2 = wd
        .lines()
        .find(|l| l.trim_start().starts_with("h2:3"))
        .unwrap();
    let dropped = counter("dropped_watchdog");
    assert!(dropped > 0);
    assert_eq!(
        h2.split_whitespace().collect::<Vec<_>>(),
        [
            "h2:3",
            "operational",
            "1/1",
            &format!("0/{dropped}"),
            "N/A",
            "N/A",
            "N/A"
        ]
    );
}

/// With the lossless class 3 in queue 5 (`tc_to_queue`), the row of h2's queue 5, which
/// sends the lossless traffic and whose storm the watchdog drops from, is marked lossless
/// as h0's class 3 row is, and the story counts those drops as the lossless class's, not
/// as a lossy class's.
#[test]
fn a_remapped_lossless_queue_is_marked_and_its_drops_are_lossless() {
    let dir = std::env::temp_dir().join(format!("rocelab-remapped-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args([
            "sim",
            "pfc-storm",
            "--set",
            "switch.classify.tc_to_queue=[0,1,2,5,4,3,6,7]",
            "--set",
            "switch.queue.5.schedule=dwrr",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let first = stdout.split("=== variant 2/2").next().unwrap();
    let rows: Vec<Vec<&str>> = first
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|r| r.len() > 2)
        .collect();
    let class = |port: &str, n: &str| {
        rows.iter()
            .find(|r| r[0] == port && r[1].trim_end_matches('*') == n)
            .map(|r| r[1].to_owned())
            .unwrap_or_else(|| panic!("no row {port} {n}:\n{first}"))
    };
    assert_eq!(class("h0", "3"), "3*", "the lossless class on ingress");
    assert_eq!(class("h2", "5"), "5*", "the queue that carries it");
    let dir = dir.join("nexus-timings");
    let watchdog = json_counter(&dir, "h2", 5, "dropped_watchdog");
    assert!(watchdog > 0, "the storm was dropped from");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let h2 = v["switches"][0]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "h2")
        .unwrap();
    let q5 = h2["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == 5)
        .unwrap();
    assert_eq!(
        (&q5["lossless"], &q5["lossless_queue"]),
        (&false.into(), &true.into())
    );
    assert!(
        first.contains(&format!(
            "loss: the lossless class lost {watchdog} frames in the switches."
        )),
        "{first}"
    );
    assert!(!first.contains("lossy classes dropped"), "{first}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.parent().unwrap().join("summary.json")).unwrap(),
    )
    .unwrap();
    let nexus = &summary["variants"][0];
    assert_eq!(
        (&nexus["lossless_drops"], &nexus["lossy_drops"]),
        (&watchdog.into(), &0.into())
    );
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

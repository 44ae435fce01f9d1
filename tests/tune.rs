//! `rocelab tune`: what it exports imports back to the recommended settings, and a small
//! tune on an imported SONiC configuration writes its report, plot and exports.

use rocelab::config::export::{self, SwitchChanges};
use rocelab::config::import;

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The ECN profile of queue `q` and the lossless PG alpha, as a configuration has them.
fn ecn(c: &rocelab::config::SwitchConfig, q: usize) -> (u64, u64, f64) {
    let red = c.queues[q].ecn.expect("an ECN profile");
    (red.kmin_bytes, red.kmax_bytes, red.pmax)
}

fn pg_alpha(c: &rocelab::config::SwitchConfig) -> Option<f64> {
    c.pgs.iter().find_map(|pg| match pg.xoff {
        rocelab::config::XoffRule::Dynamic { alpha, .. } if pg.lossless => Some(alpha),
        _ => None,
    })
}

#[test]
fn a_sonic_export_imports_back_to_the_recommended_settings() {
    let text = data("sonic_config_db.json");
    let before = import::sonic::import(&text, "config_db.json").unwrap();
    assert_eq!(ecn(&before.config, 3), (1_048_576, 2_097_152, 0.05));
    let changes = SwitchChanges {
        queues: vec![3, 4],
        kmin_bytes: Some(40_960),
        kmax_bytes: Some(409_600),
        pmax: Some(0.2),
        pg_alpha: Some(0.25),
        ..SwitchChanges::default()
    };
    let (db, patch) = export::sonic(&text, &changes).unwrap();
    let after = import::sonic::import(&db, "config_db.json").unwrap();
    for q in [3, 4] {
        assert_eq!(ecn(&after.config, q), (40_960, 409_600, 0.2));
    }
    assert_eq!(pg_alpha(&after.config), Some(0.25));
    // Nothing else moved: it is the import with the same keys changed, as tune's
    // recommended.toml has them.
    let mut table: toml::Table = toml::from_str(&before.toml).unwrap();
    for set in [
        "queue.3.ecn.kmin_bytes=40960",
        "queue.3.ecn.kmax_bytes=409600",
        "queue.3.ecn.pmax=0.2",
        "queue.4.ecn.kmin_bytes=40960",
        "queue.4.ecn.kmax_bytes=409600",
        "queue.4.ecn.pmax=0.2",
        "buffer.pg_alpha=0.25",
    ] {
        rocelab::config::set_key(&mut table, set).unwrap();
    }
    let expected = rocelab::config::SwitchConfig::from_table(table).unwrap();
    assert_eq!(format!("{:?}", after.config), format!("{expected:?}"));
    // The patch: replace operations on the profile's fields, values as CONFIG_DB strings
    // (RFC 6902; dynamic_th 0 -> -2 is alpha 1 -> 1/4).
    let ops: serde_json::Value = serde_json::from_str(&patch).unwrap();
    let ops = ops.as_array().unwrap();
    assert!(ops.contains(&serde_json::json!({
        "op": "replace", "path": "/WRED_PROFILE/AZURE_LOSSLESS/green_min_threshold", "value": "40960"
    })));
    assert!(ops.contains(&serde_json::json!({
        "op": "replace", "path": "/BUFFER_PROFILE/pg_lossless_100000_5m_profile/dynamic_th", "value": "-2"
    })));
    assert_eq!(ops.len(), 3 + 2, "{patch}");
}

/// The lossless PGs' XON offset and headroom go to every lossless BUFFER_PROFILE
/// (`xon_offset`, `xoff`, and `size` moved by as much, keeping the reserve) and import back
/// to the same PG settings.
#[test]
fn a_sonic_export_of_xon_offset_and_headroom_imports_back() {
    let text = data("sonic_config_db.json");
    let before = import::sonic::import(&text, "config_db.json").unwrap();
    let pg = |c: &rocelab::config::SwitchConfig| {
        let pg = c.pgs[3];
        let off = match pg.xoff {
            rocelab::config::XoffRule::Dynamic {
                xon_offset_bytes, ..
            } => xon_offset_bytes,
            rocelab::config::XoffRule::Static { .. } => panic!("static"),
        };
        (pg.reserve_bytes, pg.headroom_bytes, off)
    };
    // The file's profiles: size 67584 and 71680 with xoff 48128 and 52224, so a reserve
    // of 19456 each; rocelab takes the larger headroom; no xon_offset.
    assert_eq!(pg(&before.config), (19_456, Some(52_224), 0));
    let changes = SwitchChanges {
        xon_offset_bytes: Some(8192),
        headroom_bytes: Some(102_400),
        ..SwitchChanges::default()
    };
    let (db, patch) = export::sonic(&text, &changes).unwrap();
    let after = import::sonic::import(&db, "config_db.json").unwrap();
    assert_eq!(pg(&after.config), (19_456, Some(102_400), 8192));
    let ops: serde_json::Value = serde_json::from_str(&patch).unwrap();
    for (path, value, op) in [
        (
            "/BUFFER_PROFILE/pg_lossless_100000_5m_profile/xon_offset",
            "8192",
            "add",
        ),
        (
            "/BUFFER_PROFILE/pg_lossless_100000_5m_profile/xoff",
            "102400",
            "replace",
        ),
        // 19456 + 102400
        (
            "/BUFFER_PROFILE/pg_lossless_100000_5m_profile/size",
            "121856",
            "replace",
        ),
        (
            "/BUFFER_PROFILE/pg_lossless_100000_40m_profile/size",
            "121856",
            "replace",
        ),
    ] {
        assert!(
            ops.as_array().unwrap().contains(&serde_json::json!({
                "op": op, "path": path, "value": value
            })),
            "{path}: {patch}"
        );
    }
    assert_eq!(ops.as_array().unwrap().len(), 6, "{patch}");
}

#[test]
fn an_nxos_export_imports_back_to_the_recommended_settings() {
    for file in [
        "nxos_running_config.txt",
        "nxos_ai_blueprint_per_interface.txt",
    ] {
        let text = data(file);
        let changes = SwitchChanges {
            queues: vec![3],
            kmin_bytes: Some(40_000),
            kmax_bytes: Some(400_000),
            pmax: Some(0.2),
            ..SwitchChanges::default()
        };
        let (full, lines) = export::nxos(&text, &changes).unwrap();
        let after = import::nxos::import(&full, file).unwrap();
        assert_eq!(ecn(&after.config, 3), (40_000, 400_000, 0.2), "{file}");
        assert!(lines.contains(
            "    random-detect minimum-threshold 40 kbytes maximum-threshold 400 kbytes drop-probability 20 weight 0 ecn"
        ), "{lines}");
        assert!(lines.starts_with("policy-map type queuing "), "{lines}");
        // Every other line is the input's.
        assert_eq!(full.lines().count(), text.lines().count());
        let alpha = SwitchChanges {
            pg_alpha: Some(2.0),
            ..changes.clone()
        };
        assert!(export::nxos(&text, &alpha).is_err());
        let headroom = SwitchChanges {
            headroom_bytes: Some(40_960),
            ..changes.clone()
        };
        let e = export::nxos(&text, &headroom).unwrap_err().to_string();
        assert!(e.contains("no headroom to write"), "{e}");
        let xon = SwitchChanges {
            xon_offset_bytes: Some(4096),
            ..changes
        };
        let e = export::nxos(&text, &xon).unwrap_err().to_string();
        assert!(e.contains("no XON offset to write"), "{e}");
    }
}

#[test]
fn a_toml_export_reads_back_with_each_change_commented() {
    let imported = import::sonic::import(&data("sonic_config_db.json"), "c.json").unwrap();
    let table: toml::Table = toml::from_str(&imported.toml).unwrap();
    let changes = vec![
        (
            "queue.3.ecn.kmin_bytes".to_owned(),
            toml::Value::Integer(40_960),
            "p99 FCT slowdown 20 -> 10".to_owned(),
        ),
        (
            "buffer.pg_alpha".to_owned(),
            toml::Value::Float(0.25),
            "same".to_owned(),
        ),
    ];
    let text = export::toml(&table, &changes).unwrap();
    let back = rocelab::config::SwitchConfig::from_toml(&text).unwrap();
    assert_eq!(back.queues[3].ecn.unwrap().kmin_bytes, 40_960);
    assert_eq!(pg_alpha(&back), Some(0.25));
    assert!(
        text.contains("was 1048576: p99 FCT slowdown 20 -> 10"),
        "{text}"
    );
    assert!(text.contains("pg_alpha was 1"), "{text}");
}

fn rocelab(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(args)
        .output()
        .unwrap()
}

/// Web-search flows and 3:1 incast bursts on a 4-host star at 100 Gb/s, 1 ms.
/// [`MIX`] written into `dir` as `mix.toml`, and `--from` for the SONiC test
/// configuration: what most tunes here start from.
fn mix_from_sonic(dir: &tempfile::TempDir) -> (std::path::PathBuf, String) {
    let scenario = dir.path().join("mix.toml");
    std::fs::write(&scenario, MIX).unwrap();
    let from = format!(
        "sonic:{}/tests/data/sonic_config_db.json",
        env!("CARGO_MANIFEST_DIR")
    );
    (scenario, from)
}

const MIX: &str = r#"
description = "a small mix for tune's tests"
seed = 1
duration_ms = 1

[topology]
kind = "star"
hosts = 4
link_gbps = 100
delay_ns = 1000

[[workload]]
kind = "poisson"
cdf = "web-search"
load = 0.5
duration_us = 700

[[workload]]
kind = "incast-bursts"
to = 3
bytes = "128K"
period_us = 100
"#;

#[test]
fn a_tune_from_sonic_reports_per_seed_and_its_export_imports_to_recommended_toml() {
    let dir = tempfile::tempdir().unwrap();
    let (scenario, from) = mix_from_sonic(&dir);
    let tune = |out: &str, jobs: &str| {
        let out = dir.path().join(out);
        let o = rocelab(&[
            "tune",
            scenario.to_str().unwrap(),
            "--from",
            &from,
            "--out",
            out.to_str().unwrap(),
            "--budget",
            "14",
            "--seeds",
            "2",
            "--check-seeds",
            "1",
            "--jobs",
            jobs,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (out, String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let (out, stdout) = tune("a", "2");
    assert!(stdout.contains("ecn.kmin"), "{stdout}");
    assert!(stdout.contains("check"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("tune.json")).unwrap()).unwrap();
    assert_eq!(json["schema"], "rocelab.tune/1");
    assert!(json["runs"].as_u64().unwrap() <= 14);
    assert_eq!(json["start"]["search_seeds"].as_array().unwrap().len(), 2);
    assert_eq!(
        json["recommended"]["check_seeds"].as_array().unwrap().len(),
        1
    );
    // Never one seed: the recommendation's score is over both, and not worse than the start's.
    let (start, best) = (
        json["start"]["score"].as_f64().unwrap(),
        json["recommended"]["score"].as_f64().unwrap(),
    );
    assert!(best <= start, "{best} > {start}");
    let svg = std::fs::read_to_string(out.join("tune.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("seed 3 (check)"));
    // search.svg: every point tried; fct.svg: FCT by size on the seed the search never saw.
    let search = std::fs::read_to_string(out.join("search.svg")).unwrap();
    let tried = json["history"].as_array().unwrap().len();
    assert!(
        search.contains(&format!("{tried} points tried")),
        "{search}"
    );
    let fct = std::fs::read_to_string(out.join("fct.svg")).unwrap();
    assert!(fct.contains("seed 3 (unseen)") && fct.contains("recommended p99"));
    // The exported CONFIG_DB imports back to the configuration recommended.toml gives.
    let recommended = std::fs::read_to_string(out.join("recommended.toml")).unwrap();
    let recommended = rocelab::config::SwitchConfig::from_toml(&recommended).unwrap();
    let db = std::fs::read_to_string(out.join("config_db.json")).unwrap();
    let back = import::sonic::import(&db, "config_db.json").unwrap();
    assert_eq!(format!("{:?}", back.config), format!("{recommended:?}"));
    let patch: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("config_db.patch.json")).unwrap())
            .unwrap();
    assert!(patch.is_array());
    // The same search on one thread: the same answer, draw for draw.
    let (again, _) = tune("b", "1");
    assert_eq!(
        std::fs::read_to_string(again.join("tune.json"))
            .unwrap()
            .replace("/b\"", "/a\""),
        std::fs::read_to_string(out.join("tune.json")).unwrap()
    );
}

#[test]
fn bad_tunes_are_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("mix.toml");
    std::fs::write(&scenario, MIX).unwrap();
    let sonic = format!(
        "sonic:{}/tests/data/sonic_config_db.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let nxos = format!(
        "nxos:{}/tests/data/nxos_running_config.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = dir.path().join("out");
    let s = scenario.to_str().unwrap();
    let o = out.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--from", "config_db.json"],
            "give sonic:CONFIG_DB.json",
        ),
        (vec!["--from", &sonic, "--knobs", "ecn.kmn"], "no such knob"),
        (
            vec!["--from", &nxos, "--knobs", "pfc.alpha"],
            "NX-OS sizes its buffers",
        ),
        (vec!["--from", &sonic, "--budget", "3"], "--budget 6"),
        (
            vec!["--from", &sonic, "--budget", "0"],
            "0: give a number of runs",
        ),
        (
            vec!["--from", &sonic, "--budget=-5"],
            "-5: give a number of runs",
        ),
        (
            vec!["--from", &sonic, "--budget", "0m"],
            "0m: no time at all",
        ),
        (
            vec!["--from", &sonic, "--budget", "20x"],
            "20x: unknown unit \"x\" (s, m or h)",
        ),
        (
            vec!["--from", &sonic, "--budget", "20m", "--plan"],
            "a time budget counts this machine's wall time",
        ),
        (
            vec!["--from", &sonic, "--drain-ms", "-1"],
            "--drain-ms -1: give 0 to 1000",
        ),
        (
            vec!["--from", &nxos, "--knobs", "ecn.kmin,pfc.headroom"],
            "--knobs pfc.headroom: NX-OS sizes its buffers itself",
        ),
        (
            vec!["--from", "sonic:/nonexistent.json"],
            "--from sonic:/nonexistent.json",
        ),
    ] {
        let mut all = vec!["tune", s, "--out", o];
        all.extend(args.iter().copied());
        let r = rocelab(&all);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{all:?}");
        assert!(err.contains(says), "{all:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Run lines in a tune's journal (its first line says what the runs were made with); each
/// must parse as a run with figures or an error.
fn journal_runs(path: &std::path::Path) -> usize {
    let Ok(text) = std::fs::read_to_string(path) else {
        return 0;
    };
    // A line being written as we read may be cut short: count whole lines only.
    let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    let mut lines = whole.lines();
    let Some(head) = lines.next() else {
        return 0;
    };
    let head: serde_json::Value = serde_json::from_str(head).unwrap();
    assert_eq!(head["schema"], "rocelab.tune-journal/1");
    lines
        .map(|l| {
            let run: serde_json::Value = serde_json::from_str(l).unwrap();
            assert!(run["seed"].is_u64() && run["values"].is_array(), "{l}");
            assert!(
                run["figures"].is_object() || run["error"].is_string(),
                "{l}"
            );
        })
        .count()
}

/// A tune stopped by SIGTERM, resumed and stopped again by SIGINT, then resumed to the
/// end: each stop exits non-zero (not killed by the signal) with the best point so far
/// written and marked interrupted, the journal keeps every finished run, and the answer
/// at the end is the uninterrupted tune's, byte for byte.
#[test]
fn an_interrupted_tune_keeps_its_runs_and_resumes_to_the_uninterrupted_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (scenario, from) = mix_from_sonic(&dir);
    let args = |out: &str| -> Vec<String> {
        let out = dir.path().join(out);
        [
            "tune",
            scenario.to_str().unwrap(),
            "--from",
            &from,
            "--out",
            out.to_str().unwrap(),
            "--budget",
            "40",
            "--seeds",
            "2",
            "--check-seeds",
            "1",
            "--jobs",
            "2",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    };
    let whole = rocelab(&args("whole").iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let cut = dir.path().join("cut");
    let journal = cut.join("journal.jsonl");
    let read = |f: &str| std::fs::read_to_string(cut.join(f)).unwrap();
    for (signal, name, resume) in [
        (libc::SIGTERM, "SIGTERM", false),
        (libc::SIGINT, "SIGINT", true),
    ] {
        let before = journal_runs(&journal);
        let mut a = args("cut");
        if resume {
            a.push("--resume".into());
        }
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
            .args(&a)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let waited = std::time::Instant::now();
        while journal_runs(&journal) < before + 4 {
            assert!(waited.elapsed().as_secs() < 120, "no runs journaled");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        // SAFETY: kill(2) on our own child's pid, which has not been waited for.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        // Exit code 1 from main, not death by the signal (which has no code).
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(&format!("{name} stopped the search")), "{err}");
        assert!(err.contains("--resume"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        let json: serde_json::Value = serde_json::from_str(&read("tune.json")).unwrap();
        assert_eq!(json["interrupted"], true);
        assert!(read("table.txt").contains("INTERRUPTED after"));
        // Every run the search counted is in the journal, and it stopped well short.
        let runs = json["runs"].as_u64().unwrap() as usize;
        assert_eq!(journal_runs(&journal), runs);
        assert!(runs >= before + 4 && runs < 40, "{runs}");
        // The recommendation so far ran on both seeds; no check was run.
        assert_eq!(
            json["recommended"]["search_seeds"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            json["recommended"]["check_seeds"].as_array().unwrap().len(),
            0
        );
        assert!(cut.join("recommended.toml").exists());
    }
    let mut a = args("cut");
    a.push("--resume".into());
    let done = rocelab(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{err}");
    assert!(err.contains("runs from the journal"), "{err}");
    let whole_dir = dir.path().join("whole");
    for f in ["tune.json", "table.txt", "recommended.toml"] {
        assert_eq!(
            read(f),
            std::fs::read_to_string(whole_dir.join(f)).unwrap(),
            "{f}"
        );
    }
    // The uninterrupted tune's journal holds as many runs: none ran twice.
    assert_eq!(
        journal_runs(&journal),
        journal_runs(&whole_dir.join("journal.jsonl"))
    );
}

#[test]
fn a_resume_is_refused_without_a_journal_or_with_other_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let (scenario, from) = mix_from_sonic(&dir);
    let out = dir.path().join("out");
    let (s, o) = (scenario.to_str().unwrap(), out.to_str().unwrap());
    let base = ["tune", s, "--from", &from, "--out", o, "--budget", "6"];
    let run = |extra: &[&str]| {
        let mut all = base.to_vec();
        all.extend_from_slice(extra);
        rocelab(&all)
    };
    let r = run(&["--resume"]);
    assert!(String::from_utf8_lossy(&r.stderr).contains("journal.jsonl does not exist"));
    assert!(run(&["--check-seeds", "0"]).status.success());
    for (extra, says) in [
        (
            vec!["--check-seeds", "0"],
            "give --resume to go on from them",
        ),
        (
            vec!["--check-seeds", "0", "--resume", "--seeds", "2"],
            "other seeds (--seed, --seeds): [1,2,3] there, [1,2] here",
        ),
        (
            vec!["--check-seeds", "0", "--resume", "--knobs", "ecn.kmin"],
            "other knobs: ecn.kmin,ecn.kmax,ecn.pmax,pfc.alpha there, ecn.kmin here",
        ),
        (
            vec![
                "--check-seeds",
                "0",
                "--resume",
                "--set",
                "topology.delay_ns=2000",
            ],
            "another scenario",
        ),
        (
            vec![
                "--check-seeds",
                "0",
                "--resume",
                "--objective",
                "small-fct-p99",
            ],
            "another --objective",
        ),
    ] {
        let r = run(&extra);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(
            !r.status.success() && err.contains(says),
            "{extra:?}: {err}"
        );
    }
    // The same arguments resume (here: replay a finished tune) and succeed; --progress
    // puts the progress line on standard error, never on standard output.
    let r = run(&["--check-seeds", "0", "--resume", "--progress"]);
    assert!(r.status.success());
    let (out, err) = (
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr),
    );
    assert!(
        err.contains("tune: 6 of at most 6 runs, best so far"),
        "{err}"
    );
    assert!(!out.contains("of at most"), "{out}");
}

/// With --drain-ms the arrivals stop at the scenario's duration_ms and the run goes on: the
/// flows in flight at 1 ms (one per seed on the mix, from the start's tune) finish.
#[test]
fn a_drain_lets_the_flows_in_flight_finish() {
    let dir = tempfile::tempdir().unwrap();
    let (scenario, from) = mix_from_sonic(&dir);
    let unfinished = |drain: &str| -> Vec<u64> {
        let out = dir.path().join(format!("drain{drain}"));
        let o = rocelab(&[
            "tune",
            scenario.to_str().unwrap(),
            "--from",
            &from,
            "--out",
            out.to_str().unwrap(),
            "--budget",
            "4",
            "--seeds",
            "2",
            "--check-seeds",
            "0",
            "--drain-ms",
            drain,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("tune.json")).unwrap()).unwrap();
        assert_eq!(json["drain_ms"].as_f64(), drain.parse().ok());
        json["start"]["search_seeds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["figures"]["unfinished_flows"].as_u64().unwrap())
            .collect()
    };
    let (without, with) = (unfinished("0"), unfinished("1"));
    assert!(without.iter().sum::<u64>() > 0, "{without:?}");
    assert!(
        with.iter().zip(&without).all(|(a, b)| a <= b),
        "{with:?} {without:?}"
    );
    assert!(with.iter().sum::<u64>() < without.iter().sum::<u64>());
}

/// A time budget: the search starts no run once the time is up, and the best point that
/// ran on every seed by then is checked on the held-out seed and written, not marked
/// interrupted; tune.json says which budget it had.
#[test]
fn a_time_budget_ends_the_search_and_the_check_still_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (scenario, from) = mix_from_sonic(&dir);
    let out = dir.path().join("timed");
    let started = std::time::Instant::now();
    let o = rocelab(&[
        "tune",
        scenario.to_str().unwrap(),
        "--from",
        &from,
        "--out",
        out.to_str().unwrap(),
        "--budget",
        "2s",
        "--seeds",
        "2",
        "--check-seeds",
        "1",
    ]);
    let took = started.elapsed();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("tune.json")).unwrap()).unwrap();
    assert_eq!(json["budget_seconds"], 2);
    assert!(json["budget_runs"].is_null());
    // Unbounded by runs, the search only ends by the clock (its space is far larger than
    // two seconds of runs).
    assert_eq!(json["time_up"], true);
    assert_eq!(json["interrupted"], false);
    assert_eq!(
        json["recommended"]["check_seeds"].as_array().unwrap().len(),
        1
    );
    assert_eq!(
        json["recommended"]["search_seeds"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let journal = journal_runs(&out.join("journal.jsonl"));
    // The search's runs and the check's two.
    assert_eq!(journal, json["runs"].as_u64().unwrap() as usize + 2);
    assert!(
        std::fs::read_to_string(out.join("table.txt"))
            .unwrap()
            .contains("the time budget of 2s was spent after")
    );
    // It stopped starting runs at 2 s: what is left is runs in flight, the check and the
    // writing, a few seconds at most even in a debug build on a loaded machine.
    assert!(took.as_secs_f64() < 60.0, "{took:?}");
}

/// Runs every line of a tune's DIR/plan/jobs.txt, as a user would on other machines,
/// with the binary under test as `rocelab`.
fn run_jobs(plan: &std::path::Path) -> usize {
    let jobs = std::fs::read_to_string(plan.join("jobs.txt")).unwrap();
    for line in jobs.lines() {
        let ran = std::process::Command::new("sh")
            .args(["-c", line])
            .current_dir(plan)
            .env("ROCELAB", env!("CARGO_BIN_EXE_rocelab"))
            .output()
            .unwrap();
        assert!(ran.status.success(), "{line}: {ran:?}");
    }
    jobs.lines().count()
}

/// The same tune spread over "machines": --plan writes the runs the search needs next,
/// the test runs jobs.txt's lines, --merge reads their results and writes the next plan,
/// until the report; every output is the in-process tune's, byte for byte. A merge with a
/// result missing or of another run is refused, naming the run.
#[test]
fn a_tune_through_plans_and_merges_gives_the_in_process_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (scenario, from) = mix_from_sonic(&dir);
    let args = |out: &str, extra: &[&str]| -> std::process::Output {
        let out = dir.path().join(out);
        let mut all = vec![
            "tune",
            scenario.to_str().unwrap(),
            "--from",
            &from,
            "--out",
            out.to_str().unwrap(),
            "--budget",
            "20",
            "--seeds",
            "2",
            "--check-seeds",
            "1",
        ];
        all.extend_from_slice(extra);
        rocelab(&all)
    };
    let whole = args("whole", &["--jobs", "2"]);
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let spread = dir.path().join("spread");
    let plan = spread.join("plan");
    let first = args("spread", &["--plan"]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    // The first batch is the start on both search seeds.
    let planned: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(plan.join("plan.json")).unwrap()).unwrap();
    assert_eq!(planned["schema"], "rocelab.tune-plan/1");
    assert_eq!(planned["runs"].as_array().unwrap().len(), 2);
    // Nothing run yet: the merge names both runs and merges nothing.
    let early = args("spread", &["--merge"]);
    let err = String::from_utf8_lossy(&early.stderr);
    assert!(!early.status.success(), "{err}");
    assert!(
        err.contains("2 of 2 runs have no result yet") && err.contains("runs/0000, runs/0001"),
        "{err}"
    );
    assert_eq!(journal_runs(&spread.join("journal.jsonl")), 0);
    run_jobs(&plan);
    // A result copied over another run's: refused by name, as not its run's.
    let (a, b) = (plan.join("runs/0000/result"), plan.join("runs/0001/result"));
    let saved = std::fs::read(b.join("report.json")).unwrap();
    std::fs::copy(a.join("report.json"), b.join("report.json")).unwrap();
    let wrong = args("spread", &["--merge"]);
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(!wrong.status.success(), "{err}");
    assert!(
        err.contains("1 of 2 runs have a result that is not theirs") && err.contains("runs/0001 ("),
        "{err}"
    );
    std::fs::write(b.join("report.json"), saved).unwrap();
    // Merge, run the next plan, until the report is written.
    let mut batches = 1;
    let mut jobs = 2;
    loop {
        let merged = args("spread", &["--merge"]);
        let (out, err) = (
            String::from_utf8_lossy(&merged.stdout),
            String::from_utf8_lossy(&merged.stderr),
        );
        assert!(merged.status.success(), "{err}");
        if !plan.exists() {
            assert!(out.contains("wrote start.toml"), "{out}");
            break;
        }
        assert!(
            out.contains("then the same `rocelab tune` command with --merge"),
            "{out}"
        );
        jobs += run_jobs(&plan);
        batches += 1;
        assert!(batches < 40, "no end to the plans");
    }
    // Several rungs, each a plan of its own, and no run twice.
    assert!(batches >= 4, "{batches}");
    let read = |d: &str, f: &str| std::fs::read_to_string(dir.path().join(d).join(f)).unwrap();
    assert_eq!(journal_runs(&spread.join("journal.jsonl")), jobs);
    assert_eq!(
        journal_runs(&spread.join("journal.jsonl")),
        journal_runs(&dir.path().join("whole").join("journal.jsonl"))
    );
    for f in [
        "tune.json",
        "table.txt",
        "recommended.toml",
        "config_db.json",
        "fct.svg",
        "search.svg",
    ] {
        assert_eq!(read("spread", f), read("whole", f), "{f}");
    }
    // Done: a merge with no plan left says where it looked.
    let after = args("spread", &["--merge"]);
    let err = String::from_utf8_lossy(&after.stderr);
    assert!(
        !after.status.success() && err.contains("plan.json"),
        "{err}"
    );
    // A --resume that finds a plan with its results merges it and goes on here, to the
    // same answer.
    assert!(args("resumed", &["--plan"]).status.success());
    run_jobs(&dir.path().join("resumed").join("plan"));
    let resumed = args("resumed", &["--resume"]);
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{err}");
    assert!(err.contains("merged 2 runs from"), "{err}");
    assert!(!dir.path().join("resumed").join("plan").exists());
    assert_eq!(read("resumed", "tune.json"), read("whole", "tune.json"));
}

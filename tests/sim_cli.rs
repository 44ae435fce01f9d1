//! `rocelab sim`: scenario files and the built-in ones, the same output for the same seed,
//! the nccl-tests-like table, the time-series CSV, the SVG plots and the JSON report, and
//! clear errors for bad scenarios.

use std::path::Path;
use std::process::{Command, Output};

fn rocelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(args)
        .output()
        .expect("run rocelab")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A short 2:1 incast at 10 Gb/s that reaches PFC: ECN off, a small buffer.
const SMALL_INCAST: &str = r#"
description = "test incast"
seed = 7
duration_ms = 3
measure_from_ms = 1
sample_us = 20

[topology]
kind = "star"
hosts = 3
link_gbps = 10
delay_ns = 500

[switch]
ecn = false
buffer.shared_bytes = 262144

[[flow]]
from = 0
to = 2

[[flow]]
from = 1
to = 2
"#;

#[test]
fn same_seed_same_output_and_every_file_written() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(dir.path(), "incast.toml", SMALL_INCAST);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let run = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "sim",
            "--scenario",
            &scenario,
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = rocelab(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        o
    };
    let first = run(&a, &[]);
    let second = run(&b, &[]);
    let strip = |o: &Output, dir: &Path| text(&o.stdout).replace(dir.to_str().unwrap(), "DIR");
    assert_eq!(
        strip(&first, &a),
        strip(&second, &b),
        "same seed, same stdout"
    );
    for f in ["series.csv", "report.json"] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f} differs between two runs of the same seed"
        );
    }
    let stdout = text(&first.stdout);
    assert!(stdout.contains("scenario incast: test incast"), "{stdout}");
    assert!(stdout.contains("Jain fairness"), "{stdout}");
    assert!(text(&first.stderr).contains("M frames/s"));

    // The series: a time column, then the congested queue, both QPs' rates and Rc, and the
    // PFC state of the two senders' ports; one row per 20 µs over 3 ms.
    let csv = std::fs::read_to_string(a.join("series.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(header[0], "time_us");
    for col in [
        "queue_sw_h2_q3_bytes",
        "rate_h0_qp0x100_gbps",
        "rc_h1_qp0x102_gbps",
        "xoff_sw_h0_pg3",
        "xoff_sw_h1_pg3",
        "paused_h0_p3",
    ] {
        assert!(header.contains(&col), "{col} missing from {header:?}");
    }
    let rows: Vec<Vec<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 3_000 / 20 + 1, "one row per sample");
    assert!(rows.iter().all(|r| r.len() == header.len()));
    let q = header
        .iter()
        .position(|c| *c == "queue_sw_h2_q3_bytes")
        .unwrap();
    assert!(rows.iter().any(|r| r[q] > 0.0));

    for svg in ["queues.svg", "rates.svg", "pauses.svg"] {
        let body = std::fs::read_to_string(a.join(svg)).unwrap();
        assert!(
            body.starts_with("<svg") && body.trim_end().ends_with("</svg>"),
            "{svg}"
        );
        assert!(
            body.contains("<polyline") || body.contains("<rect"),
            "{svg} draws nothing"
        );
    }
    let pauses = std::fs::read_to_string(a.join("pauses.svg")).unwrap();
    assert!(
        pauses.contains("sw/h0 PG3 XOFF"),
        "the pause plot names the paused port"
    );

    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["seed"], 7);
    assert_eq!(report["qps"].as_array().unwrap().len(), 2);
    let pfc: u64 = report["switches"][0]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["classes"].as_array().unwrap())
        .map(|c| c["tx_pause_frames"].as_u64().unwrap())
        .sum();
    assert!(pfc > 0, "ECN off and a small buffer: PFC must fire");

    // --seed overrides the scenario's seed.
    let other = run(&dir.path().join("c"), &["--seed", "8"]);
    assert!(text(&other.stdout).contains("seed 8"));
}

#[test]
fn a_different_seed_gives_different_marks() {
    let dir = tempfile::tempdir().unwrap();
    let marking = SMALL_INCAST
        .replace(
            "ecn = false",
            "queue.3.ecn = { kmin_bytes = 2000, kmax_bytes = 100000, pmax = 0.05 }",
        )
        .replace("buffer.shared_bytes = 262144", "");
    let scenario = write(dir.path(), "marking.toml", &marking);
    let run = |seed: &str| {
        let o = rocelab(&["sim", "--scenario", &scenario, "--seed", seed]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stdout).replace(&format!("seed {seed}"), "seed N")
    };
    assert_eq!(run("3"), run("3"));
    assert_ne!(run("3"), run("4"), "RED draws follow the seed");
}

/// A short Poisson workload on a 4-host star, its sizes from a file: flows drawn from the
/// seed when the scenario is read.
const SMALL_WORKLOAD: &str = r#"
seed = 1
duration_ms = 0.2
[topology]
kind = "star"
hosts = 4
link_gbps = 10
[[workload]]
kind = "poisson"
cdf = "sizes.txt"
load = 0.5
"#;

/// `--seed` once changed only the seed the report printed and the switch's draws: the
/// workload's flows were drawn before it applied, so `--seed 1` and `--seed 2` ran the
/// same flows under different seeds. It is now `--set seed=N`.
#[test]
fn the_seed_flag_draws_the_workload_as_set_seed_does() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "sizes.txt", "1000 0\n10000 1\n");
    let scenario = write(dir.path(), "w.toml", SMALL_WORKLOAD);
    let flows = |name: &str, args: &[&str]| {
        let out = dir.path().join(name);
        let mut all = vec!["sim", scenario.as_str(), "--out", out.to_str().unwrap()];
        all.extend_from_slice(args);
        let o = rocelab(&all);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
        let arrivals: Vec<(u64, u64, u64)> = report["fct"]["flows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let n = |k: &str| f[k].as_u64().unwrap();
                (n("from"), n("arrival_ns"), n("bytes"))
            })
            .collect();
        assert!(!arrivals.is_empty(), "{args:?} made no flows");
        (report["seed"].as_u64().unwrap(), arrivals)
    };
    let one = flows("one", &[]);
    let flag = flows("flag", &["--seed", "2"]);
    let set = flows("set", &["--set", "seed=2"]);
    assert_eq!(flag, set, "--seed 2 is --set seed=2");
    assert_eq!(flag.0, 2);
    assert_ne!(one.1, flag.1, "another seed draws other flows");
    // compare runs the flows --seed draws too.
    let compare = |args: &[&str]| {
        let mut all = vec![
            "compare",
            scenario.as_str(),
            "--fabrics",
            "roce",
            "--json",
            "-",
        ];
        all.extend_from_slice(args);
        let o = rocelab(&all);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        json["fabrics"][0]["fct"].clone()
    };
    assert_eq!(compare(&["--seed", "2"]), compare(&["--set", "seed=2"]));
    assert_ne!(compare(&["--seed", "2"]), compare(&[]));
}

/// A scenario's description is its file's; a run with `--set` changes says which, in the
/// header and in report.json, so that a 64-host run of a "3-host" scenario does not pass
/// for the file's. A `--set` of the description itself, or of the seed (which the header
/// prints anyway), adds nothing.
#[test]
fn set_changes_are_named_after_the_description() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(dir.path(), "incast.toml", SMALL_INCAST);
    let run = |name: &str, sets: &[&str]| {
        let out = dir.path().join(name);
        let mut all = vec!["sim", scenario.as_str(), "--out", out.to_str().unwrap()];
        for s in sets {
            all.extend_from_slice(&["--set", s]);
        }
        let o = rocelab(&all);
        assert!(o.status.success(), "{sets:?}: {}", text(&o.stderr));
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
        let header = text(&o.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned();
        (header, report["description"].as_str().unwrap().to_owned())
    };
    let (header, described) = run("plain", &[]);
    assert_eq!(described, "test incast");
    assert!(header.ends_with(": test incast"), "{header}");
    let (header, described) = run("changed", &["topology.hosts=4", "duration_ms=2", "seed=3"]);
    assert_eq!(
        described,
        "test incast; with topology.hosts=4, duration_ms=2"
    );
    assert!(header.ends_with(&described), "{header}");
    assert!(header.starts_with("scenario "), "{header}");
    let (_, described) = run("renamed", &["description=\"mine\""]);
    assert_eq!(described, "mine");
    // Each variant of a scenario with variants says it too.
    let variants = write(
        dir.path(),
        "variants.toml",
        &format!(
            "{SMALL_INCAST}\n[[variant]]\nname = \"a\"\ndescription = \"first\"\n\n[[variant]]\nname = \"b\"\ndescription = \"second\"\n"
        ),
    );
    let out = dir.path().join("variants");
    let o = rocelab(&[
        "sim",
        variants.as_str(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "topology.hosts=4",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let described = |path: &Path| {
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        json["description"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        described(&out.join("summary.json")),
        "test incast; with topology.hosts=4"
    );
    assert_eq!(
        described(&out.join("a").join("report.json")),
        "first; with topology.hosts=4"
    );
    assert_eq!(
        described(&out.join("b").join("report.json")),
        "second; with topology.hosts=4"
    );
}

/// A reused `--out` folder kept the files of earlier runs that the new one does not
/// write: a workload run's fct.svg (titled with the old scenario) beside another
/// scenario's report.json, a run of variants' summary.json and variant folders beside a
/// plain run's report. Each run now leaves its own outputs only; files that are not
/// rocelab's stay.
#[test]
fn a_reused_out_folder_holds_one_run() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "sizes.txt", "1000 0\n10000 1\n");
    let workload = write(dir.path(), "w.toml", SMALL_WORKLOAD);
    let incast = write(dir.path(), "incast.toml", SMALL_INCAST);
    let variants = write(
        dir.path(),
        "v.toml",
        &format!(
            "{}\n[[variant]]\nname = \"PFC only\"\n\n[[variant]]\nname = \"ECN\"\nswitch = {{ ecn = true }}\n",
            SMALL_INCAST.replace("duration_ms = 3", "duration_ms = 1.5")
        ),
    );
    let out = dir.path().join("out");
    let run = |scenario: &str| {
        let o = rocelab(&["sim", scenario, "--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{scenario}: {}", text(&o.stderr));
        text(&o.stderr)
    };
    let files = |d: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let report = [
        "pauses.svg",
        "pgs.svg",
        "queues.svg",
        "rates.svg",
        "report.json",
        "series.csv",
    ];
    run(&workload);
    assert!(out.join("fct.svg").exists());
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let said = run(&incast);
    assert!(said.contains("fct.svg"), "the removal is said: {said}");
    let mut expected: Vec<&str> = report.to_vec();
    expected.insert(0, "notes.txt");
    assert_eq!(files(&out), expected, "no fct.svg of the workload run");

    run(&variants);
    assert_eq!(
        files(&out),
        ["ecn", "notes.txt", "pfc-only", "summary.json"]
    );
    assert_eq!(files(&out.join("ecn")), report);
    std::fs::write(out.join("pfc-only/mine.txt"), "mine").unwrap();
    run(&incast);
    let mut expected: Vec<&str> = report.to_vec();
    expected.extend(["notes.txt", "pfc-only"]);
    expected.sort_unstable();
    assert_eq!(files(&out), expected, "no summary.json, no variant folder");
    assert_eq!(
        files(&out.join("pfc-only")),
        ["mine.txt"],
        "a folder with a file of the user's stays, with that file only"
    );
}

/// Runs rocelab, killed after `secs` seconds: a hang fails the test instead of holding it.
fn rocelab_within(secs: u64, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run rocelab");
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed().as_secs() >= secs {
            child.kill().unwrap();
            panic!("{args:?} still ran after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// A `sample_us` under half a nanosecond rounded to a step of 0 ns, which the row limit
/// did not catch (it divided by the step or 1) and the run sampled at one instant
/// forever. Refused, naming the key, in `sim` and in a sweep's grid.
#[test]
fn a_sample_step_under_a_nanosecond_is_refused_not_a_hang() {
    for args in [
        vec![
            "sim",
            "incast",
            "--set",
            "duration_ms=1",
            "--set",
            "measure_from_ms=0",
            "--set",
            "sample_us=0.0001",
        ],
        vec![
            "sweep",
            "incast",
            "--set",
            "duration_ms=1",
            "--set",
            "measure_from_ms=0",
            "--grid",
            "sample_us=10,0.0001",
        ],
    ] {
        let o = rocelab_within(20, &args);
        assert!(!o.status.success(), "{args:?}");
        let err = text(&o.stderr);
        assert!(
            err.contains("sample_us") && err.contains("1 ns"),
            "{args:?}: {err}"
        );
    }
}

/// `compare --help` ended its SCENARIO's text mid-sentence ("the fabrics are"), and
/// `--jobs 0` was taken as 1 without a word.
#[test]
fn compare_says_what_it_does_with_variants_and_refuses_no_jobs() {
    let o = rocelab(&["compare", "--help"]);
    assert!(o.status.success());
    let help = text(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        help.contains("Its [[variant]]s are left out: the fabrics take their place"),
        "{help}"
    );
    let o = rocelab(&["compare", "incast", "--jobs", "0"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("--jobs"), "{}", text(&o.stderr));
}

/// Seeds are TOML integers in a scenario: above 2^63 - 1 they are refused, not wrapped.
#[test]
fn seeds_past_the_largest_are_refused() {
    let o = rocelab(&["sim", "incast", "--seed", "18446744073709551615"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("9223372036854775807"),
        "{}",
        text(&o.stderr)
    );
    let o = rocelab(&["sim", "incast", "--set", "seed=-1"]);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("seed") && err.contains("9223372036854775807") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn allreduce_sweep_prints_the_nccl_tests_table() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(
        dir.path(),
        "ring.toml",
        r#"
description = "small ring"
[topology]
kind = "star"
hosts = 3
link_gbps = 25
[endpoint]
mtu = 1024
[allreduce]
min_bytes = 4096
max_bytes = 65536
factor = 4
"#,
    );
    let out_dir = dir.path().join("out");
    let o = rocelab(&[
        "sim",
        "--scenario",
        &scenario,
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(stdout.contains("# Out of bounds values : 0 OK"), "{stdout}");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains("float"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let sizes: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(sizes, ["4096", "16384", "65536"]);
    for r in &rows {
        assert_eq!(
            r[1].parse::<u64>().unwrap() * 4,
            r[0].parse::<u64>().unwrap()
        );
        assert_eq!(r[7], "0", "#wrong: {r:?}");
        let (time_us, algbw, busbw): (f64, f64, f64) = (
            r[4].parse().unwrap(),
            r[5].parse().unwrap(),
            r[6].parse().unwrap(),
        );
        let size: f64 = r[0].parse().unwrap();
        assert!(
            (algbw - size / time_us / 1e3).abs() < 0.011,
            "algbw = size / time: {r:?}"
        );
        assert!(
            (busbw - algbw * 2.0 * 2.0 / 3.0).abs() < 0.011,
            "busbw = algbw × 2(N−1)/N: {r:?}"
        );
    }
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("report.json")).unwrap()).unwrap();
    let rows = report["allreduce"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    // The line bounds the time: each rank sends 2(N−1)/N × size bytes of payload.
    for r in rows {
        let size = r["size"].as_f64().unwrap();
        let t = r["time_ns"].as_f64().unwrap();
        let payload_bits = size * 4.0 / 3.0 * 8.0;
        assert!(t > payload_bits / 25.0, "faster than the line: {r}");
    }
}

#[test]
fn every_builtin_scenario_is_listed_and_shown() {
    let o = rocelab(&["sim", "--list"]);
    assert!(o.status.success());
    let list = text(&o.stdout);
    for name in [
        "incast",
        "incast-8",
        "staggered",
        "ring",
        "ring-incast",
        "leaf-spine",
        "pfc-incast",
        "ecn-vs-pfc",
        "slow-receiver",
        "victim-flow",
        "pfc-storm",
        "deadlock",
    ] {
        assert!(
            list.lines().any(|l| l.starts_with(name)),
            "{name} not listed: {list}"
        );
        let shown = rocelab(&["sim", "--show", name]);
        assert!(shown.status.success());
        assert!(text(&shown.stdout).contains("[topology]"));
    }
    let o = rocelab(&["sim", "--show", "nope"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("incast, incast-8"));
}

#[test]
fn bad_scenarios_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            SMALL_INCAST.replace("sample_us = 20", "sample_us = 20\nspeed = 3"),
            "line 7",
        ),
        (
            SMALL_INCAST.replace("to = 2\n\n[[flow]]", "to = 9\n\n[[flow]]"),
            "flow[0].to: host 9 does not exist",
        ),
        (
            SMALL_INCAST.replace(
                "ecn = false",
                "queue.3.ecn = { kmin_bytes = 9, kmax_bytes = 1, pmax = 0.1 }",
            ),
            "switch.queue.3.ecn",
        ),
        (
            SMALL_INCAST.replace("kind = \"star\"", "kind = \"torus\""),
            "topology.kind",
        ),
        (SMALL_INCAST.replace("duration_ms = 3", ""), "duration_ms"),
        (
            SMALL_INCAST.replace("[switch]", "[switch]\npreset = \"cisco\""),
            "switch.preset: no preset named 'cisco'",
        ),
        (
            SMALL_INCAST.replace("[switch]", "[endpoint]\nmtu = 1500\n[switch]"),
            "endpoint.mtu",
        ),
        (
            SMALL_INCAST.replace("[switch]", "[endpoint]\nlink_gbps = 5\n[switch]"),
            "endpoint.link_gbps",
        ),
        (
            SMALL_INCAST.replace("[switch]", "[switch]\nport_defaults.speed_gbps = 5"),
            "switch.port_defaults.speed_gbps",
        ),
    ];
    for (i, (body, expect)) in cases.iter().enumerate() {
        let path = write(dir.path(), &format!("bad{i}.toml"), body);
        let o = rocelab(&["sim", "--scenario", &path]);
        assert!(!o.status.success(), "case {i} ran");
        let err = text(&o.stderr);
        assert!(
            err.contains(expect),
            "case {i}: expected '{expect}' in: {err}"
        );
        assert!(
            err.contains(&format!("bad{i}.toml")),
            "case {i} names the file: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    let o = rocelab(&["sim", "--scenario", "/nonexistent/x.toml"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("built-in scenario"));
}

/// Issue 10, item 4: a factor of 2^62 once wrapped `size *= factor` to 0 and looped until
/// memory ran out. The sweep is now one size; a factor below 2 names its key.
#[test]
fn a_huge_sweep_factor_is_one_size_not_a_hang() {
    use rocelab::sim::scenario::Scenario;
    let ring = |factor: &str| {
        format!(
            "description = \"ring\"\n[topology]\nkind = \"star\"\nhosts = 3\nlink_gbps = 25\n\
             [endpoint]\nmtu = 1024\n[allreduce]\nmin_bytes = 4096\nmax_bytes = 1073741824\n\
             factor = {factor}\n"
        )
    };
    let s = Scenario::from_toml("ring", &ring("4611686018427387904"), None).unwrap();
    assert_eq!(s.allreduce.unwrap().sizes, [4096]);
    let e = Scenario::from_toml("ring", &ring("1"), None).unwrap_err();
    assert_eq!(e.key, "allreduce.factor", "{e}");
}

/// Issue 13: `sim` printed the all-reduce rows only at the end. The run reports each
/// size as it finishes (the rows it streams are the final table's), and its progress at
/// every sample step, in order.
#[test]
fn a_sweep_reports_each_size_as_it_finishes() {
    use rocelab::sim::run::{AllReduceRow, Progress, run_with};
    use rocelab::sim::scenario::Scenario;
    use rocelab::time::Nanos;
    #[derive(Default)]
    struct Seen {
        rows: Vec<AllReduceRow>,
        ticks: Vec<(usize, Nanos)>,
    }
    impl Progress for Seen {
        fn at(&mut self, now: Nanos, _end: Nanos, part: usize, _parts: usize) {
            self.ticks.push((part, now));
        }
        fn size_done(&mut self, row: &AllReduceRow) {
            self.rows.push(*row);
        }
    }
    let scenario = Scenario::load_edited("ring", |t| {
        rocelab::config::set_key(t, "allreduce.max_bytes=64K")
    })
    .unwrap();
    let mut seen = Seen::default();
    let outcome = run_with(&scenario, &mut seen).unwrap();
    assert_eq!(seen.rows.len(), 4, "8K to 64K");
    for (a, b) in seen.rows.iter().zip(&outcome.allreduce) {
        assert_eq!(
            (a.result.size, a.result.time_ns),
            (b.result.size, b.result.time_ns)
        );
    }
    assert!(!seen.ticks.is_empty());
    assert!(
        seen.ticks.windows(2).all(|w| w[0] <= w[1]),
        "progress goes forward"
    );
    assert_eq!(seen.ticks.last().unwrap().0, 3);
}

#[test]
fn plots_from_ms_draws_a_window_and_keeps_every_csv_row() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, window) = (dir.path().join("whole"), dir.path().join("window"));
    for (d, extra) in [(&whole, None), (&window, Some("60"))] {
        let mut args = vec!["sim", "incast", "--out", d.to_str().unwrap()];
        if let Some(ms) = extra {
            args.extend(["--plots-from-ms", ms]);
        }
        let o = rocelab(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let csv = |d: &std::path::Path| std::fs::read_to_string(d.join("series.csv")).unwrap();
    assert_eq!(csv(&whole), csv(&window), "the CSV keeps every row");
    // The time axis starts at 60 ms: its tick labels (the text after the y axis's
    // labels, which end at the largest) are 60.0, 65.0, ...
    let svg = std::fs::read_to_string(window.join("queues.svg")).unwrap();
    let labels: Vec<&str> = svg
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('<'))
        .collect();
    let x = labels.iter().position(|l| *l == "time (ms)").unwrap();
    let ticks: Vec<f64> = labels[x + 1..]
        .iter()
        .filter_map(|l| l.parse().ok())
        .collect();
    let first_x = ticks
        .windows(2)
        .position(|w| w[1] < w[0])
        .map_or(0, |i| i + 1);
    assert_eq!(ticks[first_x], 60.0, "{ticks:?}");
    let bad_out = dir.path().join("bad");
    for bad in ["-1", "100", "nan"] {
        let o = rocelab(&[
            "sim",
            "incast",
            &format!("--plots-from-ms={bad}"),
            "--out",
            bad_out.to_str().unwrap(),
        ]);
        assert!(!o.status.success(), "{bad}");
        assert!(
            text(&o.stderr).contains("--plots-from-ms"),
            "{bad}: {}",
            text(&o.stderr)
        );
    }
    assert!(!bad_out.exists());
}

/// `--plots-from-ms` past the end of a run that ends before its duration (sized flows, an
/// all-reduce) drew empty plots on a 0-1 ms axis; the plots now show the whole run, with
/// a note. Without `--out` there are no plots: refused (it was accepted without a word).
#[test]
fn plots_from_ms_past_the_end_of_the_run_draws_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let sized = SMALL_INCAST
        .replace("duration_ms = 3\nmeasure_from_ms = 1\n", "")
        .replace("to = 2\n", "to = 2\nbytes = 200000\n");
    let scenario = write(dir.path(), "sized.toml", &sized);
    let out = dir.path().join("out");
    let o = rocelab(&[
        "sim",
        &scenario,
        "--plots-from-ms",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("--plots-from-ms 5") && err.contains("the whole run"),
        "{err}"
    );
    let svg = std::fs::read_to_string(out.join("queues.svg")).unwrap();
    assert!(svg.contains("sw/h2 q3"), "the queue is drawn");
    let o = rocelab(&["sim", "incast", "--plots-from-ms", "60"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("--out"), "{}", text(&o.stderr));
}

#[test]
fn idle_hosts_and_their_ports_have_no_series_columns() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two_of_64.toml");
    std::fs::write(
        &file,
        "duration_ms = 1\n[topology]\nkind = \"star\"\nhosts = 64\nlink_gbps = 100\n[[flow]]\nfrom = 0\nto = 1\nbytes = \"64K\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = rocelab(&[
        "sim",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let csv = std::fs::read_to_string(out.join("series.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert!(header.contains(&"queue_sw_h1_q3_bytes"), "{header:?}");
    assert!(header.contains(&"paused_h0_p3"), "{header:?}");
    assert!(
        !header
            .iter()
            .any(|c| c.contains("_h2_") || c.contains("_h63") || c.starts_with("paused_h5")),
        "{header:?}"
    );
}

/// The switch configuration's `[pfc]` keys reach it from a scenario as `switch.pfc.KEY`:
/// in the file's `[switch]` table, with `sim --set`, `sweep --grid` and `compare --set`,
/// while `switch.pfc = true | false` still switches PFC (QA: all of these failed with
/// "switch.pfc: give true or false"). What the run used is read back from report.json's
/// `config.switch` (or the comparison's switch line).
#[test]
fn switch_pfc_keys_reach_the_switch_configuration_beside_the_pfc_switch() {
    let dir = tempfile::tempdir().unwrap();
    let switch_of = |report: &Path| {
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
        let c = &r["config"]["switch"];
        (
            c["pause_quanta"].as_u64().unwrap(),
            c["refresh_quanta"].as_u64().unwrap(),
            c["lossless"].clone(),
        )
    };
    let short = ["--set", "duration_ms=2", "--set", "measure_from_ms=1"];
    let pfc_keys = [
        "--set",
        "switch.pfc.pause_quanta=1000",
        "--set",
        "switch.pfc.refresh_quanta=500",
    ];

    // sim --set, on a built-in scenario.
    let out = dir.path().join("set");
    let mut args = vec!["sim", "pfc-incast", "--out", out.to_str().unwrap()];
    args.extend(short);
    args.extend(pfc_keys);
    let o = rocelab(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        switch_of(&out.join("report.json")),
        (1000, 500, serde_json::json!([3]))
    );

    // In the file, beside variants that switch PFC off both ways.
    let file = SMALL_INCAST.replace(
        "[switch]",
        "[[variant]]\nname = \"on\"\n\n\
         [[variant]]\nname = \"off\"\nswitch = { pfc = false }\n\n\
         [[variant]]\nname = \"off too\"\nswitch = { pfc = { enabled = false } }\n\n\
         [switch]\npfc.pause_quanta = 2000\npfc.refresh_quanta = 1000",
    );
    let path = write(dir.path(), "pfc-keys.toml", &file);
    let out = dir.path().join("file");
    let o = rocelab(&["sim", &path, "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        switch_of(&out.join("on/report.json")),
        (2000, 1000, serde_json::json!([3]))
    );
    for off in ["off", "off-too"] {
        assert_eq!(
            switch_of(&out.join(off).join("report.json")),
            (2000, 1000, serde_json::json!([])),
            "variant {off}"
        );
    }

    // A scenario with PFC off takes the keys and stays off.
    let path = write(
        dir.path(),
        "pfc-off.toml",
        &SMALL_INCAST.replace("[switch]", "[switch]\npfc = false"),
    );
    let out = dir.path().join("off");
    let mut args = vec!["sim", &path, "--out", out.to_str().unwrap()];
    args.extend(pfc_keys);
    let o = rocelab(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        switch_of(&out.join("report.json")),
        (1000, 500, serde_json::json!([]))
    );

    // sweep --grid: a point runs with each value; a value the switch configuration
    // refuses is refused by its key.
    let mut args = vec![
        "sweep",
        "pfc-incast",
        "--grid",
        "switch.pfc.refresh_quanta=1000,30000",
        "--json",
        "-",
    ];
    args.extend(short);
    let o = rocelab(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let sweep: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(sweep["rows"].as_array().unwrap().len(), 2);
    let mut args = vec![
        "sweep",
        "pfc-incast",
        "--grid",
        "switch.pfc.refresh_quanta=1000,65535",
    ];
    args.extend(short);
    let o = rocelab(&args);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("switch.pfc.refresh_quanta: 65535 must be below pfc.pause_quanta"),
        "{err}"
    );

    // compare --set: each fabric's switch takes the keys (compare switches PFC on).
    let json = dir.path().join("compare.json");
    let mut args = vec![
        "compare",
        &path,
        "--fabrics",
        "roce,roce-pfc",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(pfc_keys);
    let o = rocelab(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for f in c["fabrics"].as_array().unwrap() {
        let source = f["switch_source"].as_str().unwrap();
        assert!(
            source.contains("pfc.pause_quanta = 1000") && !source.contains("PFC off"),
            "{source}"
        );
    }
}

/// `compare ring-incast`'s "RoCE PFC only" column sent 0 PFC frames and did not say why:
/// the default buffer never let an ingress priority group reach XOFF. The cell and a note
/// under the table say so, with the numbers; with a small buffer PFC acts and the note
/// goes.
#[test]
fn compare_says_when_pfc_never_acted_and_why() {
    let o = rocelab(&["compare", "ring-incast", "--fabrics", "roce-pfc"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let table = text(&o.stdout);
    let row = table
        .lines()
        .find(|l| l.starts_with("PFC frames sent"))
        .unwrap();
    assert!(row.ends_with("0: never at XOFF"), "{row}");
    assert!(
        table.contains("RoCE PFC only: PFC never acted. The fullest ingress priority group held"),
        "{table}"
    );
    let o = rocelab(&[
        "compare",
        "ring-incast",
        "--fabrics",
        "roce-pfc",
        "--json",
        "-",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &v["fabrics"][0];
    let peak = f["pfc_unused"]["pg_peak_bytes"].as_u64().unwrap();
    let xoff = f["pfc_unused"]["xoff_min_bytes"].as_u64().unwrap();
    // What never reaching XOFF means: the fullest group stayed under the lowest XOFF point.
    assert!(peak > 0 && peak < xoff, "{peak} {xoff}");
    assert_eq!(f["summary"]["switch_pfc_sent"].as_u64(), Some(0));
    assert!(table.contains(&format!("held {:.1} KB at most", peak as f64 / 1e3)));
    assert!(table.contains(&format!("never came below {:.1} KB", xoff as f64 / 1e3)));

    // A 4 MB shared buffer: the XOFF point comes within reach and PFC acts.
    let o = rocelab(&[
        "compare",
        "ring-incast",
        "--fabrics",
        "roce-pfc",
        "--set",
        "switch.buffer.shared_bytes=4M",
    ]);
    let table = text(&o.stdout);
    let row = table
        .lines()
        .find(|l| l.starts_with("PFC frames sent"))
        .unwrap();
    let sent: u64 = row.split_whitespace().last().unwrap().parse().unwrap();
    assert!(sent > 0, "{row}");
    assert!(!table.contains("never acted"), "{table}");
}

/// The plots' labels: buffers in KiB (1024 B, the CLI's K) said on the axis, the shared
/// buffer and the XOFF point beside Kmin and Kmax, tick labels without ".0", a colour key
/// on the pause chart, and a throughput panel that summarises many QPs.
#[test]
fn the_plots_say_their_units_thresholds_and_colours() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("i8");
    let o = rocelab(&["sim", "incast-8", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
    // <text ...>body</text> contents.
    let bodies = |svg: &str| -> Vec<String> {
        svg.split("<text ")
            .skip(1)
            .filter_map(|t| {
                t.split_once('>')
                    .map(|(_, b)| b.split("</text>").next().unwrap_or("").trim().to_owned())
            })
            .collect()
    };
    let queues = read("queues.svg");
    let texts = bodies(&queues);
    assert!(
        texts.iter().any(|t| t == "queue (KiB, 1 KiB = 1024 B)"),
        "{texts:?}"
    );
    // The shared buffer (the default preset's pool), in KiB, drawn or named above the scale.
    assert!(
        texts.iter().any(|t| t.starts_with("shared buffer ")),
        "{texts:?}"
    );
    // Kmin 100000 B is 97.7 KiB, not 100.0 "KB".
    assert!(texts.iter().any(|t| t == "q3 Kmin 97.7"), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("XOFF per PG")), "{texts:?}");
    // Tick labels: whole numbers carry no ".0".
    for svg in [&queues, &read("rates.svg"), &read("pauses.svg")] {
        let ticks: Vec<String> = bodies(svg)
            .into_iter()
            .filter(|t| t.parse::<f64>().is_ok())
            .collect();
        assert!(!ticks.is_empty());
        assert!(ticks.iter().all(|t| !t.ends_with(".0")), "{ticks:?}");
    }
    let pauses = bodies(&read("pauses.svg"));
    for key in [
        "XOFF sent: the switch&apos;s ingress PG pausing its peer",
        "paused: a queue or host held by its peer",
        "watchdog: the queue held as stormed",
    ] {
        assert!(pauses.iter().any(|t| t == key), "{pauses:?}");
    }
    // 8 QPs: the 3 busiest one by one, the mean of the other 5, and the total.
    let rates = bodies(&read("rates.svg"));
    assert!(
        rates.iter().any(|t| t == "other 5, mean per QP"),
        "{rates:?}"
    );
    assert!(rates.iter().any(|t| t == "all 8 QPs, total"), "{rates:?}");
}

/// Issue 40: a PFC XON point less than one frame below XOFF was never called flapping.
/// In `lab-congestion` (nexus-ai's 2,496 B XON offset, 4 KiB frames) one frame leaving
/// ends every pause, and the story says so, with the mean pause; with the offset above a
/// frame (20,000 B) it does not, and the switch sends fewer PFC frames.
#[test]
fn an_xon_point_less_than_a_frame_below_xoff_is_called_flapping() {
    let tight = rocelab(&["sim", "--scenario", "lab-congestion"]);
    assert!(tight.status.success(), "{}", text(&tight.stderr));
    let tight = text(&tight.stdout);
    let line = tight
        .lines()
        .find(|l| l.contains("in XOFF for priority 3"))
        .unwrap_or_else(|| panic!("{tight}"));
    assert!(
        line.contains(": flapping, each pause")
            && line.contains("the XON point is 2496 B below XOFF, less than one of its"),
        "{line}"
    );
    let loose = rocelab(&[
        "sim",
        "--scenario",
        "lab-congestion",
        "--set",
        "switch.pg.3.xon_offset_bytes=20000",
    ]);
    assert!(loose.status.success(), "{}", text(&loose.stderr));
    let loose = text(&loose.stdout);
    assert!(loose.contains("in XOFF for priority 3"), "{loose}");
    assert!(!loose.contains("flapping"), "{loose}");
    let pfc = |s: &str| -> u64 {
        s.lines()
            .filter(|l| l.contains("in XOFF for priority 3"))
            .filter_map(|l| {
                l.split(" PFC frames")
                    .next()?
                    .rsplit(' ')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum()
    };
    assert!(pfc(&loose) < pfc(&tight), "{} {}", pfc(&loose), pfc(&tight));
}

/// `--set switch.buffer.threshold=static` over a preset with dynamic thresholds switches
/// the mode: the preset's alphas go rather than contradict it, and the static mode's own
/// limits are asked for by name.
#[test]
fn a_set_to_static_thresholds_replaces_the_presets_dynamic_ones() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("static");
    let mut args = vec!["sim", "incast", "--out", out.to_str().unwrap()];
    args.extend([
        "--set",
        "duration_ms=1",
        "--set",
        "measure_from_ms=0",
        "--set",
        "switch.buffer.threshold=static",
    ]);
    let o = rocelab(&args);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(
        e.contains("switch.buffer.queue_limit_bytes") && !e.contains("alpha"),
        "{e}"
    );
    args.extend([
        "--set",
        "switch.buffer.queue_limit_bytes=1M",
        "--set",
        "switch.pg.3.xoff_bytes=100K",
        "--set",
        "switch.pg.3.xon_bytes=80K",
    ]);
    let o = rocelab(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(
        r["config"]["switch"]["pgs"][3]["xoff"],
        serde_json::json!({"mode": "static", "xoff_bytes": 102400, "xon_bytes": 81920})
    );
}

//! `rocelab sweep`: a grid of a scenario's keys run in process, and the same grid planned
//! as jobs, run by GNU parallel and merged, give the same table.

mod common;

use std::path::Path;
use std::process::Command;

fn rocelab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A small workload scenario, with its flow sizes in a file of its own (so that the plan
/// must carry the file along).
fn scenario(dir: &Path) -> String {
    std::fs::write(
        dir.join("sizes.txt"),
        "# bytes fraction\n1000 0\n20000 0.5\n400000 1\n",
    )
    .unwrap();
    let path = dir.join("sweep.toml");
    std::fs::write(
        &path,
        r#"
duration_ms = 1
[topology]
kind = "star"
hosts = 6
link_gbps = 100
[switch]
queue.3.ecn = { kmin_bytes = 5000, kmax_bytes = 200000, pmax = 0.01 }
[[workload]]
kind = "poisson"
cdf = "sizes.txt"
load = 0.6
duration_us = 600
[sweep]
grid = { "switch.queue.3.ecn.kmin_bytes" = ["5K", "50K"], "switch.queue.3.ecn.pmax" = [0.01, 0.2] }
"#,
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

fn rows(json: &serde_json::Value) -> Vec<serde_json::Value> {
    json["rows"].as_array().unwrap().clone()
}

#[test]
fn a_planned_sweep_run_by_gnu_parallel_merges_into_the_same_table() {
    if !common::have_tool(
        "a_planned_sweep_run_by_gnu_parallel_merges_into_the_same_table",
        "parallel",
        "apt-get install parallel",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path());
    // In process, the grid from the scenario's [sweep] table, two seeds per point.
    let here = rocelab(&["sweep", &file, "--seeds", "2", "--json", "-"]);
    assert!(here.status.success(), "{}", text(&here.stderr));
    let here: serde_json::Value = serde_json::from_slice(&here.stdout).unwrap();
    assert_eq!(here["schema"], "rocelab.sweep/1");
    assert_eq!(rows(&here).len(), 4);
    assert!(rows(&here).iter().any(|r| r["pareto"] == true));
    assert_eq!(
        common::undocumented_keys("sweep", &here),
        Vec::<String>::new()
    );

    // Planned: 8 jobs, run by GNU parallel from the plan's folder, then merged.
    let plan = dir.path().join("plan");
    let p = rocelab(&[
        "sweep",
        &file,
        "--seeds",
        "2",
        "--plan",
        plan.to_str().unwrap(),
    ]);
    assert!(p.status.success(), "{}", text(&p.stderr));
    let jobs = std::fs::read_to_string(plan.join("jobs.txt")).unwrap();
    assert_eq!(jobs.lines().count(), 8);
    assert!(
        plan.join("runs/0000/cdf-0.txt").exists(),
        "the sizes file travels with the job"
    );
    // Merging before anything ran names what is missing.
    let early = rocelab(&["sweep", "--merge", plan.to_str().unwrap()]);
    assert!(!early.status.success());
    assert!(
        text(&early.stderr).contains("8 of 8 runs have no result yet"),
        "{}",
        text(&early.stderr)
    );
    let ran = Command::new("parallel")
        .args(["--jobs", "2", "--halt", "now,fail=1"])
        .arg("-a")
        .arg("jobs.txt")
        .current_dir(&plan)
        .env("ROCELAB", env!("CARGO_BIN_EXE_rocelab"))
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}{}",
        text(&ran.stdout),
        text(&ran.stderr)
    );
    let merged = rocelab(&["sweep", "--merge", plan.to_str().unwrap(), "--json", "-"]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    let merged: serde_json::Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(rows(&merged), rows(&here), "the same table either way");
    // And the same text.
    let a = rocelab(&["sweep", &file, "--seeds", "2"]);
    let b = rocelab(&["sweep", "--merge", plan.to_str().unwrap()]);
    assert_eq!(text(&a.stdout), text(&b.stdout));
}

#[test]
fn a_plan_runs_whole_as_a_script_keeps_its_folder_and_merges_only_its_own_results() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path());
    let plan = dir.path().join("plan");
    let plan_arg = format!("{}/", plan.display());
    let p = rocelab(&["sweep", &file, "--plan", &plan_arg]);
    assert!(p.status.success(), "{}", text(&p.stderr));
    assert!(
        !text(&p.stdout).contains("//"),
        "a folder given with a slash: {}",
        text(&p.stdout)
    );
    // jobs.txt run as one script (each line changes folder in a subshell of its own).
    let ran = Command::new("sh")
        .arg("jobs.txt")
        .current_dir(&plan)
        .env("ROCELAB", env!("CARGO_BIN_EXE_rocelab"))
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    let merged = rocelab(&["sweep", "--merge", plan.to_str().unwrap()]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));

    // A second plan into the same folder would have its points merged with the first
    // plan's results: refused, and the folder left as it was.
    let again = rocelab(&[
        "sweep",
        &file,
        "--grid",
        "switch.queue.3.ecn.pmax=0.5",
        "--plan",
        plan.to_str().unwrap(),
    ]);
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("already holds a plan"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(plan.join("jobs.txt"))
            .unwrap()
            .lines()
            .count(),
        4
    );

    // A result that ran with another seed is not that run's: not taken.
    let report = plan.join("runs/0002/result/report.json");
    let original = std::fs::read_to_string(&report).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&original).unwrap();
    json["seed"] = serde_json::json!(json["seed"].as_u64().unwrap() + 1);
    std::fs::write(&report, json.to_string()).unwrap();
    let stale = rocelab(&["sweep", "--merge", plan.to_str().unwrap()]);
    assert!(!stale.status.success());
    let says = text(&stale.stderr);
    assert!(
        says.contains("1 of 4 runs have a result that is not theirs")
            && says.contains("runs/0002 (ran with seed 2, the run's is 1)"),
        "{says}"
    );

    // Only the seed was checked: run 0000's result (point 0, seed 1) copied over run
    // 0002's (point 2, seed 1) merged silently, point 0's numbers in point 2's row. A
    // damaged report.json was "no result yet", `{}` "ran with another seed", and a
    // report of another kind was taken. Each is now named for what it is.
    let merge_says = |body: &[u8]| {
        std::fs::write(&report, body).unwrap();
        let o = rocelab(&["sweep", "--merge", plan.to_str().unwrap(), "--json", "-"]);
        assert!(!o.status.success());
        let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let points: Vec<u64> = json["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["point"].as_u64().unwrap())
            .collect();
        assert_eq!(points, [0, 1, 3], "point 2 is left out");
        text(&o.stderr)
    };
    let copied = std::fs::read(plan.join("runs/0000/result/report.json")).unwrap();
    let says = merge_says(&copied);
    assert!(
        says.contains("1 of 4 runs have a result that is not theirs")
            && says.contains("runs/0002 (ran another scenario"),
        "{says}"
    );
    for (body, why) in [
        (&original.as_bytes()[..original.len() / 2], "cut short"),
        (b"".as_slice(), "is empty"),
        (b"{}".as_slice(), "schema missing"),
        (
            original
                .replace("rocelab.sim/1", "rocelab.lab/1")
                .as_bytes(),
            "schema 'rocelab.lab/1'",
        ),
    ] {
        let says = merge_says(body);
        assert!(
            says.contains("1 of 4 runs have a result that cannot be read")
                && says.contains("runs/0002 (report.json")
                && says.contains(why)
                && !says.contains("no result yet"),
            "{why}: {says}"
        );
    }
    std::fs::write(&report, &original).unwrap();
    let merged = rocelab(&["sweep", "--merge", plan.to_str().unwrap()]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
}

#[test]
fn a_two_key_sweep_writes_its_heatmap_and_bad_sweeps_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path());
    let out = dir.path().join("out");
    let o = rocelab(&[
        "sweep",
        &file,
        "--grid",
        "switch.queue.3.ecn.kmax_bytes=100K,400K",
        "--grid",
        "topology.link_gbps=25,100",
        "--jobs",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.trim_start().starts_with(char::is_numeric))
            .count(),
        4,
        "{stdout}"
    );
    let svg = std::fs::read_to_string(out.join("heatmap.svg")).unwrap();
    assert!(svg.contains("FCT slowdown p99") && svg.contains("topology.link_gbps"));
    // One map per metric beside it (issue 40: the heatmap showed one metric only).
    for (file, says) in [
        ("heatmap-goodput.svg", "total (Gb/s)"),
        ("heatmap-fct.svg", "FCT slowdown p99"),
        ("heatmap-paused.svg", "paused by PFC"),
        ("heatmap-drops.svg", "frames dropped"),
        ("heatmap-queue.svg", "the deepest egress queue"),
    ] {
        let svg = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(
            svg.contains(says) && svg.contains("topology.link_gbps"),
            "{file}"
        );
    }

    for (args, says) in [
        (vec!["sweep", file.as_str(), "--grid", "kmin"], "KEY=V1,V2"),
        (
            vec![
                "sweep",
                file.as_str(),
                "--grid",
                "switch.queue.3.ecn.pmax=2",
            ],
            "point 0",
        ),
        (
            vec!["sweep", "victim-flow", "--grid", "seed=1,2"],
            "without [[variant]]",
        ),
        (
            vec!["sweep", "incast", "--seeds", "0", "--grid", "seed=1"],
            "--seeds",
        ),
        (vec!["sweep", "incast"], "no grid"),
        (vec!["sweep", "--merge", "/nonexistent"], "plan.json"),
    ] {
        let o = rocelab(&args);
        assert!(!o.status.success(), "{args:?}");
        assert!(
            text(&o.stderr).contains(says),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
}

/// Seeds go into each run's scenario as TOML integers (64-bit signed): `--seed
/// 18446744073709551615` failed as an internal error at point 0 ("invalid value: integer
/// `-1`"), as did seeds that ran past 2^63 - 1. They are refused up front, with the range;
/// the largest seed itself plans and runs.
#[test]
fn seeds_are_refused_up_front_past_the_largest() {
    let max = "9223372036854775807";
    for (args, says) in [
        (
            vec![
                "sweep",
                "incast",
                "--grid",
                "sample_us=20",
                "--seed",
                "18446744073709551615",
            ],
            max,
        ),
        (
            vec![
                "sweep",
                "incast",
                "--grid",
                "sample_us=20",
                "--seed",
                max,
                "--seeds",
                "2",
            ],
            "largest seed",
        ),
    ] {
        let o = rocelab(&args);
        assert!(!o.status.success(), "{args:?}");
        let err = text(&o.stderr);
        assert!(
            err.contains(says) && !err.contains("point 0"),
            "{args:?}: {err}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan");
    let o = rocelab(&[
        "sweep",
        "incast",
        "--grid",
        "sample_us=20",
        "--seed",
        max,
        "--plan",
        plan.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let planned: serde_json::Value =
        serde_json::from_slice(&std::fs::read(plan.join("plan.json")).unwrap()).unwrap();
    assert_eq!(planned["seeds"][0].as_u64(), Some(i64::MAX as u64));
    let toml = std::fs::read_to_string(plan.join("runs/0000/scenario.toml")).unwrap();
    assert!(toml.contains(&format!("seed = {max}")), "{toml}");
}

/// `--merge DIR` takes the scenario, grid and seeds from the plan: a scenario, --grid
/// (even a bogus one), --seeds, --seed or --set given with it were ignored without a
/// word. They are refused.
#[test]
fn merge_refuses_what_the_plan_already_says() {
    for extra in [
        vec!["incast"],
        vec!["--grid", "bogus"],
        vec!["--seeds", "3"],
        vec!["--seed", "2"],
        vec!["--set", "sample_us=20"],
        vec!["--preset", "sonic"],
        vec!["--jobs", "2"],
    ] {
        let mut args = vec!["sweep", "--merge", "/nonexistent"];
        args.extend_from_slice(&extra);
        let o = rocelab(&args);
        assert!(!o.status.success(), "{extra:?}");
        let err = text(&o.stderr);
        assert!(err.contains("cannot be used with"), "{extra:?}: {err}");
    }
}

/// From a QA pass: an unknown key in `[sweep]` was taken without a word (by `sweep` and by
/// `sim`); errors about the table's values named the command line's flags (`--seeds`,
/// `--grid`); the same grid value twice ran one point twice; `--jobs 0` ran one at a time.
#[test]
fn the_sweep_table_and_flags_are_checked_by_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path());
    let body = std::fs::read_to_string(&file).unwrap();
    let with = |name: &str, replace: (&str, &str)| {
        let path = dir.path().join(name);
        std::fs::write(&path, body.replace(replace.0, replace.1)).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let bogus = with("bogus.toml", ("[sweep]\n", "[sweep]\nbogus = 1\n"));
    let seeds0 = with("seeds0.toml", ("[sweep]\n", "[sweep]\nseeds = 0\n"));
    let twice = with("twice.toml", ("[\"5K\", \"50K\"]", "[\"5K\", \"5K\"]"));
    for (args, says, not) in [
        (vec!["sweep", bogus.as_str()], "bogus", ""),
        (vec!["sim", bogus.as_str()], "bogus", ""),
        (
            vec!["sweep", seeds0.as_str()],
            "[sweep] seeds: give at least 1",
            "--seeds",
        ),
        (
            vec!["sweep", twice.as_str()],
            "[sweep] grid.\"switch.queue.3.ecn.kmin_bytes\": the value \"5K\" is given twice",
            "--grid",
        ),
        (
            vec!["sweep", file.as_str(), "--grid", "topology.link_gbps=10,10"],
            "--grid topology.link_gbps=10,10: the value 10 is given twice",
            "",
        ),
        (vec!["sweep", file.as_str(), "--jobs", "0"], "--jobs", ""),
    ] {
        let o = rocelab(&args);
        assert!(!o.status.success(), "{args:?}");
        let err = text(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(not.is_empty() || !err.contains(not), "{args:?}: {err}");
    }
}

/// Issue 40: a grid of many keys of two values each has more points than a `usize`
/// holds: the product wrapped to 0, the 10 000-run limit was skipped and building the
/// points filled the memory (a debug build panicked on the overflow). The same grid
/// through `--grid`, a scenario's `[sweep]` table and `--plan` is refused with its size
/// and the limit, and the plan folder is not made.
#[test]
fn a_grid_too_large_to_count_is_refused_with_its_size_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let flags: Vec<String> = (0..64).map(|k| format!("--grid=k{k}=1,2")).collect();
    let mut args = vec!["sweep", "incast"];
    args.extend(flags.iter().map(String::as_str));
    // 2^64 points: one more than a usize holds.
    let says = "64 keys of 2 values each make 18446744073709551616 points; at most 10000";
    let o = rocelab(&args);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains(&format!("--grid: {says}")),
        "{}",
        text(&o.stderr)
    );

    let plan = dir.path().join("plan");
    args.extend(["--plan", plan.to_str().unwrap()]);
    let o = rocelab(&args);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains(says), "{}", text(&o.stderr));
    assert!(!plan.exists());

    let keys: Vec<String> = (0..70).map(|k| format!("\"k{k}\" = [1, 2]")).collect();
    let file = dir.path().join("big.toml");
    std::fs::write(
        &file,
        format!(
            "duration_ms = 1\n[sweep]\ngrid = {{ {} }}\n",
            keys.join(", ")
        ),
    )
    .unwrap();
    for extra in [vec![], vec!["--plan", plan.to_str().unwrap()]] {
        let mut args = vec!["sweep", file.to_str().unwrap()];
        args.extend(&extra);
        let o = rocelab(&args);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(
                "big.toml: [sweep] grid: 70 keys of 2 values each make \
                 1180591620717411303424 points; at most 10000"
            ),
            "{}",
            text(&o.stderr)
        );
    }
    assert!(!plan.exists());
}

/// A plan of incast over two values of `sample_us`, two seeds each, its four runs run.
fn finished_plan(dir: &Path) -> std::path::PathBuf {
    let plan = dir.join("plan");
    let p = rocelab(&[
        "sweep",
        "incast",
        "--grid",
        "sample_us=20,40",
        "--seeds",
        "2",
        "--plan",
        plan.to_str().unwrap(),
    ]);
    assert!(p.status.success(), "{}", text(&p.stderr));
    let ran = Command::new("sh")
        .arg("jobs.txt")
        .current_dir(&plan)
        .env("ROCELAB", env!("CARGO_BIN_EXE_rocelab"))
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    plan
}

/// Issue 40: plan.json is read, not trusted. Fewer lists of values than keys panicked
/// (index out of bounds), more printed a wrong table with exit 0, a grid of 2^70 points
/// filled the memory, run folders outside the plan folder were read, an empty run list
/// printed an empty table with exit 0. Each is refused, naming the file and the field;
/// the plan's own results are untouched and merge again once plan.json is restored.
#[test]
fn a_damaged_plan_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let plan = finished_plan(dir.path());
    let plan_json = plan.join("plan.json");
    let original: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&plan_json).unwrap()).unwrap();
    type Damage = fn(&mut serde_json::Value);
    let cases: Vec<(Damage, &str)> = vec![
        (
            |p| {
                p["grid"]["keys"]
                    .as_array_mut()
                    .unwrap()
                    .push("topology.link_gbps".into())
            },
            "plan.json: grid: 2 keys but 1 list of values",
        ),
        (
            |p| {
                p["grid"]["values"]
                    .as_array_mut()
                    .unwrap()
                    .push(serde_json::json!(["1", "2"]))
            },
            "plan.json: grid: 1 key but 2 lists of values",
        ),
        (
            |p| {
                p["grid"]["keys"] = (0..70).map(|k| format!("k{k}")).collect();
                p["grid"]["values"] = (0..70).map(|_| serde_json::json!(["1", "2"])).collect();
            },
            "plan.json: grid: 70 keys of 2 values each make 1180591620717411303424 points; \
             at most 10000",
        ),
        (
            |p| p["runs"][1]["dir"] = "../../outside".into(),
            "plan.json: runs[1].dir \"../../outside\" is not a folder inside the plan's",
        ),
        (
            |p| p["runs"][1]["dir"] = "/etc".into(),
            "plan.json: runs[1].dir \"/etc\" is not a folder inside the plan's",
        ),
        (
            |p| p["runs"] = serde_json::json!([]),
            "plan.json: runs is empty: the plan has no run to merge",
        ),
        (
            |p| p["runs"][1]["point"] = 7.into(),
            "plan.json: runs[1].point is 7; the grid has 2 points (0 to 1)",
        ),
        (
            |p| p["seeds"] = (0..20_000).collect(),
            "plan.json: seeds has 20000 seeds; at most 10000",
        ),
        (
            |p| p["runs"][1]["seed"] = 9.into(),
            "plan.json: runs[1].seed is 9, not one of the plan's seeds (1, 2)",
        ),
    ];
    for (damage, says) in cases {
        let mut p = original.clone();
        damage(&mut p);
        std::fs::write(&plan_json, p.to_string()).unwrap();
        let o = rocelab(&["sweep", "--merge", plan.to_str().unwrap()]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{says}: {err}");
        assert!(err.contains(says), "{says}: {err}");
        assert!(text(&o.stdout).is_empty(), "{says}: no table");
    }
    std::fs::write(&plan_json, original.to_string()).unwrap();
    let o = rocelab(&["sweep", "--merge", plan.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// Issue 40: a report.json that was `/dev/zero` was read until the memory ran out, a
/// FIFO hung the merge for ever, and a report.json linked from outside the plan folder
/// was taken. Each is named for what it is and its point left out, at once.
#[test]
fn results_that_are_not_regular_files_inside_the_plan_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let plan = finished_plan(dir.path());
    let report = plan.join("runs/0001/result/report.json");
    let outside = dir.path().join("outside.json");
    std::fs::rename(&report, &outside).unwrap();
    let fifo = std::ffi::CString::new(report.to_str().unwrap()).unwrap();
    for (kind, says) in [
        (
            "/dev/zero",
            "runs/0001 (report.json leads outside the plan folder, to /dev/zero)",
        ),
        (
            "outside",
            "runs/0001 (report.json leads outside the plan folder",
        ),
        (
            "fifo",
            "runs/0001 (report.json is a FIFO, not a regular file)",
        ),
    ] {
        match kind {
            "/dev/zero" => std::os::unix::fs::symlink("/dev/zero", &report).unwrap(),
            "outside" => std::os::unix::fs::symlink(&outside, &report).unwrap(),
            // SAFETY: a valid C string; mkfifo only makes a file.
            _ => assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0),
        }
        let start = std::time::Instant::now();
        let o = rocelab(&["sweep", "--merge", plan.to_str().unwrap()]);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "{kind}"
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{kind}: {err}");
        assert!(
            err.contains("1 of 4 runs have a result that cannot be read") && err.contains(says),
            "{kind}: {err}"
        );
        // Point 0 lost its seed 2: only point 1 is in the table.
        let stdout = text(&o.stdout);
        // The rows: after the header line that starts with "point".
        let rows: Vec<&str> = stdout
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("point"))
            .skip(1)
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(rows.len(), 1, "{kind}: {stdout}");
        assert!(rows[0].starts_with("1 "), "{kind}: {stdout}");
        std::fs::remove_file(&report).unwrap();
    }
}

/// Issue 40: the table said "2 seeds each" from plan.json's `seeds`, whatever the runs
/// merged had. A plan whose runs give each point one seed of the two now says so, in the
/// table and in each row of the JSON.
#[test]
fn seed_counts_are_reported_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let plan = finished_plan(dir.path());
    let plan_json = plan.join("plan.json");
    let mut p: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&plan_json).unwrap()).unwrap();
    let runs: Vec<serde_json::Value> = p["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["seed"] == 1)
        .cloned()
        .collect();
    assert_eq!(runs.len(), 2);
    p["runs"] = runs.into();
    std::fs::write(&plan_json, p.to_string()).unwrap();
    let o = rocelab(&["sweep", "--merge", plan.to_str().unwrap(), "--json", "-"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let says = text(&o.stderr);
    assert!(says.contains("2 points, 1 seed each"), "{says}");
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for row in rows(&json) {
        assert_eq!(row["seeds"], serde_json::json!([1]), "{row}");
    }
}

/// The table's "Gb/s" did not say whose: it is the fabric's total. The heatmap had no
/// colour scale: a bar at its right runs from the worst value to the best, labelled.
#[test]
fn the_sweep_says_its_total_and_the_heatmap_has_a_colour_scale() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = rocelab(&[
        "sweep",
        "incast",
        "--set",
        "duration_ms=5",
        "--set",
        "measure_from_ms=1",
        "--grid",
        "switch.queue.3.ecn.kmax_bytes=200K,800K",
        "--grid",
        "switch.queue.3.ecn.pmax=0.01,0.1",
        "--jobs",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    let header = stdout.lines().find(|l| l.starts_with("point")).unwrap();
    assert!(header.contains("total Gb/s"), "{header}");
    assert!(
        stdout.contains(
            "total Gb/s: the payload every host received over the run, summed: the fabric's total"
        ),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    let gbps: Vec<f64> = rows(&json)
        .iter()
        .map(|r| r["metrics"]["delivered_gbps"].as_f64().unwrap())
        .collect();
    assert_eq!(gbps.len(), 4);
    let lo = gbps.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = gbps.iter().copied().fold(0.0, f64::max);
    let svg = std::fs::read_to_string(out.join("heatmap.svg")).unwrap();
    assert!(
        svg.contains("the fabric&apos;s total (Gb/s)") || svg.contains("the fabric's total (Gb/s)")
    );
    for end in [lo, hi, (lo + hi) / 2.0] {
        assert!(
            svg.contains(&format!(">{end:.2}<")) || svg.contains(&format!("\n{end:.2}\n")),
            "{end:.2}"
        );
    }
    assert!(svg.contains("dark: lower, worse"));
}

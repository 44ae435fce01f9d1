//! `rocelab sweep`: a scenario over a grid of keys' values, on every local core, or
//! planned as one job per run for any runner (GNU parallel, a Slurm array, a Kubernetes
//! indexed Job) and merged afterwards.

use super::JsonReport;
use anyhow::{Context, Result};
use rocelab::sim::scenario::{MAX_SEED, Scenario, scenario_text, set_seed};
use rocelab::sim::sweep::{Grid, MAX_RUNS, Metrics, Row, SweepTable, mark_pareto, table};
use serde::Deserialize as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Run a scenario at every point of a grid of its keys' values (all local cores), and
/// print one row per point: goodput, FCT slowdown p99, PFC pause time, drops and the
/// deepest queue, with the points on the Pareto front marked. `--plan DIR` writes the
/// runs as self-contained jobs instead; `--merge DIR` gathers them.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// A scenario file (TOML) or a built-in scenario (`rocelab sim --list`); its `[sweep]`
    /// table may hold the grid (`grid = { "key" = [values] }`) and `seeds`.
    #[arg(value_name = "SCENARIO", required_unless_present = "merge")]
    scenario: Option<String>,
    /// A key of the scenario by its dotted path and its values (repeatable; every
    /// combination runs): `--grid switch.queue.3.ecn.kmin_bytes=5K,20K,80K`.
    #[arg(long = "grid", value_name = "KEY=V1,V2,...")]
    grid: Vec<String>,
    /// Switch configuration file (TOML) for every switch, instead of the scenario's base.
    #[arg(long, conflicts_with = "preset")]
    config: Option<PathBuf>,
    /// Built-in switch configuration for every switch, instead of the scenario's base.
    #[arg(long, value_enum)]
    preset: Option<super::Preset>,
    /// Change one key of the scenario at every point (repeatable), as `sim --set`:
    /// `--set duration_ms=2`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Runs per point, with seeds SEED, SEED + 1, ...; the table shows the median (of an
    /// even count, the mean of the two middle runs).
    #[arg(long)]
    seeds: Option<u64>,
    /// The first seed (default: the scenario's), 0 to 9223372036854775807.
    #[arg(long, value_parser = clap::value_parser!(u64).range(..=MAX_SEED))]
    seed: Option<u64>,
    /// Runs at once (default: one per core), 1 or more.
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    jobs: Option<usize>,
    /// Write sweep.json (and heatmap.svg for a two-key grid) here.
    #[arg(long, value_name = "DIR", conflicts_with = "plan")]
    out: Option<PathBuf>,
    /// Write the sweep as JSON here (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Do not run: write one self-contained job per run into DIR, a new or empty folder
    /// (runs/NNNN/ with its scenario, and jobs.txt, one command line per run) for any
    /// runner.
    #[arg(long, value_name = "DIR", conflicts_with = "merge")]
    plan: Option<PathBuf>,
    /// Gather the runs of a plan written by --plan DIR once they have finished (a result
    /// that is not its run's, by seed or scenario, or that cannot be read is named and
    /// left out). The plan holds the scenario, grid and seeds: give only --out and --json
    /// with it.
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with_all = ["scenario", "grid", "config", "preset", "set", "seeds", "seed", "jobs"]
    )]
    merge: Option<PathBuf>,
}

/// What a plan records, to merge it later.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Plan {
    schema: String,
    scenario: String,
    grid: Grid,
    seeds: Vec<u64>,
    /// One per run: its point and seed, in jobs.txt order.
    runs: Vec<PlannedRun>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct PlannedRun {
    point: usize,
    seed: u64,
    dir: String,
    /// Its scenario.toml's digest, which its report.json must carry
    /// (`scenario_digest`): a result copied from another run has another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    digest: Option<String>,
}

const PLAN_SCHEMA: &str = "rocelab.sweep-plan/1";

/// The heatmap of a two-key sweep's `--out`: FCT slowdown p99 with workloads, else the
/// fabric's goodput.
const HEATMAP: &str = "heatmap.svg";

/// A two-key sweep's heatmap of each metric (beside [`HEATMAP`], the headline one): the
/// file, what it shows, whether higher is better, and how a row gives it.
type HeatmapMetric = (
    &'static str,
    &'static str,
    bool,
    fn(&Metrics) -> Option<f64>,
);
const HEATMAPS: [HeatmapMetric; 7] = [
    (
        "heatmap-goodput.svg",
        "payload delivered to all hosts, the fabric's total (Gb/s)",
        true,
        |m| Some(m.delivered_gbps),
    ),
    ("heatmap-fct.svg", "FCT slowdown p99", false, |m| {
        m.fct_p99_slowdown
    }),
    (
        "heatmap-paused.svg",
        "time the hosts were paused by PFC, summed (ms)",
        false,
        |m| Some(m.host_paused_ms),
    ),
    ("heatmap-drops.svg", "frames dropped", false, |m| {
        Some(m.drops)
    }),
    (
        "heatmap-queue.svg",
        "the deepest egress queue (bytes)",
        false,
        |m| Some(m.max_queue_bytes),
    ),
    (
        "heatmap-jain.svg",
        "Jain's fairness index of the flows' goodputs",
        true,
        |m| m.jain,
    ),
    (
        "heatmap-busbw.svg",
        "all-reduce bus bandwidth, the largest size (GB/s)",
        true,
        |m| m.busbw_gbytes_per_s,
    ),
];

/// The schema of the report.json each planned run writes.
const SIM_SCHEMA: &str = "rocelab.sim/1";

/// Runs `rocelab sweep`.
pub(crate) fn run(args: Args) -> Result<()> {
    let report = JsonReport::create(args.json.as_deref(), &[] as &[&Path])?;
    if let Some(dir) = &args.merge {
        return merge(dir, args.out.as_deref(), report);
    }
    let name = args.scenario.clone().unwrap_or_default();
    let (mut base, dir) = scenario_table(&name)?;
    rocelab::sim::scenario::pfc_flag_as_table(&mut base);
    if base.contains_key("variant") {
        anyhow::bail!(
            "{name}: a sweep runs scenarios without [[variant]]; sweep each variant's keys instead"
        );
    }
    let config = super::sim::absolute_config(args.config.as_deref())?;
    super::sim::replace_switch(&mut base, config.as_deref(), args.preset);
    let sweep: SweepTable = match base.remove("sweep") {
        Some(t) => SweepTable::deserialize(t)
            .map_err(|e| anyhow::anyhow!("{name}: [sweep]: {}", e.message().trim_end()))?,
        None => SweepTable::default(),
    };
    // Errors name where the value came from: the command line's flag or the table's key.
    let grid = if args.grid.is_empty() {
        let from_table = grid_from_table(&sweep).with_context(|| format!("{name}: [sweep]"))?;
        Grid::parse(&from_table).map_err(|e| {
            match e.arg.split_once('=').map_or(e.arg.as_str(), |(k, _)| k) {
                "" => anyhow::anyhow!("{name}: [sweep] grid: {}", e.message),
                key => anyhow::anyhow!("{name}: [sweep] grid.\"{key}\": {}", e.message),
            }
        })?
    } else {
        Grid::parse(&args.grid)?
    };
    let seeds_per_point = match (args.seeds, sweep.seeds) {
        (Some(0), _) => anyhow::bail!("--seeds: give at least 1"),
        (Some(n), _) => n,
        (None, Some(0)) => anyhow::bail!("{name}: [sweep] seeds: give at least 1"),
        (None, Some(n)) => n,
        (None, None) => 1,
    };
    let first_seed = match args.seed {
        Some(s) => s,
        None => rocelab::sim::scenario::table_seed(&base),
    };
    // Each run's seed goes into its scenario, a TOML integer: the last must fit.
    if first_seed
        .checked_add(seeds_per_point - 1)
        .is_none_or(|last| last > MAX_SEED)
    {
        anyhow::bail!(
            "seeds {first_seed} to {first_seed} + {} run past the largest seed, {MAX_SEED}: give a smaller --seed",
            seeds_per_point - 1
        );
    }
    let runs = grid.len().saturating_mul(seeds_per_point as usize);
    if runs > MAX_RUNS {
        anyhow::bail!(
            "{} points x {seeds_per_point} seeds = {runs} runs; at most {MAX_RUNS}",
            grid.len()
        );
    }
    let seeds: Vec<u64> = (0..seeds_per_point).map(|k| first_seed + k).collect();
    // Every run's scenario, checked before anything runs or is written.
    let points = grid.points();
    let mut texts = Vec::with_capacity(runs);
    for (p, values) in points.iter().enumerate() {
        for &seed in &seeds {
            let mut t = base.clone();
            for s in &args.set {
                rocelab::config::set_key(&mut t, s)?;
            }
            for (key, value) in grid.keys.iter().zip(values) {
                rocelab::config::set_key(&mut t, &format!("{key}={value}"))
                    .with_context(|| format!("point {p}"))?;
            }
            set_seed(&mut t, seed)?;
            let text = toml::to_string(&t)?;
            Scenario::from_toml(&name, &text, dir.as_deref())
                .map_err(|e| anyhow::anyhow!("point {p} ({}): {e}", values.join(", ")))?;
            texts.push((p, seed, t));
        }
    }
    if let Some(plan_dir) = &args.plan {
        return write_plan(plan_dir, &name, dir.as_deref(), &grid, &seeds, texts);
    }
    if let Some(d) = &args.out {
        rocelab::output::check_folder(d)?;
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .clamp(1, runs.max(1));
    noteln!(
        "sweep: {} points x {} seed{} = {runs} runs of {name}, {jobs} at a time",
        grid.len(),
        seeds.len(),
        if seeds.len() == 1 { "" } else { "s" }
    );
    let results = run_all(&name, dir.as_deref(), &texts, jobs)?;
    let mut failed = Vec::new();
    let mut per_point: Vec<Vec<(u64, Metrics)>> = vec![Vec::new(); points.len()];
    for ((p, seed, _), r) in texts.iter().zip(results) {
        match r {
            Ok(m) => per_point[*p].push((*seed, m)),
            Err(e) => failed.push(format!("point {p} seed {seed}: {e}")),
        }
    }
    if !failed.is_empty() {
        anyhow::bail!("{} runs failed:\n  {}", failed.len(), failed.join("\n  "));
    }
    finish(
        &name,
        &grid,
        &seeds,
        &points,
        &per_point,
        args.out.as_deref(),
        report,
    )
}

/// The scenario's TOML table and the folder its file references are relative to.
pub(super) fn scenario_table(name: &str) -> Result<(toml::Table, Option<PathBuf>)> {
    let (text, dir) = match scenario_text(name) {
        Some(t) => (t.to_owned(), None),
        None => {
            let path = Path::new(name);
            let text = rocelab::config::read_text(path).with_context(|| {
                format!(
                    "{name}: give a scenario file or a built-in scenario ({})",
                    rocelab::sim::scenario::names()
                )
            })?;
            (text, path.parent().map(Path::to_path_buf))
        }
    };
    let table: toml::Table = toml::from_str(&text).with_context(|| format!("{name}: not TOML"))?;
    Ok((table, dir))
}

/// `--grid` arguments from a `[sweep]` table's `grid = { "key" = [values] }`.
fn grid_from_table(sweep: &SweepTable) -> Result<Vec<String>> {
    let Some(grid) = &sweep.grid else {
        anyhow::bail!("no grid: give --grid KEY=V1,V2,... or a [sweep] grid table");
    };
    if grid.is_empty() {
        anyhow::bail!("grid: give at least one key = [values]");
    }
    grid.iter()
        .map(|(key, values)| {
            let values = values
                .as_array()
                .with_context(|| format!("grid.{key}: give an array of values"))?;
            let text: Vec<String> = values.iter().map(ToString::to_string).collect();
            Ok(format!("{key}={}", text.join(",")))
        })
        .collect()
}

/// The progress line: runs done of all, the wall time so far, and what is left at the
/// pace so far.
fn progress(done: usize, total: usize, elapsed: std::time::Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let left = secs / done.max(1) as f64 * total.saturating_sub(done) as f64;
    format!(
        "sweep: {done} of {total} runs done, {} elapsed, about {} left",
        wall(secs),
        wall(left)
    )
}

/// A wall-clock span to the second: "42 s", "3 min 05 s".
fn wall(secs: f64) -> String {
    let s = secs.round() as u64;
    if s < 60 {
        format!("{s} s")
    } else {
        format!("{} min {:02} s", s / 60, s % 60)
    }
}

/// Runs every scenario on `jobs` threads; each run's metrics or error, in order.
fn run_all(
    name: &str,
    dir: Option<&Path>,
    texts: &[(usize, u64, toml::Table)],
    jobs: usize,
) -> Result<Vec<Result<Metrics, String>>> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Metrics, String>>>> =
        Mutex::new((0..texts.len()).map(|_| None).collect());
    let terminal = {
        use std::io::IsTerminal as _;
        std::io::stderr().is_terminal()
    };
    let started = std::time::Instant::now();
    // Off a terminal (a log, a pipe), a line at most this often.
    let every = std::time::Duration::from_secs(10);
    let last_line = Mutex::new(started);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((_, _, table)) = texts.get(i) else {
                        break;
                    };
                    let r = run_point(name, dir, table);
                    results
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)[i] = Some(r);
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    let line = progress(n, texts.len(), started.elapsed());
                    if terminal {
                        note!("\r\x1b[K{line}");
                    } else {
                        let mut last = last_line
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        if last.elapsed() >= every && n < texts.len() {
                            *last = std::time::Instant::now();
                            noteln!("{line}");
                        }
                    }
                }
            });
        }
    });
    if terminal {
        note!("\r\x1b[K");
    }
    Ok(results
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("did not run".into())))
        .collect())
}

/// One run: the scenario as a job would read it, its report, its metrics.
fn run_point(name: &str, dir: Option<&Path>, table: &toml::Table) -> Result<Metrics, String> {
    let text = toml::to_string(table).map_err(|e| e.to_string())?;
    let scenario = Scenario::from_toml(name, &text, dir).map_err(|e| e.to_string())?;
    let outcome = rocelab::sim::run::run(&scenario).map_err(|e| e.to_string())?;
    let json = rocelab::report::sim::json(&scenario, &outcome);
    Metrics::of_report(&json).ok_or_else(|| "the report has no summary".to_owned())
}

/// Rows, table, Pareto front, files.
fn finish(
    name: &str,
    grid: &Grid,
    seeds: &[u64],
    points: &[Vec<String>],
    per_point: &[Vec<(u64, Metrics)>],
    out: Option<&Path>,
    report: JsonReport,
) -> Result<()> {
    let mut rows: Vec<Row> = points
        .iter()
        .zip(per_point)
        .enumerate()
        .filter(|(_, (_, runs))| !runs.is_empty())
        .map(|(point, (values, runs))| {
            let metrics: Vec<Metrics> = runs.iter().map(|(_, m)| *m).collect();
            Row {
                point,
                values: values.clone(),
                seeds: runs.iter().map(|(seed, _)| *seed).collect(),
                metrics: Metrics::median(&metrics),
                pareto: false,
            }
        })
        .collect();
    mark_pareto(&mut rows);
    // The seeds each row has, as they are: a plan edited by hand may give its points
    // different counts (it was reported as the plan's count).
    let fewest = rows
        .iter()
        .map(|r| r.seeds.len())
        .min()
        .unwrap_or(seeds.len());
    let most = rows
        .iter()
        .map(|r| r.seeds.len())
        .max()
        .unwrap_or(seeds.len());
    sayln!(
        "sweep of {name}: {} points, {} seed{} each (the median of each metric); * on the Pareto front",
        points.len(),
        if fewest == most {
            most.to_string()
        } else {
            format!("{fewest} to {most}")
        },
        if most == 1 { "" } else { "s" }
    );
    sayln!(
        "total Gb/s: the payload every host received over the run, summed: the fabric's total, not a flow's"
    );
    say!("{}", table(grid, &rows));
    let json = rocelab::report::document(
        "sweep",
        serde_json::json!({ "scenario": name, "grid": grid, "seeds": seeds, "rows": rows }),
    );
    if let Some(dir) = out {
        rocelab::output::make_folder(dir)?;
        let text = serde_json::to_string_pretty(&json)? + "\n";
        rocelab::output::write_whole(&dir.join("sweep.json"), text.as_bytes())?;
        let mut wrote = vec!["sweep.json"];
        let every: Vec<&str> = std::iter::once(HEATMAP)
            .chain(HEATMAPS.iter().map(|h| h.0))
            .collect();
        if grid.keys.len() == 2 {
            let fct = rows.iter().any(|r| r.metrics.fct_p99_slowdown.is_some());
            let headline = if fct { &HEATMAPS[1] } else { &HEATMAPS[0] };
            let svg = heatmap(name, grid, &rows, headline)?;
            rocelab::output::write_whole(&dir.join(HEATMAP), svg.as_bytes())?;
            wrote.push(HEATMAP);
            let mut stale = Vec::new();
            for h in &HEATMAPS {
                // A metric no point has (FCT without workloads) gets no map.
                if rows.iter().any(|r| (h.3)(&r.metrics).is_some()) {
                    let svg = heatmap(name, grid, &rows, h)?;
                    rocelab::output::write_whole(&dir.join(h.0), svg.as_bytes())?;
                    wrote.push(h.0);
                } else {
                    stale.push(h.0);
                }
            }
            rocelab::output::remove_stale(dir, &stale)?;
        } else if !rocelab::output::remove_stale(dir, &every)?.is_empty() {
            noteln!(
                "removed the heatmaps of an earlier two-key sweep from {}",
                dir.display()
            );
        }
        sayln!("\nwrote {} to {}", wrote.join(" and "), dir.display());
    }
    report.write(&json)
}

/// The two-key grid's heatmap of one metric.
fn heatmap(name: &str, grid: &Grid, rows: &[Row], metric: &HeatmapMetric) -> Result<String> {
    let (_, label, higher_is_better, value) = *metric;
    let (ys, xs) = (&grid.values[0], &grid.values[1]);
    let cells: Vec<Vec<Option<f64>>> = (0..ys.len())
        .map(|i| {
            (0..xs.len())
                .map(|j| {
                    rows.iter()
                        .find(|r| r.point == i * xs.len() + j)
                        .and_then(|r| value(&r.metrics))
                })
                .collect()
        })
        .collect();
    Ok(rocelab::report::plot::heatmap_svg(
        &format!("{label}: {name}"),
        (&grid.keys[1], xs),
        (&grid.keys[0], ys),
        &cells,
        higher_is_better,
    )?)
}

/// Writes the plan: runs/NNNN/scenario.toml (with copies of the files it names),
/// jobs.txt and plan.json.
fn write_plan(
    plan_dir: &Path,
    name: &str,
    dir: Option<&Path>,
    grid: &Grid,
    seeds: &[u64],
    texts: Vec<(usize, u64, toml::Table)>,
) -> Result<()> {
    let (points_seeds, tables): (Vec<(usize, u64)>, Vec<toml::Table>) = texts
        .into_iter()
        .map(|(point, seed, table)| ((point, seed), table))
        .unzip();
    let runs: Vec<PlannedRun> = write_jobs(plan_dir, dir, tables)?
        .into_iter()
        .zip(points_seeds)
        .map(|((dir, digest), (point, seed))| PlannedRun {
            point,
            seed,
            dir,
            digest: Some(digest),
        })
        .collect();
    let n = runs.len();
    let plan = Plan {
        schema: PLAN_SCHEMA.into(),
        scenario: name.into(),
        grid: grid.clone(),
        seeds: seeds.to_vec(),
        runs,
    };
    let text = serde_json::to_string_pretty(&plan)? + "\n";
    rocelab::output::write_whole(&plan_dir.join("plan.json"), text.as_bytes())?;
    sayln!(
        "wrote {n} jobs to {d}: run each line of {jobs} from {d} (e.g. `cd {d} && parallel < jobs.txt`), then `rocelab sweep --merge {d}`",
        d = plan_dir.display(),
        jobs = plan_dir.join("jobs.txt").display()
    );
    Ok(())
}

/// Writes one job per scenario of `tables` into `plan_dir`, a new or empty folder:
/// runs/NNNN/scenario.toml (with copies of the files it names, `dir` the folder they are
/// relative to) and jobs.txt, a command line each; each run's folder and its
/// scenario.toml's digest, in order. `sweep --plan` and `tune --plan` write their jobs so.
pub(super) fn write_jobs(
    plan_dir: &Path,
    dir: Option<&Path>,
    tables: Vec<toml::Table>,
) -> Result<Vec<(String, String)>> {
    rocelab::output::check_folder(plan_dir)?;
    // An old plan's results would be merged as the new runs': a plan gets a folder of its own.
    if let Some(old) = ["plan.json", "jobs.txt", "runs"]
        .into_iter()
        .find(|f| plan_dir.join(f).exists())
    {
        anyhow::bail!(
            "{} already holds a plan ({old}): give a new or empty folder, or remove it (its runs' results would be merged as the new plan's)",
            plan_dir.display()
        );
    }
    rocelab::output::make_folder(plan_dir)?;
    let mut jobs = String::new();
    let mut runs = Vec::new();
    for (k, mut table) in tables.into_iter().enumerate() {
        let run_dir = format!("runs/{k:04}");
        let path = plan_dir.join(&run_dir);
        std::fs::create_dir_all(&path).with_context(|| format!("making {}", path.display()))?;
        localize(&mut table, dir, &path)?;
        let text = toml::to_string(&table)?;
        rocelab::output::write_whole(&path.join("scenario.toml"), text.as_bytes())?;
        // Run from the plan's folder: ROCELAB names the binary where it is not on PATH. A
        // subshell each, so that the file also runs whole as a script.
        jobs.push_str(&format!(
            "(cd {run_dir} && \"${{ROCELAB:-rocelab}}\" sim scenario.toml --out result > log.txt 2>&1)\n"
        ));
        runs.push((run_dir, rocelab::sim::scenario::digest(&text)));
    }
    rocelab::output::write_whole(&plan_dir.join("jobs.txt"), jobs.as_bytes())?;
    Ok(runs)
}

/// Copies the files a scenario names (a switch `file`, workload `cdf` files) next to its
/// planned copy, and points the scenario at the copies.
fn localize(table: &mut toml::Table, dir: Option<&Path>, to: &Path) -> Result<()> {
    let copy = |value: &mut toml::Value, as_name: &str| -> Result<()> {
        let Some(file) = value.as_str() else {
            return Ok(());
        };
        let from = dir.map_or_else(|| PathBuf::from(file), |d| d.join(file));
        std::fs::copy(&from, to.join(as_name))
            .with_context(|| format!("copying {} into the plan", from.display()))?;
        *value = toml::Value::String(as_name.into());
        Ok(())
    };
    if let Some(file) = table
        .get_mut("switch")
        .and_then(toml::Value::as_table_mut)
        .and_then(|s| s.get_mut("file"))
    {
        copy(file, "switch.toml")?;
    }
    if let Some(workloads) = table
        .get_mut("workload")
        .and_then(toml::Value::as_array_mut)
    {
        for (i, w) in workloads.iter_mut().enumerate() {
            if let Some(cdf) = w.as_table_mut().and_then(|w| w.get_mut("cdf"))
                && cdf
                    .as_str()
                    .is_some_and(|c| !rocelab::sim::workloads::CDFS.iter().any(|(n, _)| *n == c))
            {
                copy(cdf, &format!("cdf-{i}.txt"))?;
            }
        }
    }
    Ok(())
}

/// The most bytes of a plan.json: one of 10 000 runs takes about 2 MB.
pub(super) const MAX_PLAN_BYTES: u64 = 64 << 20;

/// The most bytes of a run's report.json: `fct` has a row per workload flow, and a long
/// run has millions. It is read as a stream, keeping only the fields the merge checks.
const MAX_REPORT_BYTES: u64 = 1 << 30;

/// Why a file the merge reads cannot be opened.
pub(super) enum OpenError {
    /// The open or its stat failed.
    Io(std::io::Error),
    /// A FIFO, a device, a folder, a socket.
    NotRegular(&'static str),
    /// Larger than the limit: its size.
    TooLarge(u64),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Io(e) => write!(f, "{e}"),
            OpenError::NotRegular(kind) => write!(f, "is {kind}, not a regular file"),
            OpenError::TooLarge(bytes) => write!(f, "is {bytes} bytes, more than the merge reads"),
        }
    }
}

/// `path` opened for reading if it is a regular file of at most `limit` bytes, and read
/// through a buffer that stops there. The open does not wait for a FIFO's writer
/// (O_NONBLOCK: a FIFO named report.json hung the merge for ever), and `/dev/zero` is
/// refused, not read until the memory runs out.
pub(super) fn open_regular(
    path: &Path,
    limit: u64,
) -> Result<std::io::BufReader<std::io::Take<std::fs::File>>, OpenError> {
    use std::io::Read as _;
    use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(OpenError::Io)?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    let kind = meta.file_type();
    if !kind.is_file() {
        return Err(OpenError::NotRegular(if kind.is_dir() {
            "a folder"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "a socket"
        }));
    }
    if meta.len() > limit {
        return Err(OpenError::TooLarge(meta.len()));
    }
    // A file that grows past its stat is cut at the limit, and fails to parse.
    Ok(std::io::BufReader::new(file.take(limit)))
}

/// `--merge DIR`: the table from the finished runs of a plan.
fn merge(dir: &Path, out: Option<&Path>, report: JsonReport) -> Result<()> {
    let path = dir.join("plan.json");
    let reader = open_regular(&path, MAX_PLAN_BYTES).map_err(|e| match e {
        OpenError::TooLarge(_) => anyhow::anyhow!(
            "{}: {e}: at most {MAX_PLAN_BYTES} bytes (a plan of {MAX_RUNS} runs takes about 2 MB)",
            path.display()
        ),
        OpenError::Io(e) => anyhow::Error::new(e).context(format!("reading {}", path.display())),
        e => anyhow::anyhow!("{}: {e}", path.display()),
    })?;
    let plan: Plan = serde_json::from_reader(reader)
        .with_context(|| format!("{}: not a sweep plan", path.display()))?;
    let points = check_plan(&plan).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let inside = dir
        .canonicalize()
        .with_context(|| format!("reading {}", dir.display()))?;
    let mut planned = vec![0usize; points.len()];
    for run in &plan.runs {
        planned[run.point] += 1;
    }
    let mut per_point: Vec<Vec<(u64, Metrics)>> = vec![Vec::new(); points.len()];
    let mut missing = Vec::new();
    let mut stale = Vec::new();
    let mut damaged = Vec::new();
    for run in &plan.runs {
        let file = dir.join(&run.dir).join("result").join("report.json");
        match check_result(&file, &inside, run) {
            Ok(m) => per_point[run.point].push((run.seed, m)),
            Err(Unusable::Missing) => missing.push(run.dir.clone()),
            Err(Unusable::NotTheirs(why)) => stale.push(format!("{} ({why})", run.dir)),
            Err(Unusable::Damaged(why)) => damaged.push(format!("{} ({why})", run.dir)),
        }
    }
    // A point counts only with all its seeds.
    for (runs, planned) in per_point.iter_mut().zip(&planned) {
        if runs.len() != *planned {
            runs.clear();
        }
    }
    finish(
        &plan.scenario,
        &plan.grid,
        &plan.seeds,
        &points,
        &per_point,
        out,
        report,
    )?;
    let mut problems = Vec::new();
    if !missing.is_empty() {
        problems.push(format!(
            "{} of {} runs have no result yet (their points are left out): {}",
            missing.len(),
            plan.runs.len(),
            missing.join(", ")
        ));
    }
    if !stale.is_empty() {
        problems.push(format!(
            "{} of {} runs have a result that is not theirs (their points are left out, run them again): {}",
            stale.len(),
            plan.runs.len(),
            stale.join(", ")
        ));
    }
    if !damaged.is_empty() {
        problems.push(format!(
            "{} of {} runs have a result that cannot be read (their points are left out, run them again): {}",
            damaged.len(),
            plan.runs.len(),
            damaged.join(", ")
        ));
    }
    if !problems.is_empty() {
        anyhow::bail!("{}", problems.join("; "));
    }
    Ok(())
}

/// The plan's points, if plan.json holds together: a grid that can be swept (a list of
/// values per key, at most [`MAX_RUNS`] points), seeds, and runs that each name a point
/// of the grid, one of the seeds and a folder inside the plan's, every point with a run
/// and none twice. A plan with fewer lists of values than keys panicked, one with more
/// printed a wrong table, and one of no runs an empty table, each with exit 0.
fn check_plan(plan: &Plan) -> Result<Vec<Vec<String>>> {
    if plan.schema != PLAN_SCHEMA {
        anyhow::bail!("schema {}, expected {PLAN_SCHEMA}", plan.schema);
    }
    plan.grid
        .check()
        .map_err(|e| anyhow::anyhow!("grid: {}", e.message))?;
    if plan.seeds.is_empty() {
        anyhow::bail!("seeds is empty: a plan runs each point with one seed or more");
    }
    // Every point runs every seed: more seeds than runs cannot be a plan's.
    if plan.seeds.len() > MAX_RUNS {
        anyhow::bail!("seeds has {} seeds; at most {MAX_RUNS}", plan.seeds.len());
    }
    if plan.runs.is_empty() {
        anyhow::bail!("runs is empty: the plan has no run to merge");
    }
    if plan.runs.len() > MAX_RUNS {
        anyhow::bail!("runs has {} runs; at most {MAX_RUNS}", plan.runs.len());
    }
    let points = plan.grid.points();
    let mut seen = std::collections::HashMap::new();
    let mut dirs = std::collections::HashMap::new();
    for (i, run) in plan.runs.iter().enumerate() {
        let inside = !run.dir.is_empty()
            && Path::new(&run.dir)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside {
            anyhow::bail!(
                "runs[{i}].dir \"{}\" is not a folder inside the plan's (runs/NNNN)",
                run.dir
            );
        }
        if let Some(j) = dirs.insert(run.dir.as_str(), i) {
            anyhow::bail!("runs[{i}].dir \"{}\" is runs[{j}]'s too", run.dir);
        }
        if run.point >= points.len() {
            anyhow::bail!(
                "runs[{i}].point is {}; the grid has {} points (0 to {})",
                run.point,
                points.len(),
                points.len() - 1
            );
        }
        if !plan.seeds.contains(&run.seed) {
            anyhow::bail!(
                "runs[{i}].seed is {}, not one of the plan's seeds ({})",
                run.seed,
                list(&plan.seeds)
            );
        }
        if let Some(j) = seen.insert((run.point, run.seed), i) {
            anyhow::bail!(
                "runs[{i}] is point {} with seed {}, as runs[{j}] is",
                run.point,
                run.seed
            );
        }
    }
    let mut covered = vec![false; points.len()];
    for run in &plan.runs {
        covered[run.point] = true;
    }
    if let Some(p) = covered.iter().position(|c| !c) {
        anyhow::bail!(
            "point {p} ({}) has no run: the runs must cover the grid",
            points[p].join(", ")
        );
    }
    Ok(points)
}

/// `1, 2, 3`; `1, 2, ..., 9` past eight.
fn list(seeds: &[u64]) -> String {
    let shown: Vec<String> = seeds.iter().take(8).map(u64::to_string).collect();
    match seeds.len() {
        n if n > 8 => format!("{}, ..., {}", shown[..7].join(", "), seeds[n - 1]),
        _ => shown.join(", "),
    }
}

/// Why a run's result is not taken.
pub(super) enum Unusable {
    /// No report.json yet: the run has not finished (or not started).
    Missing,
    /// A sim report of another run: another seed or another scenario.
    NotTheirs(String),
    /// Not a sim report: empty, cut short, not JSON, another document.
    Damaged(String),
}

/// The fields of a report.json the merge reads; the rest (a row per flow in `fct`) is
/// skipped as it streams past.
#[derive(serde::Deserialize)]
struct ReportHead {
    schema: Option<serde_json::Value>,
    seed: Option<serde_json::Value>,
    scenario_digest: Option<serde_json::Value>,
    summary: Option<serde_json::Value>,
}

/// The part of a run's report.json a merge reads: it must say which report it is, its
/// seed and its scenario's digest, whatever else it keeps.
pub(super) trait RunReport: serde::de::DeserializeOwned {
    /// Its `schema`, `seed` and `scenario_digest`.
    fn stamp(&self) -> [Option<&serde_json::Value>; 3];
}

impl RunReport for ReportHead {
    fn stamp(&self) -> [Option<&serde_json::Value>; 3] {
        [
            self.schema.as_ref(),
            self.seed.as_ref(),
            self.scenario_digest.as_ref(),
        ]
    }
}

/// A reader that notes whether anything but whitespace went through it: an empty
/// report.json is told from one cut short.
struct Seen<R> {
    inner: R,
    content: bool,
}

impl<R: std::io::Read> std::io::Read for Seen<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.content |= !buf[..n].iter().all(u8::is_ascii_whitespace);
        Ok(n)
    }
}

/// The metrics of run `run`'s result `file`, if it is a whole sim report of that run: its
/// seed and its scenario's digest (file times prove nothing: results gathered from other
/// machines rarely keep them). The file, symbolic links followed, must lie inside
/// `plan_dir` (canonical), be a regular file and hold at most [`MAX_REPORT_BYTES`].
fn check_result(file: &Path, plan_dir: &Path, run: &PlannedRun) -> Result<Metrics, Unusable> {
    let report: ReportHead = read_result(file, plan_dir, run.seed, run.digest.as_deref())?;
    let summary = serde_json::json!({ "summary": report.summary });
    Metrics::of_report(&summary)
        .ok_or_else(|| Unusable::Damaged("report.json has no complete summary".into()))
}

/// The report `file` of a planned run of `seed` whose scenario.toml has `digest`, if it is
/// a whole sim report of that run, read as `T`; the checks of [`check_result`].
pub(super) fn read_result<T: RunReport>(
    file: &Path,
    plan_dir: &Path,
    seed: u64,
    digest: Option<&str>,
) -> Result<T, Unusable> {
    let real = match file.canonicalize() {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unusable::Missing),
        Err(e) => return Err(Unusable::Damaged(format!("report.json: {e}"))),
    };
    if !real.starts_with(plan_dir) {
        return Err(Unusable::Damaged(format!(
            "report.json leads outside the plan folder, to {}",
            real.display()
        )));
    }
    let mut reader = match open_regular(&real, MAX_REPORT_BYTES) {
        Ok(r) => Seen {
            inner: r,
            content: false,
        },
        Err(OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Unusable::Missing);
        }
        Err(e @ OpenError::TooLarge(_)) => {
            return Err(Unusable::Damaged(format!(
                "report.json {e}: at most {MAX_REPORT_BYTES} bytes"
            )));
        }
        Err(e) => return Err(Unusable::Damaged(format!("report.json {e}"))),
    };
    let report: T = serde_json::from_reader(&mut reader).map_err(|e| {
        Unusable::Damaged(match e.classify() {
            _ if !reader.content => "report.json is empty".to_owned(),
            serde_json::error::Category::Data => {
                format!("report.json is not a sim report: {e}")
            }
            _ => format!("report.json is not JSON, or cut short: {e}"),
        })
    })?;
    let [schema, report_seed, scenario_digest] = report.stamp();
    let schema = schema.and_then(serde_json::Value::as_str);
    if schema != Some(SIM_SCHEMA) {
        return Err(Unusable::Damaged(format!(
            "report.json is not a sim report: schema {}, expected {SIM_SCHEMA}",
            schema.map_or_else(|| "missing".to_owned(), |s| format!("'{s}'"))
        )));
    }
    match report_seed.and_then(serde_json::Value::as_u64) {
        Some(s) if s == seed => {}
        Some(s) => {
            return Err(Unusable::NotTheirs(format!(
                "ran with seed {s}, the run's is {seed}"
            )));
        }
        None => return Err(Unusable::Damaged("report.json has no seed".into())),
    }
    if let Some(planned) = digest {
        match scenario_digest.and_then(serde_json::Value::as_str) {
            Some(d) if d == planned => {}
            Some(_) => {
                return Err(Unusable::NotTheirs(
                    "ran another scenario than its scenario.toml: another point's result, or \
                     the scenario was changed after the plan"
                        .into(),
                ));
            }
            None => {
                return Err(Unusable::Damaged(
                    "report.json has no scenario_digest (written by an older rocelab?)".into(),
                ));
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn progress_says_runs_done_time_elapsed_and_time_left() {
        // 3 of 12 in 60 s: 20 s a run, 9 left, 180 s.
        assert_eq!(
            progress(3, 12, Duration::from_secs(60)),
            "sweep: 3 of 12 runs done, 1 min 00 s elapsed, about 3 min 00 s left"
        );
        assert_eq!(
            progress(1, 2, Duration::from_millis(4_400)),
            "sweep: 1 of 2 runs done, 4 s elapsed, about 4 s left"
        );
        assert_eq!(
            progress(5, 5, Duration::from_secs(125)),
            "sweep: 5 of 5 runs done, 2 min 05 s elapsed, about 0 s left"
        );
    }
}

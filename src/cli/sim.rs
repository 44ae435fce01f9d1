//! `rocelab sim`: a scenario in deterministic virtual time.

use super::{Counters, Preset};
use anyhow::{Context, Result};
use rocelab::report::{bundle, sim as report};
use rocelab::sim::scenario::{MAX_SEED, SCENARIOS, Scenario, names, scenario_text, set_seed};
use rocelab::sim::summary::{Summary, summary};
use std::path::{Path, PathBuf};

/// Run a scenario (incasts, NIC faults, ring all-reduce, variants side by side) in
/// deterministic virtual time: the switch and endpoint cores joined by simulated links.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// A scenario file (TOML), or a built-in scenario (`--list` names and describes
    /// them: incasts, PFC and ECN side by side, slow receivers, victim flows, pause
    /// storms, deadlock, ring all-reduce). Also as `--scenario NAME`.
    #[arg(value_name = "SCENARIO", conflicts_with = "scenario_flag")]
    scenario: Option<String>,
    /// The same as the positional SCENARIO (default: incast).
    #[arg(long = "scenario", value_name = "SCENARIO")]
    scenario_flag: Option<String>,
    /// Switch configuration file (TOML) for every switch, instead of the scenario's base
    /// (the scenario's own switch keys, such as `ecn = false`, still apply on top).
    #[arg(long, conflicts_with = "preset")]
    config: Option<PathBuf>,
    /// Built-in switch configuration for every switch, instead of the scenario's base.
    #[arg(long, value_enum)]
    preset: Option<Preset>,
    /// Change one key of the scenario by its dotted path (repeatable):
    /// `--set switch.buffer.shared_bytes=4M`, `--set topology.link_gbps=100`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Seed of every random draw (RED, link loss, the workloads' flows), instead of the
    /// scenario's: the same as `--set seed=N`. 0 to 9223372036854775807.
    #[arg(long, value_parser = clap::value_parser!(u64).range(..=MAX_SEED))]
    seed: Option<u64>,
    /// Write report.json, series.csv, queues.svg, rates.svg, pauses.svg, pgs.svg (and
    /// fct.svg with workload flows) here.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Draw the time-series plots from this virtual time on, ms, to look at a steady
    /// state past a start-up transient (series.csv keeps every row). With --out. A run
    /// whose series ends before it gets plots of the whole run, with a note.
    #[arg(long, value_name = "MS", requires = "out")]
    plots_from_ms: Option<f64>,
    /// List the built-in scenarios.
    #[arg(long)]
    list: bool,
    /// Print a built-in scenario as a TOML file to start from.
    #[arg(long, value_name = "NAME")]
    show: Option<String>,
    /// How to print the switch counters: table (a row per port and class), wide (every
    /// counter), sonic (`show pfc counters`, `show queue counters`, `show queue wredcounters`,
    /// `show pfcwd stats`) or nxos (`show
    /// interface priority-flow-control`, `show queuing interface`).
    #[arg(long, value_enum, default_value_t = Counters::Table)]
    counters: Counters,
    /// Run each simulation on up to N threads: the network split by switch (each switch
    /// with hosts with its hosts, the others dealt out), in windows of the shortest
    /// propagation delay between the parts. The output is the same byte for byte with
    /// any N; only the wall time changes. 1 to 64.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=rocelab::sim::MAX_THREADS as i64))]
    threads: u16,
}

/// Runs `rocelab sim`.
pub(crate) fn run(args: Args) -> Result<()> {
    if args.list {
        for (name, text) in SCENARIOS {
            let s = Scenario::from_toml(name, text, None)?;
            let variants = match s.variants.len() {
                0 => String::new(),
                n => format!(" ({n} variants)"),
            };
            let compare = if rocelab::sim::scenario::COMPARABLE.contains(&name) {
                " [compare]"
            } else {
                ""
            };
            sayln!("{name:<14} {}{variants}{compare}", s.description);
        }
        sayln!(
            "\n[compare]: meant for `rocelab compare SCENARIO`, RoCEv2 against InfiniBand on \
             the same topology and workload"
        );
        return Ok(());
    }
    if let Some(name) = &args.show {
        let text = scenario_text(name).with_context(|| {
            format!("no built-in scenario named '{name}'; they are {}", names())
        })?;
        say!("{text}");
        return Ok(());
    }
    let name = args
        .scenario
        .or(args.scenario_flag)
        .unwrap_or_else(|| "incast".to_owned());
    let config_path = absolute_config(args.config.as_deref())?;
    let mut scenario = Scenario::load_edited(&name, |table| {
        replace_switch(table, config_path.as_deref(), args.preset);
        for assignment in &args.set {
            rocelab::config::set_key(table, assignment)?;
        }
        // In the table, before the scenario is resolved: the workloads' flows are drawn
        // then.
        if let Some(seed) = args.seed {
            set_seed(table, seed)?;
        }
        Ok(())
    })?;
    name_changes(&mut scenario, &args.set);
    scenario.threads = usize::from(args.threads);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if scenario.threads > cores {
        noteln!(
            "--threads {}: this machine gives the process {cores} core{}, so the threads \
             will take turns on them and wait for each other at every window",
            scenario.threads,
            if cores == 1 { "" } else { "s" }
        );
    }
    for v in &mut scenario.variants {
        v.threads = scenario.threads;
    }
    let plots_from = match args.plots_from_ms {
        None => rocelab::time::Nanos::ZERO,
        Some(ms) if ms.is_finite() && ms >= 0.0 && ms * 1e6 < scenario.duration.0 as f64 => {
            rocelab::time::Nanos((ms * 1e6).round() as u64)
        }
        Some(ms) => anyhow::bail!(
            "--plots-from-ms {ms}: give 0 to before the end of the run ({})",
            scenario.duration.human()
        ),
    };
    // Checked now, made only when the results are written: a run that fails or is
    // interrupted leaves no empty folder.
    if let Some(dir) = &args.out {
        rocelab::output::check_folder(dir)?;
    }
    // A reused folder: what an earlier run of variants left there (read before anything
    // is written), removed once this run's outputs are in place.
    let earlier = args
        .out
        .as_deref()
        .map(earlier_variant_folders)
        .unwrap_or_default();
    if scenario.variants.is_empty() {
        run_one(&scenario, args.out.as_deref(), args.counters, plots_from)?;
        if let Some(dir) = &args.out {
            let mut removed = rocelab::output::remove_stale(dir, &[SUMMARY])?
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>();
            for folder in &earlier {
                removed.extend(remove_variant_folder(dir, folder)?);
            }
            note_removed(dir, &removed);
        }
        return Ok(());
    }
    let n = scenario.variants.len();
    let mut rows = Vec::with_capacity(n);
    for (i, variant) in scenario.variants.iter().enumerate() {
        let name = variant.variant.as_deref().unwrap_or_default();
        sayln!("=== variant {}/{n}: {name} ===", i + 1);
        let dir = args.out.as_ref().map(|d| d.join(slug(name)));
        if let Some(d) = &args.out {
            rocelab::output::make_folder(d)?;
        }
        rows.push(run_one(variant, dir.as_deref(), args.counters, plots_from)?);
        sayln!();
    }
    sayln!("the {n} variants side by side (the recorded run of each):");
    say!("{}", report::compare_table(&rows));
    if let Some(dir) = &args.out {
        let json = rocelab::report::document(
            "sim-summary",
            serde_json::json!({
                "scenario": scenario.name,
                "description": scenario.description,
                "variants": rows,
            }),
        );
        let text = serde_json::to_string_pretty(&json)? + "\n";
        rocelab::output::write_whole(&dir.join(SUMMARY), text.as_bytes())?;
        // A plain run's report beside the variants, and variant folders this scenario
        // does not have.
        let mut plain = bundle::FILES.to_vec();
        plain.push(bundle::FCT_FILE);
        let mut removed: Vec<String> = rocelab::output::remove_stale(dir, &plain)?
            .into_iter()
            .map(str::to_owned)
            .collect();
        let now: Vec<String> = scenario
            .variants
            .iter()
            .map(|v| slug(v.variant.as_deref().unwrap_or_default()))
            .collect();
        for folder in earlier.iter().filter(|f| !now.contains(f)) {
            removed.extend(remove_variant_folder(dir, folder)?);
        }
        note_removed(dir, &removed);
        sayln!(
            "\nwrote summary.json and one folder per variant ({}) to {}",
            scenario
                .variants
                .iter()
                .map(|v| slug(v.variant.as_deref().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(", "),
            dir.display()
        );
    }
    Ok(())
}

/// The comparison of a run of variants, beside their folders.
const SUMMARY: &str = "summary.json";

/// The variant folders an earlier run's summary.json in `dir` names (none without one, or
/// when it is not rocelab's).
fn earlier_variant_folders(dir: &Path) -> Vec<String> {
    let Some(json) = std::fs::read(dir.join(SUMMARY))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
    else {
        return Vec::new();
    };
    if json["schema"] != "rocelab.sim-summary/1" {
        return Vec::new();
    }
    json["variants"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["variant"].as_str())
        .map(slug)
        .collect()
}

/// Removes variant folder `name` of `dir` an earlier run wrote: its report files, and the
/// folder if nothing else is in it. What was removed, as paths under `dir`.
fn remove_variant_folder(dir: &Path, name: &str) -> Result<Vec<String>> {
    Ok(bundle::remove(&dir.join(name))?
        .into_iter()
        .map(|f| format!("{name}/{f}"))
        .collect())
}

/// Says on standard error which files of an earlier run were removed from `dir`.
fn note_removed(dir: &Path, removed: &[String]) {
    if !removed.is_empty() {
        noteln!(
            "removed what an earlier run wrote to {} and this one did not: {}",
            dir.display(),
            removed.join(", ")
        );
    }
}

/// `--config FILE` as an absolute path (a scenario's own file paths are relative to the
/// scenario; this one to where the command runs).
pub(crate) fn absolute_config(config: Option<&Path>) -> Result<Option<String>> {
    config
        .map(|p| {
            Ok(std::fs::canonicalize(p)
                .with_context(|| format!("--config {}", p.display()))?
                .display()
                .to_string())
        })
        .transpose()
}

/// `--config FILE` or `--preset NAME` in place of a scenario table's switch base (its
/// other switch keys stay laid over it).
pub(crate) fn replace_switch(
    table: &mut toml::Table,
    config: Option<&str>,
    preset: Option<Preset>,
) {
    if config.is_none() && preset.is_none() {
        return;
    }
    let switch = table
        .entry("switch")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let Some(switch) = switch.as_table_mut() {
        switch.remove("preset");
        switch.remove("file");
        match (config, preset) {
            (Some(path), _) => switch.insert("file".into(), path.into()),
            (None, Some(p)) => switch.insert("preset".into(), p.name().into()),
            (None, None) => None,
        };
    }
}

/// A variant's name as a folder name: lower case, runs of anything but letters and
/// digits as one '-'.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    if out.is_empty() {
        "variant".to_owned()
    } else {
        out.to_owned()
    }
}

/// Says after the scenario's description, and each variant's, what `--set` changed: the
/// description is the scenario file's, and a 4096-host run of the built-in web-search
/// would otherwise read "128-host" alone in its header and report. The seed has a place
/// of its own in the header, and a new description is the user's own.
fn name_changes(scenario: &mut Scenario, sets: &[String]) {
    let changed: Vec<&str> = sets
        .iter()
        .map(String::as_str)
        .filter(|a| {
            let key = a.split('=').next().unwrap_or_default().trim();
            key != "description" && key != "seed"
        })
        .collect();
    if changed.is_empty() {
        return;
    }
    let with = format!("; with {}", changed.join(", "));
    scenario.description.push_str(&with);
    for v in &mut scenario.variants {
        v.description.push_str(&with);
    }
}

/// Runs one scenario (or one variant), prints its tables and writes its report folder.
fn run_one(
    scenario: &Scenario,
    out: Option<&Path>,
    counters: Counters,
    plots_from: rocelab::time::Nanos,
) -> Result<Summary> {
    say!("{}", report::header(scenario));
    let wall = std::time::Instant::now();
    let ranks = scenario.allreduce.as_ref().map_or(0, |p| p.ranks.len());
    if ranks > 0 {
        // nccl-tests' header now, each size's row as it finishes.
        sayln!();
        say!("{}", report::allreduce_head(ranks));
    }
    let mut progress = SimProgress::new();
    let outcome = rocelab::sim::run::run_with(scenario, &mut progress);
    progress.clear();
    let outcome = outcome?;
    let elapsed = wall.elapsed().as_secs_f64();
    let end = outcome.net.engine.now();
    if let Some(plan) = &scenario.allreduce {
        let results: Vec<_> = outcome.allreduce.iter().map(|r| r.result).collect();
        say!("{}", rocelab::report::nccl::foot(&results));
        sayln!(
            "\nthe {} B all-reduce in detail ({} of virtual time):",
            plan.series_bytes,
            end.human()
        );
    } else {
        sayln!();
        sayln!("ran {} of virtual time", end.human());
    }
    if !outcome.qps.is_empty() {
        say!(
            "{}",
            report::qp_table(&outcome.qps, outcome.measured_from, end)
        );
    }
    let fct = report::fct_table(scenario, &outcome);
    if !fct.is_empty() {
        sayln!();
        say!("{fct}");
    }
    say!("{}", report::switch_tables(&outcome, counters.style()));
    if let Some(b) = rocelab::sim::balance::report(scenario, &outcome) {
        say!("{}", rocelab::sim::balance::text(&b));
    }
    sayln!();
    say!("{}", report::what_happened(scenario, &outcome));
    // Wall-clock figures vary from run to run: stderr, so stdout repeats exactly.
    let engine = &outcome.net.engine;
    let threads = match engine.threads() {
        1 => String::new(),
        n => format!(" on {n} threads"),
    };
    noteln!(
        "simulated {} frames in {elapsed:.2} s of wall time{threads} ({:.2} M frames/s)",
        outcome.frames,
        outcome.frames as f64 / elapsed.max(1e-9) / 1e6
    );
    if let Some(why) = engine.fewer_threads() {
        noteln!(
            "ran on {} thread{} of the {} asked for: {why}",
            engine.threads(),
            if engine.threads() == 1 { "" } else { "s" },
            scenario.threads
        );
    }
    if let Some(dir) = out {
        let json = report::json(scenario, &outcome);
        let mut title = match &scenario.variant {
            Some(v) => format!("{} ({v})", scenario.name),
            None => scenario.name.clone(),
        };
        if let Some(plan) = &scenario.allreduce {
            title += &format!(
                ", the {} all-reduce",
                rocelab::bytes::human(plan.series_bytes)
            );
        }
        let marks = rocelab::report::plot::ecn_thresholds(&scenario.switch);
        // The run may end before its duration (an all-reduce, sized flows): a window that
        // starts after its last sample but one would draw empty plots.
        let times = &outcome.series.times;
        let plots_from = if plots_from > rocelab::time::Nanos::ZERO
            && times.len() - times.partition_point(|&t| t < plots_from) < 2
        {
            noteln!(
                "--plots-from-ms {}: the run's time series ends at {}, before it; the plots show the whole run",
                plots_from.0 as f64 / 1e6,
                times.last().copied().unwrap_or_default().human()
            );
            rocelab::time::Nanos::ZERO
        } else {
            plots_from
        };
        let removed = bundle::write(
            dir,
            &json,
            &outcome.series,
            &title,
            &marks,
            &outcome.flows,
            plots_from,
        )
        .with_context(|| format!("writing the report to {}", dir.display()))?;
        note_removed(
            dir,
            &removed.iter().map(|&f| f.to_owned()).collect::<Vec<_>>(),
        );
        sayln!(
            "\nwrote series.csv, queues.svg, rates.svg, pauses.svg, pgs.svg{} and report.json to {}",
            if outcome.flows.is_empty() {
                ""
            } else {
                ", fct.svg"
            },
            dir.display()
        );
    }
    Ok(summary(scenario, &outcome))
}

/// The run's progress: on a terminal, a line on standard error once a second with the
/// virtual time reached, the wall time and an estimate of what is left; and the
/// all-reduce rows on standard output as each size finishes, as nccl-tests prints them.
struct SimProgress {
    terminal: bool,
    started: std::time::Instant,
    last: std::time::Instant,
    shown: bool,
}

impl SimProgress {
    fn new() -> SimProgress {
        use std::io::IsTerminal as _;
        let now = std::time::Instant::now();
        SimProgress {
            terminal: std::io::stderr().is_terminal(),
            started: now,
            last: now,
            shown: false,
        }
    }

    /// Erases the progress line, if one is shown.
    fn clear(&mut self) {
        if self.shown {
            note!("\r\x1b[K");
            self.shown = false;
        }
    }
}

impl rocelab::sim::run::Progress for SimProgress {
    fn at(
        &mut self,
        now: rocelab::time::Nanos,
        end: rocelab::time::Nanos,
        part: usize,
        parts: usize,
    ) {
        if !self.terminal || self.last.elapsed() < std::time::Duration::from_secs(1) {
            return;
        }
        self.last = std::time::Instant::now();
        let wall = self.started.elapsed().as_secs_f64();
        let done = (part as f64 + now.0 as f64 / end.0.max(1) as f64) / parts.max(1) as f64;
        let left = if done > 0.0 {
            format!(", about {:.0} s left", wall * (1.0 - done) / done)
        } else {
            String::new()
        };
        let of = if parts > 1 {
            format!(" (size {} of {parts})", part + 1)
        } else {
            String::new()
        };
        note!(
            "\r\x1b[Ksim: {} of virtual time{of}, {wall:.0} s of wall time{left}",
            now.human()
        );
        self.shown = true;
    }

    fn size_done(&mut self, row: &rocelab::sim::run::AllReduceRow) {
        self.clear();
        say!("{}", report::allreduce_row(row));
    }
}

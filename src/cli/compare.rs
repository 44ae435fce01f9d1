//! `rocelab compare`: one scenario on several fabrics, side by side.

use super::JsonReport;
use anyhow::{Context, Result};
use rocelab::sim::compare::{Measured, Setting, measure};
use rocelab::sim::scenario::Scenario;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Run one scenario on several fabrics: RoCEv2 with PFC, ECN and DCQCN, RoCEv2 with PFC
/// alone, and InfiniBand with credit-based flow control. Prints them side by side:
/// goodput per flow and in total, a victim flow against its fair share, FCT slowdowns,
/// the all-reduce, the buffer each needed to stay lossless, and time paused by PFC
/// against time stalled for credit.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// A scenario file (TOML) or a built-in scenario (`rocelab sim --list` marks the
    /// ones meant for comparison). Its [[variant]]s are left out: the fabrics take their
    /// place.
    #[arg(value_name = "SCENARIO")]
    scenario: String,
    /// The fabrics, in order: roce (PFC + ECN + DCQCN), roce-pfc (PFC alone), irn (no PFC:
    /// selective repeat with a BDP cap, ECN + DCQCN), ib (credits), ib-cc (credits +
    /// InfiniBand congestion control).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "roce,roce-pfc,ib",
        value_parser = Setting::parse
    )]
    fabrics: Vec<Setting>,
    /// Switch configuration file (TOML) for every switch, instead of the scenario's base.
    #[arg(long, conflicts_with = "preset")]
    config: Option<PathBuf>,
    /// Built-in switch configuration for every switch, instead of the scenario's base.
    #[arg(long, value_enum)]
    preset: Option<super::Preset>,
    /// Change one key of the scenario for every fabric, as `sim --set`:
    /// `--set ib.buffer_per_vl_bytes=32K`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Seed of every run's random draws, the workloads' flows included (default: the
    /// scenario's): the same as `--set seed=N`. 0 to 9223372036854775807.
    #[arg(long, value_parser = clap::value_parser!(u64).range(..=rocelab::sim::scenario::MAX_SEED))]
    seed: Option<u64>,
    /// Runs at once (default: one per core), 1 or more.
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    jobs: Option<usize>,
    /// Write the comparison as JSON here (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write compare.json and one SVG per metric (goodput, victim, fct, busbw, steps,
    /// buffer, stalls) here.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let report = JsonReport::create(args.json.as_deref(), &[] as &[&Path])?;
    let mut settings = Vec::new();
    for &s in &args.fabrics {
        if settings.contains(&s) {
            anyhow::bail!("--fabrics: {} is given twice", s.name());
        }
        settings.push(s);
    }
    if settings.is_empty() {
        anyhow::bail!("--fabrics: give at least one");
    }
    if let Some(dir) = &args.out {
        rocelab::output::check_folder(dir)?;
    }
    // Every fabric's scenario, checked before anything runs.
    let config = super::sim::absolute_config(args.config.as_deref())?;
    let mut scenarios = Vec::with_capacity(settings.len());
    for &setting in &settings {
        let s = Scenario::load_edited(&args.scenario, |table| {
            super::sim::replace_switch(table, config.as_deref(), args.preset);
            for assignment in &args.set {
                rocelab::config::set_key(table, assignment)?;
            }
            setting.apply(table);
            if let Some(seed) = args.seed {
                rocelab::sim::scenario::set_seed(table, seed)?;
            }
            Ok(())
        })
        .with_context(|| format!("{} on {}", args.scenario, setting.name()))?;
        scenarios.push((setting, s));
    }
    let first = &scenarios[0].1;
    say!(
        "{}",
        rocelab::report::sim::header(first)
            .lines()
            .next()
            .unwrap_or_default()
    );
    sayln!();
    for (setting, s) in &scenarios {
        sayln!(
            "{:<20} {}",
            setting.label(),
            rocelab::sim::compare::describe(*setting, s)
        );
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let rows = run_all(&scenarios, jobs)?;
    sayln!();
    say!("{}", rocelab::report::compare::table(&rows));
    let json = rocelab::report::document(
        "compare",
        serde_json::json!({
            "scenario": first.name,
            "description": first.description,
            "fabrics": rows,
        }),
    );
    if let Some(dir) = &args.out {
        let svgs = rocelab::report::compare::svgs(&first.name, &rows)?;
        rocelab::output::make_folder(dir)?;
        let text = serde_json::to_string_pretty(&json)? + "\n";
        rocelab::output::write_whole(&dir.join("compare.json"), text.as_bytes())?;
        for (name, svg) in &svgs {
            rocelab::output::write_whole(&dir.join(name), svg.as_bytes())?;
        }
        // An earlier comparison's plots of metrics this scenario does not have.
        let stale: Vec<&str> = rocelab::report::compare::SVG_FILES
            .into_iter()
            .filter(|f| !svgs.iter().any(|(n, _)| n == f))
            .collect();
        let removed = rocelab::output::remove_stale(dir, &stale)?;
        if !removed.is_empty() {
            noteln!(
                "removed what an earlier run wrote to {} and this one did not: {}",
                dir.display(),
                removed.join(", ")
            );
        }
        sayln!(
            "\nwrote compare.json and {} to {}",
            svgs.iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            dir.display()
        );
    }
    report.write(&json)
}

/// Runs every fabric's scenario, `jobs` at once; the rows in the given order.
fn run_all(scenarios: &[(Setting, Scenario)], jobs: usize) -> Result<Vec<Measured>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<Option<Result<Measured>>>> =
        std::sync::Mutex::new(scenarios.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(scenarios.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((setting, s)) = scenarios.get(i) else {
                        break;
                    };
                    let started = Instant::now();
                    let result = rocelab::sim::run::run(s)
                        .map(|o| measure(*setting, s, &o))
                        .with_context(|| format!("{} on {}", s.name, setting.name()));
                    if let Ok(m) = &result {
                        sayln!(
                            "{:<20} done in {:.1} s of wall time ({} frames simulated)",
                            setting.label(),
                            started.elapsed().as_secs_f64(),
                            m.frames
                        );
                    }
                    if let Ok(mut r) = results.lock() {
                        r[i] = Some(result);
                    }
                }
            });
        }
    });
    results
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a run panicked"))?
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(anyhow::anyhow!("a run did not report"))))
        .collect()
}

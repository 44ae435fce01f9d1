//! `rocelab compare`: one scenario on several fabrics, side by side.

use super::JsonReport;
use anyhow::{Context, Result};
use rocelab::config::cc::PRESET_NAMES;
use rocelab::sim::compare::{Measured, Setting, apply_cc, apply_load_balancing, measure};
use rocelab::sim::scenario::LoadBalancing;
use rocelab::sim::scenario::Scenario;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Run one scenario on several fabrics: RoCEv2 with PFC, ECN and DCQCN, RoCEv2 with PFC
/// alone, IRN, iWARP, and InfiniBand with credit-based flow control. Prints them side by side:
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
    /// selective repeat with a BDP cap, ECN + DCQCN), iwarp (RDMA over TCP with DCTCP, no
    /// PFC), ib (credits), ib-cc (credits +
    /// InfiniBand congestion control).
    /// Default: roce,roce-pfc,ib; with --lb or --cc, the scenario's own fabric and transport.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = Setting::parse)]
    fabrics: Option<Vec<Setting>>,
    /// Load-balancing modes of a leaf-spine's leaves, a column each (with --fabrics, each
    /// fabric with each mode): ecmp, flowlet, per-packet, adaptive. Other keys of the
    /// modes (topology.flowlet_gap_us, ecmp_seed, spraying) come from the scenario or
    /// --set.
    #[arg(long = "lb", value_name = "LIST", value_delimiter = ',', value_parser = parse_lb)]
    lb: Option<Vec<&'static str>>,
    /// Congestion controls, a column each (with --fabrics or --lb, each with each), as
    /// endpoint presets: dcqcn, dcqcn_paper, dcqcn_vwin, dcqcn_paper_vwin, hpcc,
    /// hpcc_fixed_win, timely, timely_vwin, dctcp, swift, connectx, default. The switch's
    /// marking is the scenario's (DCTCP's step marking: --set
    /// switch.queue.3.ecn.kmin_bytes=..., kmax_bytes=..., pmax=1).
    #[arg(long = "cc", value_name = "LIST", value_delimiter = ',', value_parser = parse_cc)]
    cc: Option<Vec<&'static str>>,
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

/// A load-balancing mode's name, checked.
fn parse_lb(name: &str) -> Result<&'static str, String> {
    LoadBalancing::NAMES
        .into_iter()
        .find(|n| *n == name.trim())
        .ok_or_else(|| {
            format!(
                "'{name}' is not a load-balancing mode: give {}",
                LoadBalancing::NAMES.join(", ")
            )
        })
}

/// An endpoint preset's name, checked.
fn parse_cc(name: &str) -> Result<&'static str, String> {
    PRESET_NAMES
        .into_iter()
        .find(|n| *n == name.trim())
        .ok_or_else(|| {
            format!(
                "'{name}' is not a congestion-control preset: give {}",
                PRESET_NAMES.join(", ")
            )
        })
}

/// One column: a fabric setting, a load-balancing mode and a congestion control, each
/// `None` where the scenario's own runs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Column {
    fabric: Option<Setting>,
    lb: Option<&'static str>,
    cc: Option<&'static str>,
}

/// The values of one axis (`flag`), each once; `[None]` (the scenario's own) without it.
fn axis<T: Copy + PartialEq>(
    flag: &str,
    given: Option<&[T]>,
    name: impl Fn(T) -> String,
) -> Result<Vec<Option<T>>> {
    let Some(values) = given else {
        return Ok(vec![None]);
    };
    if values.is_empty() {
        anyhow::bail!("{flag}: give at least one");
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            anyhow::bail!("{flag}: {} is given twice", name(*v));
        }
    }
    Ok(values.iter().copied().map(Some).collect())
}

/// The columns `--fabrics`, `--lb` and `--cc` ask for: every combination, each once.
/// Without any of them, three fabrics: roce, roce-pfc and ib.
fn columns(args: &Args) -> Result<Vec<Column>> {
    let fabrics = match (&args.fabrics, &args.lb, &args.cc) {
        (None, None, None) => vec![
            Some(Setting::Roce),
            Some(Setting::RocePfc),
            Some(Setting::Ib),
        ],
        (f, _, _) => axis("--fabrics", f.as_deref(), |s: Setting| s.name().to_owned())?,
    };
    let modes = axis("--lb", args.lb.as_deref(), str::to_owned)?;
    let ccs = axis("--cc", args.cc.as_deref(), str::to_owned)?;
    let mut columns = Vec::new();
    for &fabric in &fabrics {
        for &lb in &modes {
            for &cc in &ccs {
                columns.push(Column { fabric, lb, cc });
            }
        }
    }
    Ok(columns)
}

/// A column's heading: a fabric alone by its label; otherwise what the column sets,
/// joined by " / " (a load-balancing mode on the scenario's fabric with its transport).
fn label(column: Column, s: &Scenario) -> String {
    let Column { fabric, lb, cc } = column;
    if let (Some(f), None, None) = (fabric, lb, cc) {
        return f.label().to_owned();
    }
    let mut parts: Vec<String> = Vec::new();
    if let Some(f) = fabric {
        parts.push(f.name().to_owned());
    }
    match (fabric, lb) {
        (Some(_), Some(m)) => parts.push(m.to_owned()),
        (None, Some(m)) => {
            let transport = match s.endpoint.transport {
                rocelab::config::endpoint::Transport::GoBackN => "go-back-n",
                rocelab::config::endpoint::Transport::SelectiveRepeat => "selective-repeat",
            };
            parts.push(format!("{m} / {transport}"));
        }
        (_, None) => {}
    }
    if let Some(c) = cc {
        parts.push(c.to_owned());
    }
    parts.join(" / ")
}

pub(crate) fn run(args: Args) -> Result<()> {
    let report = JsonReport::create(args.json.as_deref(), &[] as &[&Path])?;
    let columns = columns(&args)?;
    if let Some(dir) = &args.out {
        rocelab::output::check_folder(dir)?;
    }
    // Every fabric's scenario, checked before anything runs.
    let config = super::sim::absolute_config(args.config.as_deref())?;
    let mut scenarios = Vec::with_capacity(columns.len());
    for &column in &columns {
        let Column {
            fabric: setting,
            lb: mode,
            cc,
        } = column;
        let s = Scenario::load_edited(&args.scenario, |table| {
            super::sim::replace_switch(table, config.as_deref(), args.preset);
            for assignment in &args.set {
                rocelab::config::set_key(table, assignment)?;
            }
            if let Some(setting) = setting {
                setting.apply(table);
            }
            if let Some(mode) = mode {
                apply_load_balancing(table, mode);
            }
            if let Some(cc) = cc {
                apply_cc(table, cc);
            }
            if let Some(seed) = args.seed {
                rocelab::sim::scenario::set_seed(table, seed)?;
            }
            Ok(())
        })
        .with_context(|| {
            let what = [setting.map(Setting::name), mode, cc].into_iter().flatten();
            format!(
                "{} on {}",
                args.scenario,
                what.collect::<Vec<_>>().join(" with ")
            )
        })?;
        // Measured as the fabric the scenario runs when no setting replaces it.
        let measured_as = setting.unwrap_or(match s.fabric {
            rocelab::sim::fabric::Fabric::Roce => Setting::Roce,
            rocelab::sim::fabric::Fabric::Ib(_) => Setting::Ib,
            rocelab::sim::fabric::Fabric::Iwarp(_) => Setting::Iwarp,
        });
        let heading = label(column, &s);
        scenarios.push((measured_as, heading, s));
    }
    let first = &scenarios[0].2;
    say!(
        "{}",
        rocelab::report::sim::header(first)
            .lines()
            .next()
            .unwrap_or_default()
    );
    sayln!();
    for (setting, heading, s) in &scenarios {
        let lb = s
            .describe_load_balancing()
            .map_or_else(String::new, |l| format!("; load balancing {l}"));
        sayln!(
            "{heading:<20} {}{lb}",
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

/// Runs every column's scenario, `jobs` at once; the rows in the given order.
fn run_all(scenarios: &[(Setting, String, Scenario)], jobs: usize) -> Result<Vec<Measured>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<Option<Result<Measured>>>> =
        std::sync::Mutex::new(scenarios.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(scenarios.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((setting, heading, s)) = scenarios.get(i) else {
                        break;
                    };
                    let started = Instant::now();
                    let result = rocelab::sim::run::run(s)
                        .map(|o| {
                            let mut m = measure(*setting, s, &o);
                            m.label.clone_from(heading);
                            m
                        })
                        .with_context(|| format!("{} on {heading}", s.name));
                    if let Ok(m) = &result {
                        sayln!(
                            "{:<20} done in {:.1} s of wall time ({} frames simulated)",
                            heading,
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

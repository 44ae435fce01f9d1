//! `rocelab tune`: from a switch's own configuration (SONiC CONFIG_DB, an NX-OS
//! running-config or rocelab TOML) and a scenario, a search over ECN, PFC and DCQCN
//! settings within their legal values for better figures on several seeds, with a report
//! and the recommendation exported back in the input's syntax.

mod budget;
mod journal;
mod plan;

use anyhow::{Context, Result};
use budget::Budget;
use journal::Journal;
use rocelab::config::SwitchConfig;
use rocelab::config::export::{self, SwitchChanges};
use rocelab::sim::fct::Bucket;
use rocelab::sim::scenario::{MAX_SEED, Scenario, set_seed};
use rocelab::sim::tune::knobs::{Dialect, Knob, default_knobs, knobs};
use rocelab::sim::tune::objective::{Aggregate, Objective, RunFigures, figures, score, violation};
use rocelab::sim::tune::search::{Evaluator, Found, RunResult, Settings, Trial, search};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Search a switch's ECN and PFC settings and the NICs' DCQCN settings, within their legal
/// values on the switch's granularity, for the best objective over several seeds of a
/// scenario (its topology and workload; the switch is yours), and write the report and
/// the recommendation in the input's own syntax into --out DIR. docs/tuning.md says how it
/// searches and how far to trust it.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// A scenario file (TOML) or a built-in scenario (`rocelab sim --list`): the topology
    /// and workload to tune for; its switch settings give way to --from.
    #[arg(value_name = "SCENARIO")]
    scenario: String,
    /// The starting configuration: `sonic:CONFIG_DB.json`, `nxos:RUNNING-CONFIG` or a
    /// rocelab FILE.toml.
    #[arg(long, value_name = "SOURCE")]
    from: String,
    /// Write the report and the exports here (a new or empty folder, or one of an earlier
    /// tune).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// What to make better.
    #[arg(long, value_enum, default_value = "fct-p99")]
    objective: Objective,
    /// How a point's seeds make its score: the mean, or the worst seed.
    #[arg(long, value_enum, default_value = "mean")]
    aggregate: Aggregate,
    /// The knobs to search, comma-separated: ecn.kmin, ecn.kmax, ecn.pmax, pfc.alpha,
    /// pfc.xon_offset, pfc.headroom, rpg_ai_rate, rpg_hai_rate, rpg_time_reset,
    /// min_time_between_cnps (default: the ECN ones, and pfc.alpha except from NX-OS, which
    /// has no PFC knob).
    #[arg(long, value_name = "K1,K2,...", value_delimiter = ',')]
    knobs: Vec<String>,
    /// The most simulation runs the search makes, the starting configuration's included
    /// (1 to 100000), or the wall time after which it starts no new run: `90s`, `20m`,
    /// `1h` (the answer then depends on the machine's speed). The check on --check-seeds
    /// comes on top.
    #[arg(long, value_name = "RUNS|TIME", default_value = "60", value_parser = budget::parse)]
    budget: Budget,
    /// Seeds every finalist runs on (SEED, SEED + 1, ...), 1 to 20.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=20))]
    seeds: u64,
    /// The first seed (default: the scenario's).
    #[arg(long, value_parser = clap::value_parser!(u64).range(..=MAX_SEED))]
    seed: Option<u64>,
    /// Seeds the search never sees, after its own, on which the starting configuration and
    /// the recommendation are run once more, 0 to 20.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u64).range(0..=20))]
    check_seeds: u64,
    /// The seed of the search's own draws (the same seed, the same search).
    #[arg(long, value_name = "N", default_value_t = 1)]
    search_seed: u64,
    /// Runs at once (default: one per core), 1 or more.
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    jobs: Option<usize>,
    /// Change one key of the scenario (repeatable), as `sim --set`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Stop new arrivals at the scenario's duration_ms and run this many ms more, so flows
    /// in flight can finish before they are counted (0 to 1000; default none). A flow
    /// still unfinished then counts at its slowdown so far, as without a drain.
    #[arg(long, value_name = "MS", default_value_t = 0.0)]
    drain_ms: f64,
    /// Go on from the runs DIR/journal.jsonl holds (a tune into the same --out that was
    /// interrupted, or finished): they are replayed, not run again. The journal must have
    /// been made with the same scenario, --from, --set, --objective, --knobs and seeds.
    /// A plan in DIR/plan (--plan) is merged first, every run's result required.
    #[arg(long)]
    resume: bool,
    /// Make no run here: write the runs the search needs next (the start on every seed, a
    /// rung of a bracket, or the check) into DIR/plan, one `rocelab sim` command line each
    /// in DIR/plan/jobs.txt, for any machines to run; then --merge. Not with a time budget.
    #[arg(long)]
    plan: bool,
    /// Read the results of DIR/plan's runs into the journal (every run must have its
    /// result, made from its scenario.toml), then go on as --plan: the next plan, or the
    /// report once the search and the check are done. Give the arguments the plan was
    /// made with.
    #[arg(long)]
    merge: bool,
    /// Show the progress line (runs done of the total, best so far, time left) on standard
    /// error even when it is not a terminal: then a line every 5 s. On a terminal it is
    /// always shown, rewritten in place.
    #[arg(long)]
    progress: bool,
}

impl Args {
    /// Going on from the journal: --resume, or --merge.
    fn resuming(&self) -> bool {
        self.resume || self.merge
    }

    /// Runs planned for other machines, not made here.
    fn planning(&self) -> bool {
        self.plan || self.merge
    }
}

/// The starting configuration as read.
struct Start {
    dialect: Dialect,
    /// The input's text (exported with the changes).
    text: String,
    /// rocelab TOML of it.
    toml: String,
    config: SwitchConfig,
}

/// Reads `--from`.
fn read_from(spec: &str) -> Result<Start> {
    let (dialect, path) = match spec.split_once(':') {
        Some(("sonic", p)) => (Dialect::Sonic, p),
        Some(("nxos", p)) => (Dialect::Nxos, p),
        Some(("toml", p)) => (Dialect::Toml, p),
        _ if spec.ends_with(".toml") => (Dialect::Toml, spec),
        _ => anyhow::bail!(
            "--from {spec}: give sonic:CONFIG_DB.json, nxos:RUNNING-CONFIG or a rocelab FILE.toml"
        ),
    };
    let text =
        rocelab::config::read_text(Path::new(path)).with_context(|| format!("--from {spec}"))?;
    let (toml, config) = match dialect {
        Dialect::Sonic | Dialect::Nxos => {
            let imported = if dialect == Dialect::Sonic {
                rocelab::config::import::sonic::import(&text, path)
            } else {
                rocelab::config::import::nxos::import(&text, path)
            }
            .with_context(|| format!("--from {spec}"))?;
            for w in &imported.warnings {
                noteln!("tune: import warning: {}: {}", w.source, w.message);
            }
            (imported.toml, imported.config)
        }
        Dialect::Toml => {
            let config = SwitchConfig::from_toml(&text)
                .map_err(|e| anyhow::anyhow!("--from {spec}: {e}"))?;
            (text.clone(), config)
        }
    };
    Ok(Start {
        dialect,
        text,
        toml,
        config,
    })
}

/// A number of a TOML table, integer or float.
fn number(t: &toml::Table, key: &str) -> Option<f64> {
    t.get(key)
        .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
}

/// `--drain-ms`: every workload that would make arrivals until the run's end (a poisson
/// or incast-bursts entry without duration_us or bursts) stops at the scenario's
/// duration_ms, as before, and the run goes on `ms` more. The arrivals are the same
/// draws as without a drain.
fn drain(base: &mut toml::Table, ms: f64) -> Result<()> {
    if !(ms.is_finite() && (0.0..=1000.0).contains(&ms)) {
        anyhow::bail!("--drain-ms {ms}: give 0 to 1000");
    }
    if ms == 0.0 {
        return Ok(());
    }
    let Some(end_ms) = number(base, "duration_ms") else {
        anyhow::bail!(
            "--drain-ms: the scenario gives no duration_ms, so there is no end of arrivals to drain after"
        );
    };
    if let Some(toml::Value::Array(entries)) = base.get_mut("workload") {
        for w in entries.iter_mut().filter_map(toml::Value::as_table_mut) {
            let endless = match w.get("kind").and_then(toml::Value::as_str) {
                Some("poisson") => !w.contains_key("duration_us"),
                Some("incast-bursts") => {
                    !w.contains_key("duration_us") && !w.contains_key("bursts")
                }
                _ => false,
            };
            let span_us = end_ms * 1000.0 - number(w, "start_us").unwrap_or(0.0);
            if endless && span_us > 0.0 {
                w.insert("duration_us".into(), toml::Value::Float(span_us));
            }
        }
    }
    base.insert("duration_ms".into(), toml::Value::Float(end_ms + ms));
    Ok(())
}

/// What a tune runs: the scenario with the user's switch, the knobs and the seeds.
struct Plan {
    base: toml::Table,
    dir: Option<PathBuf>,
    names: Vec<String>,
    knobs: Vec<Knob>,
    settings: Settings,
    check: Vec<u64>,
    jobs: usize,
}

/// Reads the scenario, puts the user's switch (written to DIR/start.toml) in it, and
/// checks the knobs and seeds.
fn plan(args: &Args, start: &Start) -> Result<Plan> {
    let (mut base, dir) = super::sweep::scenario_table(&args.scenario)?;
    rocelab::sim::scenario::pfc_flag_as_table(&mut base);
    if base.contains_key("variant") {
        anyhow::bail!("{}: tune runs scenarios without [[variant]]", args.scenario);
    }
    base.remove("sweep");
    rocelab::output::make_folder(&args.out)?;
    let start_file = args.out.join("start.toml");
    rocelab::output::write_whole(&start_file, start.toml.as_bytes())?;
    let start_path = std::fs::canonicalize(&start_file)?.display().to_string();
    // The switch is the user's: the scenario's own switch settings give way to it whole.
    let mut switch = toml::Table::new();
    switch.insert("file".into(), start_path.into());
    base.insert("switch".into(), toml::Value::Table(switch));
    for s in &args.set {
        rocelab::config::set_key(&mut base, s)?;
    }
    drain(&mut base, args.drain_ms)?;
    let first = match args.seed {
        Some(s) => s,
        None => rocelab::sim::scenario::table_seed(&base),
    };
    let total = args.seeds + args.check_seeds;
    if first.checked_add(total).is_none_or(|last| last > MAX_SEED) {
        anyhow::bail!("seeds {first} to {first} + {total} run past the largest seed, {MAX_SEED}");
    }
    let scenario = resolve(&args.scenario, &base, dir.as_deref())?;
    match_dscp(&mut base, &scenario)?;
    let scenario = resolve(&args.scenario, &base, dir.as_deref())?;
    let names: Vec<String> = if args.knobs.is_empty() {
        default_knobs(start.dialect)
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    } else {
        args.knobs.iter().map(|k| k.trim().to_owned()).collect()
    };
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let knobs = knobs(
        &refs,
        &start.config,
        &scenario.endpoint.dcqcn,
        start.dialect,
    )?;
    let settings = Settings {
        objective: args.objective,
        aggregate: args.aggregate,
        seeds: (first..first + args.seeds).collect(),
        budget_runs: args.budget.runs(),
        search_seed: args.search_seed,
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    Ok(Plan {
        base,
        dir,
        names,
        knobs,
        settings,
        check: (first + args.seeds..first + total).collect(),
        jobs,
    })
}

impl Plan {
    /// What the journal's runs are a function of: a resume must match it.
    fn made_with(&self, start: &Start) -> serde_json::Value {
        let mut scenario = self.base.clone();
        // The switch is DIR/start.toml by its path; its content is `start`.
        scenario.remove("switch");
        serde_json::json!({
            "scenario": toml::to_string(&scenario).unwrap_or_default(),
            "start": start.toml,
            "objective": self.settings.objective,
            "knobs": self.knobs.iter().map(|k| serde_json::json!({
                "name": k.name, "keys": k.keys, "values": k.values,
            })).collect::<Vec<_>>(),
            "seeds": self.settings.seeds,
            "check_seeds": self.check,
        })
    }
}

/// SIGINT and SIGTERM stop the search cleanly: the runs in flight are abandoned, no new one
/// starts, and the best point so far is written. The number of the signal that came is
/// kept (0 until one does). A second signal ends the process at once (exit 128 + its
/// number), as a second Ctrl-C is expected to. signal-hook, already what the live runtime
/// uses for the same two signals, registers these as flag stores, the only thing a signal
/// handler may safely do.
fn stop_on_signals() -> Result<Arc<AtomicUsize>> {
    let signal = Arc::new(AtomicUsize::new(0));
    let once = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Actions run in the order registered: the exit looks at the flag before it is set.
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&once))
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&once)))
            .and_then(|_| signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize))
            .context("installing the SIGINT and SIGTERM handlers")?;
    }
    Ok(signal)
}

/// A signal's name for a message.
fn signal_name(sig: usize) -> &'static str {
    match i32::try_from(sig) {
        Ok(signal_hook::consts::SIGINT) => "SIGINT",
        Ok(signal_hook::consts::SIGTERM) => "SIGTERM",
        _ => "a signal",
    }
}

/// Refuses early, before anything in DIR is written, a tune that would write over an
/// earlier one's journal, or a resume of another starting configuration's.
fn check_journal(args: &Args, start: &Start) -> Result<()> {
    let path = args.out.join(journal::FILE);
    // A journal without runs (a tune that failed before its first) keeps nothing.
    let there = path.exists();
    if there && !args.resuming() && runner_journal_len(&args.out) > 0 {
        anyhow::bail!(
            "{} holds the runs of an earlier tune: give --resume to go on from them, or another --out (or remove it)",
            path.display()
        );
    }
    if args.resuming() {
        if !there {
            anyhow::bail!(
                "--resume: {} does not exist; --resume goes on from the journal an earlier tune into the same --out wrote",
                path.display()
            );
        }
        let old = std::fs::read_to_string(args.out.join("start.toml")).unwrap_or_default();
        if old != start.toml {
            anyhow::bail!(
                "--resume: {} was made with another starting configuration (--from): resume with the arguments it was made with, or give another --out",
                path.display()
            );
        }
    }
    Ok(())
}

/// Runs `rocelab tune`.
pub(crate) fn run(args: Args) -> Result<()> {
    let start = read_from(&args.from)?;
    rocelab::output::check_folder(&args.out)?;
    if args.budget.time().is_some() && (args.plan || args.merge) {
        anyhow::bail!(
            "--budget {}: a time budget counts this machine's wall time, and with --plan or --merge the runs are made elsewhere: give a number of runs",
            args.budget.describe()
        );
    }
    check_journal(&args, &start)?;
    let signal = stop_on_signals()?;
    let plan = plan(&args, &start)?;
    let made_with = plan.made_with(&start);
    let made_with_digest = self::plan::made_with_digest(&made_with);
    let mut journal = if args.resuming() {
        Journal::resume(&args.out, &made_with)?
    } else {
        Journal::create(&args.out, &made_with)?
    };
    // A plan's results go into the journal before the search replays it.
    let held = if args.merge || (args.resume && self::plan::exists(&args.out)) {
        self::plan::merge(&args.out, &made_with_digest, args.objective, &mut journal)?
    } else {
        self::plan::Held::default()
    };
    noteln!(
        "tune: {} on {} seed{} of {}, knobs {}, a budget of {}, {}{}",
        args.objective.describe(),
        plan.settings.seeds.len(),
        if plan.settings.seeds.len() == 1 {
            ""
        } else {
            "s"
        },
        args.scenario,
        plan.names.join(", "),
        args.budget.describe(),
        if args.planning() {
            "runs planned, not made here".to_owned()
        } else {
            format!("{} at a time", plan.jobs)
        },
        if args.resuming() {
            format!(", {} runs from the journal", journal.len())
        } else {
            String::new()
        }
    );
    let mut runner = Runner {
        name: &args.scenario,
        dir: plan.dir.as_deref(),
        base: &plan.base,
        knobs: &plan.knobs,
        objective: args.objective,
        jobs: plan.jobs,
        progress: Progress::new(args.progress, args.budget, 2 * plan.check.len()),
        budget: args.budget,
        deadline: args.budget.time().map(|t| std::time::Instant::now() + t),
        signal: &signal,
        journal: Mutex::new(journal),
        journal_error: Mutex::new(None),
        replayed: 0,
        planning: args.planning(),
        wanted: Vec::new(),
    };
    let found = search(&plan.knobs, &plan.settings, &mut runner);
    runner.progress.end();
    let found = found?;
    runner.journal_failed()?;
    if !runner.wanted.is_empty() {
        return write_plan(&args, &plan, &runner, &made_with_digest, "the search");
    }
    finish(
        &args,
        &start,
        &plan,
        &mut runner,
        &found,
        &held,
        &made_with_digest,
    )
}

/// After the search: the check on seeds it never saw, fct.svg's runs, and the report.
fn finish(
    args: &Args,
    start: &Start,
    plan: &Plan,
    runner: &mut Runner<'_>,
    found: &Found,
    held: &self::plan::Held,
    made_with_digest: &str,
) -> Result<()> {
    let signal = runner.signal;
    // Stopped with neither a signal nor a journal error: the time budget was spent. That
    // is the search's end, not an interruption: the check still runs.
    let time_up = found.interrupted && signal.load(Ordering::Relaxed) == 0;
    runner.deadline = None;
    let check = &plan.check;
    let stopped = |at: &str, runs: usize| {
        let sig = signal_name(signal.load(Ordering::Relaxed));
        anyhow::anyhow!(
            "{sig} {at} after {runs} runs ({} in {}): `rocelab tune ... --resume` with the same arguments goes on from them",
            runner_journal_len(&args.out),
            args.out.join(journal::FILE).display()
        )
    };
    if !found.trials[0].ran_on(&plan.settings.seeds) && time_up {
        anyhow::bail!(
            "the time budget of {} ran out before the starting configuration had run on every seed ({} runs, in {}): give a larger --budget, and --resume to go on from them",
            args.budget.describe(),
            found.runs,
            args.out.join(journal::FILE).display()
        );
    }
    if !found.trials[0].ran_on(&plan.settings.seeds) {
        return Err(stopped(
            "before the starting configuration had run on every seed, so nothing is written but the journal,",
            found.runs,
        ));
    }
    // The check: the start and the recommendation on seeds the search never saw.
    let mut checked: Vec<RunFigures> = Vec::new();
    let ends = !found.interrupted || time_up;
    // fct.svg's seed: one the search never saw, else its first.
    let fct_seed = check.first().copied().unwrap_or(plan.settings.seeds[0]);
    let pair = [&found.trials[0].values, &found.trials[found.best].values];
    if ends {
        let batch: Vec<(Vec<f64>, u64)> = pair
            .iter()
            .flat_map(|v| check.iter().map(move |&s| ((*v).clone(), s)))
            .collect();
        let runs = runner.evaluate(&batch);
        runner.progress.end();
        runner.journal_failed()?;
        if runner.planning {
            // fct.svg's runs go with the check's (the same runs when there is a check).
            for v in pair {
                let run = (v.clone(), fct_seed);
                if held.buckets(v, fct_seed).is_none() && !runner.wanted.contains(&run) {
                    runner.wanted.push(run);
                }
            }
            if !runner.wanted.is_empty() {
                return write_plan(args, plan, runner, made_with_digest, "the check");
            }
        }
        if runs.iter().all(Option::is_some) {
            checked = runs
                .into_iter()
                .flatten()
                .collect::<Result<_, String>>()
                .map_err(|e| anyhow::anyhow!("the check on seeds {check:?}: {e}"))?;
        }
    }
    let interrupted = (found.interrupted && !time_up) || checked.len() != 2 * check.len();
    let check: &[u64] = if interrupted { &[] } else { check };
    let (check_start, check_best) = checked.split_at(check.len());
    // FCT by size for fct.svg: the start and the recommendation once more, with their
    // flows (from the plan's results when planned). Not after a signal: it asked to stop.
    let fct = if interrupted {
        None
    } else if runner.planning {
        match (
            held.buckets(pair[0], fct_seed),
            held.buckets(pair[1], fct_seed),
        ) {
            (Some(a), Some(b)) => Some((fct_seed, a, b)),
            _ => None,
        }
    } else {
        let (a, b) = std::thread::scope(|scope| {
            let a = scope.spawn(|| runner.buckets(pair[0], fct_seed));
            let b = runner.buckets(pair[1], fct_seed);
            (a.join(), b)
        });
        let a = a.map_err(|_| anyhow::anyhow!("the start's run for fct.svg panicked"))?;
        Some((fct_seed, a?, b?))
    };
    let report = Report {
        args,
        start,
        knobs: &plan.knobs,
        settings: &plan.settings,
        found,
        interrupted,
        time_up: time_up && !interrupted,
        check,
        check_start,
        check_best,
        fct,
    };
    report.write()?;
    if interrupted {
        return Err(stopped(
            "stopped the search; the best point so far is written as its outputs, marked interrupted,",
            found.runs,
        ));
    }
    Ok(())
}

/// Writes the runs the search or the check needs next as a plan in DIR/plan, and says
/// how to run and merge it.
fn write_plan(
    args: &Args,
    plan: &Plan,
    runner: &Runner<'_>,
    made_with_digest: &str,
    what: &str,
) -> Result<()> {
    let tables = runner
        .wanted
        .iter()
        .map(|(v, s)| run_table(&plan.base, &plan.knobs, v, *s).map_err(anyhow::Error::msg))
        .collect::<Result<Vec<_>>>()?;
    self::plan::write(
        &args.out,
        made_with_digest,
        plan.dir.as_deref(),
        &runner.wanted,
        tables,
    )?;
    let folder = args.out.join(self::plan::FOLDER);
    sayln!(
        "wrote the next {} runs of {what} ({} done) to {d}: run each line of {d}/jobs.txt from {d} (e.g. `cd {d} && parallel < jobs.txt`), on any machines, with the runs' result folders back in place; then the same `rocelab tune` command with --merge",
        runner.wanted.len(),
        lock(&runner.journal).len(),
        d = folder.display()
    );
    Ok(())
}

/// Runs the journal in `dir` holds, for a message (0 when it cannot be read).
fn runner_journal_len(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join(journal::FILE))
        .map_or(0, |t| t.lines().count().saturating_sub(1))
}

/// The scenario of `table`, checked.
fn resolve(name: &str, table: &toml::Table, dir: Option<&Path>) -> Result<Scenario> {
    let text = toml::to_string(table)?;
    Scenario::from_toml(name, &text, dir).map_err(|e| anyhow::anyhow!("{name}: {e}"))
}

/// When the NICs' DSCP lands in a lossy class of the imported switch (rocelab's NICs send
/// DSCP 26; SONiC's AZURE maps 3 and 4 to the lossless classes), the NICs send the first
/// DSCP the switch maps to a lossless class instead, on that PFC priority, as a fabric
/// built on that switch configuration does: tuning a lossless class no traffic uses would
/// tune nothing.
fn match_dscp(base: &mut toml::Table, scenario: &Scenario) -> Result<()> {
    let sw = &scenario.switch;
    let ep = &scenario.endpoint;
    let lossless = |d: u8| sw.lossless.contains(sw.dscp_to_tc[usize::from(d)]);
    if lossless(ep.dscp) || sw.lossless.0 == 0 {
        return Ok(());
    }
    let Some(d) = (0..64u8).find(|&d| lossless(d)) else {
        return Ok(());
    };
    let tc = sw.dscp_to_tc[usize::from(d)];
    let mut pairs: Vec<String> = ep
        .dscp_to_priority
        .iter()
        .filter(|[x, _]| *x != d)
        .map(|[x, p]| format!("[{x}, {p}]"))
        .collect();
    pairs.push(format!("[{d}, {tc}]"));
    rocelab::config::set_key(base, &format!("endpoint.dscp={d}"))?;
    rocelab::config::set_key(
        base,
        &format!("endpoint.dscp_to_priority=[{}]", pairs.join(", ")),
    )?;
    noteln!(
        "tune: the NICs' DSCP {} goes to lossy class {} of this switch: they send DSCP {d} (class {tc}, lossless) instead (--set endpoint.dscp=N to choose)",
        ep.dscp,
        sw.dscp_to_tc[usize::from(ep.dscp)]
    );
    Ok(())
}

/// Runs the scenario for the search, `jobs` runs at a time.
struct Runner<'a> {
    name: &'a str,
    dir: Option<&'a Path>,
    base: &'a toml::Table,
    knobs: &'a [Knob],
    objective: Objective,
    jobs: usize,
    progress: Progress,
    /// The signal that stopped the search, 0 until one comes.
    signal: &'a AtomicUsize,
    /// --budget, as given.
    budget: Budget,
    /// With a time budget, when no new run may start (runs in flight finish); none for
    /// the check.
    deadline: Option<std::time::Instant>,
    /// Finished runs, appended as they finish; those of an earlier tune are replayed.
    journal: Mutex<Journal>,
    /// Why the journal could not be written, if it could not: the search stops.
    journal_error: Mutex<Option<anyhow::Error>>,
    /// Runs replayed from the journal.
    replayed: usize,
    /// --plan or --merge: runs the journal lacks are wanted, not made.
    planning: bool,
    /// The runs wanted for a plan, in the order the search asked for them.
    wanted: Vec<(Vec<f64>, u64)>,
}

impl Runner<'_> {
    /// True once a signal came, the journal failed or the time budget is spent: no new
    /// run starts.
    fn stopped(&self) -> bool {
        self.signal.load(Ordering::Relaxed) != 0
            || lock(&self.journal_error).is_some()
            || self
                .deadline
                .is_some_and(|d| std::time::Instant::now() >= d)
    }

    /// The journal's error, if writing it failed.
    fn journal_failed(&self) -> Result<()> {
        match lock(&self.journal_error).take() {
            Some(e) => Err(e.context("the tune stopped: its journal could not be written")),
            None => Ok(()),
        }
    }

    /// One run at `values` and `seed`.
    fn run_one(&self, values: &[f64], seed: u64) -> Option<Result<RunFigures, String>> {
        match self.simulate(values, seed) {
            Ok(Some((scenario, outcome))) => Some(Ok(figures(self.objective, &scenario, &outcome))),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// The FCT slowdown per size bucket of a run at `values` and `seed`, for fct.svg.
    fn buckets(&self, values: &[f64], seed: u64) -> Result<Vec<rocelab::sim::fct::Bucket>> {
        let (_, outcome) = self
            .simulate(values, seed)
            .map_err(|e| anyhow::anyhow!("seed {seed}: {e}"))?
            .ok_or_else(|| anyhow::anyhow!("stopped by a signal"))?;
        Ok(rocelab::sim::fct::buckets(&outcome.flows))
    }

    /// The scenario at `values` and `seed`, and its run; `None` when a signal abandoned
    /// it (the simulator asks at every sample step, so a long run does not hold up the
    /// stop).
    fn simulate(
        &self,
        values: &[f64],
        seed: u64,
    ) -> Result<Option<(Scenario, rocelab::sim::run::Outcome)>, String> {
        let t = run_table(self.base, self.knobs, values, seed)?;
        let text = toml::to_string(&t).map_err(|e| e.to_string())?;
        let scenario =
            Scenario::from_toml(self.name, &text, self.dir).map_err(|e| e.to_string())?;
        match rocelab::sim::run::run_with(&scenario, &mut SignalStop(self.signal)) {
            Ok(outcome) => Ok(Some((scenario, outcome))),
            Err(rocelab::sim::run::RunError::Stopped) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The scenario of a run at `values` (one per knob of `knobs`) and `seed`.
fn run_table(
    base: &toml::Table,
    knobs: &[Knob],
    values: &[f64],
    seed: u64,
) -> Result<toml::Table, String> {
    let mut t = base.clone();
    for (k, &v) in knobs.iter().zip(values) {
        for key in &k.keys {
            rocelab::config::set_key(&mut t, &format!("{key}={}", k.toml_value(v)))
                .map_err(|e| e.to_string())?;
        }
    }
    set_seed(&mut t, seed).map_err(|e| e.to_string())?;
    Ok(t)
}

/// Ends a simulation run when a signal came.
struct SignalStop<'a>(&'a AtomicUsize);

impl rocelab::sim::run::Progress for SignalStop<'_> {
    fn stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed) != 0
    }
}

/// The value behind a lock, a panicked holder notwithstanding.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Evaluator for Runner<'_> {
    fn evaluate(&mut self, batch: &[(Vec<f64>, u64)]) -> Vec<RunResult> {
        let mut results: Vec<RunResult> = {
            let journal = lock(&self.journal);
            batch.iter().map(|(v, s)| journal.get(v, *s)).collect()
        };
        let todo: Vec<usize> = (0..batch.len()).filter(|&i| results[i].is_none()).collect();
        self.replayed += batch.len() - todo.len();
        self.progress.replayed(batch.len() - todo.len());
        if self.planning {
            // Not made here: the search stops at this batch and the plan holds its runs.
            self.wanted.extend(todo.iter().map(|&i| batch[i].clone()));
            return results;
        }
        let next = AtomicUsize::new(0);
        let made: Mutex<Vec<(usize, Result<RunFigures, String>)>> = Mutex::new(Vec::new());
        let this = &*self;
        std::thread::scope(|scope| {
            for _ in 0..self.jobs.clamp(1, todo.len().max(1)) {
                scope.spawn(|| {
                    while !this.stopped() {
                        let Some(&i) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        let (values, seed) = &batch[i];
                        // Abandoned on a signal: not journaled, left to a resume.
                        let Some(r) = this.run_one(values, *seed) else {
                            break;
                        };
                        if let Err(e) = lock(&this.journal).add(values, *seed, &r) {
                            lock(&this.journal_error).get_or_insert(e);
                            break;
                        }
                        lock(&made).push((i, r));
                        this.progress.ran();
                    }
                });
            }
        });
        for (i, r) in made
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            results[i] = Some(r);
        }
        results
    }

    fn progress(&mut self, runs: usize, _budget: usize, best: Option<f64>) {
        *lock(&self.progress.best) = best;
        if !self.progress.shown() {
            noteln!(
                "tune: {runs} {} runs, best score so far {}",
                match self.budget {
                    Budget::Runs(n) => format!("of at most {n}"),
                    Budget::Seconds(_) =>
                        format!("of a time budget of {},", self.budget.describe()),
                },
                best.map_or_else(|| "-".to_owned(), |b| format!("{:.3}", b.abs())),
            );
        }
    }
}

/// The progress line on standard error: runs done of the most there can be (the budget
/// and the check), the best score so far, time elapsed and left. Shown in place on a
/// terminal, or a line every 5 s with --progress; never on standard output, which holds
/// the table.
struct Progress {
    /// Rewrite one line in place.
    terminal: bool,
    /// A line now and then (--progress off a terminal).
    lines: bool,
    /// The most runs: the budget and the check's; none with a time budget.
    total: Option<usize>,
    /// With a time budget, when it is spent.
    deadline: Option<std::time::Instant>,
    /// Runs done: made here or replayed from the journal.
    done: AtomicUsize,
    /// Runs made here (the rate of those gives the time left).
    made: AtomicUsize,
    /// The best score so far.
    best: Mutex<Option<f64>>,
    started: std::time::Instant,
    last_line: Mutex<std::time::Instant>,
}

/// Off a terminal, a progress line at most this often.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

impl Progress {
    fn new(flag: bool, budget: Budget, check_runs: usize) -> Progress {
        use std::io::IsTerminal as _;
        let terminal = std::io::stderr().is_terminal();
        let started = std::time::Instant::now();
        Progress {
            terminal,
            lines: flag && !terminal,
            total: match budget {
                Budget::Runs(n) => Some(n + check_runs),
                Budget::Seconds(_) => None,
            },
            deadline: budget.time().map(|t| started + t),
            done: AtomicUsize::new(0),
            made: AtomicUsize::new(0),
            best: Mutex::new(None),
            started,
            last_line: Mutex::new(started),
        }
    }

    fn shown(&self) -> bool {
        self.terminal || self.lines
    }

    fn replayed(&self, runs: usize) {
        self.done.fetch_add(runs, Ordering::Relaxed);
    }

    /// One more run made here.
    fn ran(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let made = self.made.fetch_add(1, Ordering::Relaxed) + 1;
        if !self.shown() {
            return;
        }
        if self.lines {
            let mut last = lock(&self.last_line);
            if last.elapsed() < PROGRESS_EVERY {
                return;
            }
            *last = std::time::Instant::now();
        }
        let line = self.line(done, made);
        if self.terminal {
            // Back to the line's start and clear it: one line, rewritten.
            note!("\r{line}\x1b[K");
        } else {
            noteln!("{line}");
        }
    }

    /// The line after `done` runs, `made` of them here.
    fn line(&self, done: usize, made: usize) -> String {
        let secs = self.started.elapsed().as_secs_f64();
        let best = *lock(&self.best);
        let best = best.map_or_else(|| "-".to_owned(), |b| format!("{:.3}", b.abs()));
        match (self.total, self.deadline) {
            (Some(total), _) => {
                let left = secs / made.max(1) as f64 * total.saturating_sub(done) as f64;
                format!(
                    "tune: {done} of at most {total} runs, best so far {best}, {} elapsed, at most {} left",
                    clock(secs),
                    clock(left)
                )
            }
            (None, deadline) => {
                let left = deadline.map_or(0.0, |d| {
                    d.saturating_duration_since(std::time::Instant::now())
                        .as_secs_f64()
                });
                format!(
                    "tune: {done} runs, best so far {best}, {} elapsed, {} of the time budget left (then the check)",
                    clock(secs),
                    clock(left)
                )
            }
        }
    }

    /// Ends the line on a terminal, so what follows starts on its own; off a terminal,
    /// the last line.
    fn end(&self) {
        let (done, made) = (
            self.done.load(Ordering::Relaxed),
            self.made.load(Ordering::Relaxed),
        );
        if self.terminal && made > 0 {
            note!("\n");
        } else if self.lines {
            noteln!("{}", self.line(done, made));
        }
    }
}

/// Seconds as `1h02m`, `3m05s` or `42s`.
fn clock(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s / 60 % 60),
    }
}

/// What the tune found, to print and write.
struct Report<'a> {
    args: &'a Args,
    start: &'a Start,
    knobs: &'a [Knob],
    settings: &'a Settings,
    found: &'a Found,
    /// True when a signal stopped the tune: the best point so far, no check.
    interrupted: bool,
    /// True when the time budget was spent: the best point that ran on every seed by then,
    /// checked.
    time_up: bool,
    check: &'a [u64],
    check_start: &'a [RunFigures],
    check_best: &'a [RunFigures],
    /// The seed, and the start's and the recommendation's FCT slowdown per size bucket on
    /// it (none after a signal).
    fct: Option<(u64, Vec<Bucket>, Vec<Bucket>)>,
}

/// A figure of a run, or `-`.
fn figure(f: Option<f64>) -> String {
    f.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"))
}

/// The objective's values of `runs`.
fn values(runs: &[RunFigures]) -> Vec<Option<f64>> {
    runs.iter().map(|r| r.objective).collect()
}

/// Mean, lowest and highest of the values that exist.
fn spread(v: &[Option<f64>]) -> serde_json::Value {
    let v: Vec<f64> = v.iter().flatten().copied().collect();
    if v.is_empty() {
        return serde_json::Value::Null;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    serde_json::json!({
        "mean": mean,
        "min": v.iter().copied().fold(f64::INFINITY, f64::min),
        "max": v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    })
}

impl Report<'_> {
    fn start_trial(&self) -> &Trial {
        &self.found.trials[0]
    }

    fn best_trial(&self) -> &Trial {
        &self.found.trials[self.found.best]
    }

    /// The figures of `trial` on the search's seeds, in seed order.
    fn on_seeds(&self, trial: &Trial) -> Vec<RunFigures> {
        self.settings
            .seeds
            .iter()
            .filter_map(|s| trial.runs.iter().find(|(r, _)| r == s).map(|(_, f)| *f))
            .collect()
    }

    /// The settings table: per knob, start, recommendation and legal values.
    fn settings_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<22} {:>12} {:>12}  legal values (the switch's granularity)",
            "knob", "start", "recommended"
        );
        for (i, k) in self.knobs.iter().enumerate() {
            let (a, b) = (self.start_trial().values[i], self.best_trial().values[i]);
            let _ = writeln!(
                out,
                "{:<22} {:>12} {:>12}  {} to {}, {} steps",
                k.name,
                k.toml_value(a),
                k.toml_value(b),
                k.toml_value(k.values[0]),
                k.toml_value(k.values[k.values.len() - 1]),
                k.values.len()
            );
        }
        out
    }

    /// The per-seed table: start against recommendation, the search's seeds then the check's.
    fn seeds_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:>6} {:>7} {:>10} {:>12}  {:>18}  {:>18}",
            "seed", "", "start", "recommended", "unfinished flows", "lossless drops"
        );
        let (start, best) = (
            self.on_seeds(self.start_trial()),
            self.on_seeds(self.best_trial()),
        );
        let rows = self
            .settings
            .seeds
            .iter()
            .zip(start.iter().zip(best))
            .map(|(s, (a, b))| (*s, "search", *a, b))
            .chain(
                self.check
                    .iter()
                    .zip(self.check_start.iter().zip(self.check_best))
                    .map(|(s, (a, b))| (*s, "check", *a, *b)),
            );
        for (seed, kind, a, b) in rows {
            let _ = writeln!(
                out,
                "{seed:>6} {kind:>7} {:>10} {:>12}  {:>18}  {:>18}",
                figure(a.objective),
                figure(b.objective),
                format!("{} -> {}", a.unfinished_flows, b.unfinished_flows),
                format!("{} -> {}", a.lossless_drops, b.lossless_drops),
            );
        }
        if let Some(why) = violation(self.check, self.check_best, self.check_start) {
            let _ = writeln!(
                out,
                "on the check's seeds the recommendation breaks a constraint: {why}; trust it less (docs/tuning.md)"
            );
        }
        out
    }

    /// The mean over `runs`' objective, as a line part.
    fn mean(&self, runs: &[RunFigures]) -> String {
        figure(score(self.settings.objective, Aggregate::Mean, runs).map(f64::abs))
    }

    fn json(&self) -> serde_json::Value {
        let knobs: Vec<serde_json::Value> = self
            .knobs
            .iter()
            .enumerate()
            .map(|(i, k)| {
                serde_json::json!({
                    "name": k.name, "what": k.what, "keys": k.keys,
                    "legal_values": k.values,
                    "start": self.start_trial().values[i],
                    "recommended": self.best_trial().values[i],
                })
            })
            .collect();
        let side = |t: &Trial, check: &[RunFigures]| {
            let search = self.on_seeds(t);
            serde_json::json!({
                "values": t.values,
                "score": t.score,
                "search_seeds": self.settings.seeds.iter().zip(&search).map(|(s, f)| serde_json::json!({"seed": s, "figures": f})).collect::<Vec<_>>(),
                "search_spread": spread(&values(&search)),
                "check_seeds": self.check.iter().zip(check).map(|(s, f)| serde_json::json!({"seed": s, "figures": f})).collect::<Vec<_>>(),
                "check_spread": spread(&values(check)),
            })
        };
        rocelab::report::document(
            "tune",
            serde_json::json!({
                "scenario": self.args.scenario,
                "from": self.args.from,
                "dialect": self.start.dialect,
                "objective": self.settings.objective,
                "aggregate": self.settings.aggregate,
                "budget_runs": match self.args.budget {
                    Budget::Runs(n) => Some(n),
                    Budget::Seconds(_) => None,
                },
                "budget_seconds": match self.args.budget {
                    Budget::Runs(_) => None,
                    Budget::Seconds(s) => Some(s),
                },
                "time_up": self.time_up,
                "drain_ms": self.args.drain_ms,
                "runs": self.found.runs,
                "brackets": self.found.brackets,
                "search_seed": self.settings.search_seed,
                "knobs": knobs,
                "start": side(self.start_trial(), self.check_start),
                "recommended": side(self.best_trial(), self.check_best),
                "changed": self.found.best != 0,
                "interrupted": self.interrupted,
                "history": self.found.trials,
            }),
        )
    }

    /// search.svg: the objective of every point tried, in the order tried.
    fn search_svg(&self) -> Result<String> {
        use rocelab::report::plot::Tried;
        let points: Vec<Tried> = self
            .found
            .trials
            .iter()
            .filter_map(|t| {
                Some(Tried {
                    id: t.id,
                    value: t.score?.abs(),
                    finalist: t.ran_on(&self.settings.seeds),
                    rejected: t.id != 0 && t.rejected.is_some(),
                })
            })
            .collect();
        let title = format!(
            "{}: {} points tried, {} runs",
            self.args.scenario,
            self.found.trials.len(),
            self.found.runs
        );
        let y = format!(
            "{} of the seeds run",
            match self.settings.aggregate {
                Aggregate::Mean => "mean",
                Aggregate::Worst => "worst",
            }
        );
        Ok(rocelab::report::plot::search_svg(&points, &title, &y)?)
    }

    /// fct.svg: p50 and p99 FCT slowdown per size bucket, start against recommendation,
    /// on one seed; `None` without those runs.
    fn fct_svg(&self) -> Result<Option<String>> {
        let Some((seed, start, best)) = &self.fct else {
            return Ok(None);
        };
        let labels: Vec<String> = start
            .iter()
            .chain(best)
            .filter(|b| b.label != "all" && b.flows > 0)
            .map(|b| b.label.clone())
            .fold(Vec::new(), |mut v, l| {
                if !v.contains(&l) {
                    v.push(l);
                }
                v
            });
        let pick = |buckets: &[Bucket], p: fn(&Bucket) -> Option<f64>| -> Vec<Option<f64>> {
            labels
                .iter()
                .map(|l| buckets.iter().find(|b| &b.label == l).and_then(p))
                .collect()
        };
        let series = vec![
            ("start p50".to_owned(), pick(start, |b| b.p50)),
            ("recommended p50".to_owned(), pick(best, |b| b.p50)),
            ("start p99".to_owned(), pick(start, |b| b.p99)),
            ("recommended p99".to_owned(), pick(best, |b| b.p99)),
        ];
        let title = format!(
            "FCT slowdown by flow size, seed {seed}{}: start and recommendation",
            if self.check.contains(seed) {
                " (unseen)"
            } else {
                ""
            }
        );
        Ok(Some(rocelab::report::plot::bars_svg(
            &title,
            "FCT slowdown of finished flows (FCT / ideal)",
            &labels,
            &series,
        )?))
    }

    /// The plot: the objective per seed, start against recommendation.
    fn svg(&self) -> Result<String> {
        let mut groups: Vec<String> = self
            .settings
            .seeds
            .iter()
            .map(|s| format!("seed {s}"))
            .collect();
        groups.extend(self.check.iter().map(|s| format!("seed {s} (check)")));
        let both = |search: Vec<RunFigures>, check: &[RunFigures]| {
            let mut v = values(&search);
            v.extend(values(check));
            v
        };
        let series = vec![
            (
                "start".to_owned(),
                both(self.on_seeds(self.start_trial()), self.check_start),
            ),
            (
                "recommended".to_owned(),
                both(self.on_seeds(self.best_trial()), self.check_best),
            ),
        ];
        let title = format!("{}: start and recommendation per seed", self.args.scenario);
        Ok(rocelab::report::plot::bars_svg(
            &title,
            self.settings.objective.describe(),
            &groups,
            &series,
        )?)
    }

    /// Prints the report and writes every file.
    fn write(&self) -> Result<()> {
        let out = &self.args.out;
        let start = self.start_trial();
        let best = self.best_trial();
        let mut text = String::new();
        let _ = writeln!(
            text,
            "tune of {} from {}: {} ({} over {} seeds), {} runs in {} brackets",
            self.args.scenario,
            self.args.from,
            self.settings.objective.describe(),
            match self.settings.aggregate {
                Aggregate::Mean => "mean",
                Aggregate::Worst => "worst",
            },
            self.settings.seeds.len(),
            self.found.runs,
            self.found.brackets
        );
        if self.interrupted {
            let _ = writeln!(
                text,
                "INTERRUPTED after {} runs of a budget of {}: the best point so far that ran on every seed, not the search's answer, and not checked on other seeds; --resume goes on",
                self.found.runs,
                self.args.budget.describe()
            );
        }
        if self.time_up {
            let _ = writeln!(
                text,
                "the time budget of {} was spent after {} runs: the best point that ran on every seed by then (a time budget's answer depends on the machine's speed)",
                self.args.budget.describe(),
                self.found.runs
            );
        }
        let (sm, bm) = (
            self.mean(&self.on_seeds(start)),
            self.mean(&self.on_seeds(best)),
        );
        if self.found.best == 0 {
            let _ = writeln!(
                text,
                "no point tried beat the starting configuration: it stays (mean {sm})"
            );
        } else {
            let _ = writeln!(
                text,
                "recommendation: trial {}, mean {bm} against the start's {sm} on the search's seeds; on the check's: {} against {}",
                best.id,
                self.mean(self.check_best),
                self.mean(self.check_start)
            );
        }
        let _ = writeln!(text, "\n{}\n{}", self.settings_table(), self.seeds_table());
        say!("{text}");
        let mut wrote = vec![
            "start.toml",
            "journal.jsonl",
            "table.txt",
            "tune.json",
            "tune.svg",
        ];
        rocelab::output::write_whole(&out.join("table.txt"), text.as_bytes())?;
        let json = serde_json::to_string_pretty(&self.json())? + "\n";
        rocelab::output::write_whole(&out.join("tune.json"), json.as_bytes())?;
        rocelab::output::write_whole(&out.join("tune.svg"), self.svg()?.as_bytes())?;
        rocelab::output::write_whole(&out.join("search.svg"), self.search_svg()?.as_bytes())?;
        wrote.push("search.svg");
        if let Some(svg) = self.fct_svg()? {
            rocelab::output::write_whole(&out.join("fct.svg"), svg.as_bytes())?;
            wrote.push("fct.svg");
        }
        wrote.extend(self.export(&sm, &bm)?);
        sayln!("wrote {} to {}", wrote.join(", "), out.display());
        Ok(())
    }

    /// recommended.toml, the switch's own syntax and the NICs' lines: the files written.
    fn export(&self, sm: &str, bm: &str) -> Result<Vec<&'static str>> {
        let out = &self.args.out;
        let best = &self.best_trial().values;
        let why = format!(
            "{} mean {sm} -> {bm} over seeds {:?}",
            self.settings.objective.describe(),
            self.settings.seeds
        );
        let mut toml_changes = Vec::new();
        let mut changes = SwitchChanges::default();
        let mut nic: Vec<(&str, u64)> = Vec::new();
        for (k, &v) in self.knobs.iter().zip(best) {
            for key in &k.keys {
                if let Some(key) = key.strip_prefix("switch.") {
                    let value: toml::Value =
                        toml::from_str::<toml::Table>(&format!("v = {}", k.toml_value(v)))?
                            .remove("v")
                            .unwrap_or(toml::Value::Float(v));
                    toml_changes.push((key.to_owned(), value, why.clone()));
                    if let Some(q) = key
                        .strip_prefix("queue.")
                        .and_then(|r| r.split('.').next())
                        .and_then(|q| q.parse().ok())
                        && !changes.queues.contains(&q)
                    {
                        changes.queues.push(q);
                    }
                }
            }
            match k.name.as_str() {
                "ecn.kmin" => changes.kmin_bytes = Some(v.round() as u64),
                "ecn.kmax" => changes.kmax_bytes = Some(v.round() as u64),
                "ecn.pmax" => changes.pmax = Some(v),
                "pfc.alpha" => changes.pg_alpha = Some(v),
                "pfc.xon_offset" => changes.xon_offset_bytes = Some(v.round() as u64),
                "pfc.headroom" => changes.headroom_bytes = Some(v.round() as u64),
                name => nic.push((
                    KNOB_NIC_NAMES
                        .iter()
                        .find(|n| **n == name)
                        .copied()
                        .unwrap_or("unknown"),
                    v.round() as u64,
                )),
            }
        }
        let start_table: toml::Table = toml::from_str(&self.start.toml)?;
        let recommended = export::toml(&start_table, &toml_changes)?;
        let header = format!(
            "# rocelab tune's recommendation for {} (from {}); each changed value says what it was.\n",
            self.args.scenario, self.args.from
        );
        rocelab::output::write_whole(
            &out.join("recommended.toml"),
            (header + &recommended).as_bytes(),
        )?;
        let mut wrote = vec!["recommended.toml"];
        let switch_changed = changes != SwitchChanges::default();
        match self.start.dialect {
            Dialect::Sonic if switch_changed => {
                let (db, patch) = export::sonic(&self.start.text, &changes)?;
                rocelab::output::write_whole(&out.join("config_db.json"), db.as_bytes())?;
                rocelab::output::write_whole(&out.join("config_db.patch.json"), patch.as_bytes())?;
                wrote.extend(["config_db.json", "config_db.patch.json"]);
            }
            Dialect::Nxos if switch_changed => {
                let (full, lines) = export::nxos(&self.start.text, &changes)?;
                rocelab::output::write_whole(&out.join("running-config.txt"), full.as_bytes())?;
                rocelab::output::write_whole(&out.join("nxos.txt"), lines.as_bytes())?;
                wrote.extend(["running-config.txt", "nxos.txt"]);
            }
            _ => {}
        }
        if !nic.is_empty() {
            let mut text = export::nic_lines(&nic);
            text.push_str("# The same in a rocelab scenario (each was, and why):\n");
            for (i, k) in self.knobs.iter().enumerate() {
                if let Some(key) = k.keys.first().filter(|k| k.starts_with("endpoint.")) {
                    let _ = writeln!(
                        text,
                        "#   {key} = {}  (was {}; {why})",
                        k.toml_value(best[i]),
                        k.toml_value(self.start_trial().values[i])
                    );
                }
            }
            rocelab::output::write_whole(&out.join("nic.txt"), text.as_bytes())?;
            wrote.push("nic.txt");
        }
        Ok(wrote)
    }
}

/// The NIC knobs' names, as `nic_lines` takes them (static strings).
const KNOB_NIC_NAMES: [&str; 4] = [
    "rpg_ai_rate",
    "rpg_hai_rate",
    "rpg_time_reset",
    "min_time_between_cnps",
];

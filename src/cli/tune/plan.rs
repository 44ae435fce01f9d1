//! `tune --plan` and `--merge`: the search spread over machines through sweep's plans.
//! `--plan` makes no run: it replays the journal and writes the runs the search needs next
//! (the start on every seed, a rung of a bracket, or the check) into DIR/plan as sweep
//! writes its jobs, one `rocelab sim` command line each. `--merge` reads those runs'
//! report.json back (each must be there and be its run's, by seed and scenario digest),
//! appends them to the journal and goes on to the next plan or the report. The search is a
//! function of its runs, so the answer is the in-process tune's.

use super::super::sweep::{
    MAX_PLAN_BYTES, RunReport, Unusable, open_regular, read_result, write_jobs,
};
use super::journal::Journal;
use anyhow::{Context, Result};
use rocelab::sim::fct::{Bucket, FlowFct};
use rocelab::sim::tune::objective::{Counts, Objective, figures_of};
use rocelab::time::Nanos;
use rustc_hash::FxHashMap;
use std::path::Path;

/// The plan's folder inside --out.
pub(super) const FOLDER: &str = "plan";

/// The schema of DIR/plan/plan.json.
const SCHEMA: &str = "rocelab.tune-plan/1";

/// DIR/plan/plan.json: what the merge reads back.
#[derive(serde::Serialize, serde::Deserialize)]
struct PlanFile {
    schema: String,
    /// The digest of the journal's made-with: a plan of another tune is refused.
    made_with: String,
    /// One per line of jobs.txt, in order.
    runs: Vec<PlannedRun>,
}

/// One planned run: a point's values and a seed, its folder and its scenario's digest.
#[derive(serde::Serialize, serde::Deserialize)]
struct PlannedRun {
    values: Vec<f64>,
    seed: u64,
    dir: String,
    digest: String,
}

/// The parts of a run's report.json the tune reads.
#[derive(serde::Deserialize)]
struct SimReport {
    schema: Option<serde_json::Value>,
    seed: Option<serde_json::Value>,
    scenario_digest: Option<serde_json::Value>,
    end_ns: Option<u64>,
    fct: Option<Fct>,
    summary: Option<Counts>,
}

#[derive(serde::Deserialize)]
struct Fct {
    flows: Vec<FlowFct>,
}

impl RunReport for SimReport {
    fn stamp(&self) -> [Option<&serde_json::Value>; 3] {
        [
            self.schema.as_ref(),
            self.seed.as_ref(),
            self.scenario_digest.as_ref(),
        ]
    }
}

/// A run's key: its values' bits and its seed.
type Key = (Vec<u64>, u64);

fn key(values: &[f64], seed: u64) -> Key {
    (values.iter().map(|v| v.to_bits()).collect(), seed)
}

/// The FCT slowdown per size bucket of the runs merged from a plan, for fct.svg.
#[derive(Default)]
pub(super) struct Held {
    buckets: FxHashMap<Key, Vec<Bucket>>,
}

impl Held {
    /// The buckets of the merged run at `values` and `seed`.
    pub(super) fn buckets(&self, values: &[f64], seed: u64) -> Option<Vec<Bucket>> {
        self.buckets.get(&key(values, seed)).cloned()
    }
}

/// A digest of what a tune's runs are made with, for plan.json.
pub(super) fn made_with_digest(made_with: &serde_json::Value) -> String {
    rocelab::sim::scenario::digest(&made_with.to_string())
}

/// True when `out` holds a plan.
pub(super) fn exists(out: &Path) -> bool {
    out.join(FOLDER).exists()
}

/// Reads the results of the plan in `out`/plan into `journal` (each run's figures for
/// `objective`), keeps their FCT buckets, and removes the plan: its runs are in the
/// journal. A run without its result, or with one that is not its run's or cannot be
/// read, refuses the whole merge, by name.
pub(super) fn merge(
    out: &Path,
    made_with: &str,
    objective: Objective,
    journal: &mut Journal,
) -> Result<Held> {
    let folder = out.join(FOLDER);
    let path = folder.join("plan.json");
    // As sweep's merge reads its plan: a FIFO or a device named plan.json is refused, not
    // waited on or read without end.
    let reader = open_regular(&path, MAX_PLAN_BYTES).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e}; --merge reads the plan `tune --plan` wrote there",
            path.display()
        )
    })?;
    let plan: PlanFile = serde_json::from_reader(reader)
        .with_context(|| format!("{}: not a tune plan ({SCHEMA})", path.display()))?;
    if plan.schema != SCHEMA {
        anyhow::bail!(
            "{}: schema {}, expected {SCHEMA}",
            path.display(),
            plan.schema
        );
    }
    if plan.made_with != made_with {
        anyhow::bail!(
            "{} was written by a tune with other arguments (scenario, --from, --set, --objective, --knobs or seeds): merge it with the arguments that wrote it",
            path.display()
        );
    }
    let inside = folder
        .canonicalize()
        .with_context(|| format!("reading {}", folder.display()))?;
    let mut held = Held::default();
    let mut figures = Vec::new();
    let mut problems: [(Vec<String>, &str); 3] = [
        (
            Vec::new(),
            "have no result yet (run their lines of jobs.txt)",
        ),
        (
            Vec::new(),
            "have a result that is not theirs (run them again)",
        ),
        (
            Vec::new(),
            "have a result that cannot be read (run them again)",
        ),
    ];
    for run in &plan.runs {
        let inside_plan = !run.dir.is_empty()
            && Path::new(&run.dir)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside_plan {
            anyhow::bail!(
                "{}: run folder \"{}\" is not inside the plan's",
                path.display(),
                run.dir
            );
        }
        let file = folder.join(&run.dir).join("result").join("report.json");
        match read_result::<SimReport>(&file, &inside, run.seed, Some(&run.digest)) {
            Ok(report) => match (report.end_ns, report.fct, report.summary) {
                (Some(end), Some(fct), Some(counts)) => {
                    let f = figures_of(objective, &fct.flows, Nanos(end), &counts);
                    let buckets = rocelab::sim::fct::buckets(&fct.flows);
                    held.buckets.insert(key(&run.values, run.seed), buckets);
                    figures.push((run, f));
                }
                _ => problems[2].0.push(format!(
                    "{} (report.json has no end_ns, fct flows or summary)",
                    run.dir
                )),
            },
            Err(Unusable::Missing) => problems[0].0.push(run.dir.clone()),
            Err(Unusable::NotTheirs(why)) => problems[1].0.push(format!("{} ({why})", run.dir)),
            Err(Unusable::Damaged(why)) => problems[2].0.push(format!("{} ({why})", run.dir)),
        }
    }
    let said: Vec<String> = problems
        .iter()
        .filter(|(runs, _)| !runs.is_empty())
        .map(|(runs, what)| {
            format!(
                "{} of {} runs {what}: {}",
                runs.len(),
                plan.runs.len(),
                runs.join(", ")
            )
        })
        .collect();
    if !said.is_empty() {
        anyhow::bail!("{}: nothing merged; {}", folder.display(), said.join("; "));
    }
    for (run, f) in figures {
        if journal.get(&run.values, run.seed).is_none() {
            journal.add(&run.values, run.seed, &Ok(f))?;
        }
    }
    std::fs::remove_dir_all(&folder)
        .with_context(|| format!("removing {} once merged", folder.display()))?;
    noteln!(
        "tune: merged {} runs from {} into the journal",
        plan.runs.len(),
        folder.display()
    );
    Ok(held)
}

/// Writes `runs` (values and seed; `tables` their scenarios, `dir` the folder the
/// scenario's files are relative to) as a plan into `out`/plan.
pub(super) fn write(
    out: &Path,
    made_with: &str,
    dir: Option<&Path>,
    runs: &[(Vec<f64>, u64)],
    tables: Vec<toml::Table>,
) -> Result<()> {
    let folder = out.join(FOLDER);
    let planned: Vec<PlannedRun> = write_jobs(&folder, dir, tables)?
        .into_iter()
        .zip(runs)
        .map(|((dir, digest), (values, seed))| PlannedRun {
            values: values.clone(),
            seed: *seed,
            dir,
            digest,
        })
        .collect();
    let plan = PlanFile {
        schema: SCHEMA.into(),
        made_with: made_with.into(),
        runs: planned,
    };
    let text = serde_json::to_string_pretty(&plan)? + "\n";
    rocelab::output::write_whole(&folder.join("plan.json"), text.as_bytes())?;
    Ok(())
}

//! The search: successive halving (Jamieson and Talwalkar, AISTATS 2016; the brackets of
//! Hyperband, Li et al., JMLR 2018) over the knobs' legal values, with seeds as the
//! resource. A bracket draws candidates, runs them all on the first seed, keeps the best
//! third, runs those on the next seed as well, and so on until the survivors have run on
//! every seed; only a point that ran on every seed can become the recommendation, by its
//! score over all of them (the mean or the worst seed), so one lucky seed never wins. The
//! first bracket's candidates are a Latin hypercube over the knobs' ladders; later ones
//! are half steps around the best point so far, half fresh draws. Brackets follow each
//! other until the budget of runs is spent. Every draw comes from the search's own seed
//! and every run is a function of its point and seed, so the search repeats exactly.

use super::knobs::{Knob, repair};
use super::objective::{Aggregate, Objective, RunFigures, score, violation};
use crate::rand::Rng;

/// How the search runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Settings {
    /// What it makes better.
    pub objective: Objective,
    /// How the seeds' values make a point's score.
    pub aggregate: Aggregate,
    /// The scenario seeds every finalist runs on, in the order the rungs add them.
    pub seeds: Vec<u64>,
    /// The most runs, the starting configuration's included.
    pub budget_runs: usize,
    /// The seed of the search's own draws.
    pub search_seed: u64,
}

/// The most candidates a bracket starts with.
const BRACKET_MAX: usize = 27;

/// A bracket keeps the best 1/ETA of its candidates at each rung.
const ETA: usize = 3;

/// One point tried: its values (one per knob), its runs, and how it stands.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Trial {
    /// Its number: 0 is the starting configuration, then in the order drawn.
    pub id: usize,
    /// The bracket that drew it (the start: none).
    pub bracket: Option<usize>,
    /// One value per knob.
    pub values: Vec<f64>,
    /// (seed, figures) of each run, in the order run.
    pub runs: Vec<(u64, RunFigures)>,
    /// Its score over the seeds it ran on, lower is better; `None` without a value.
    pub score: Option<f64>,
    /// Why it breaks the constraints, if it does (or why it has no score).
    pub rejected: Option<String>,
}

impl Trial {
    fn figures(&self) -> Vec<RunFigures> {
        self.runs.iter().map(|(_, f)| *f).collect()
    }

    /// True when it ran on every seed of `seeds`.
    pub fn ran_on(&self, seeds: &[u64]) -> bool {
        seeds.iter().all(|s| self.runs.iter().any(|(r, _)| r == s))
    }
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Found {
    /// Every point tried; the first is the starting configuration.
    pub trials: Vec<Trial>,
    /// The recommendation's trial number (0 when nothing beat the start).
    pub best: usize,
    /// Runs spent.
    pub runs: usize,
    /// Brackets run.
    pub brackets: usize,
    /// True when the evaluator stopped the search before its budget was spent (a signal):
    /// the recommendation is the best point so far that ran on every seed.
    pub interrupted: bool,
}

/// One run's result: its figures or why it failed; `None` when it was not run because the
/// evaluator was told to stop.
pub type RunResult = Option<Result<RunFigures, String>>;

/// Runs the scenario for the search: a batch of (values, seed) at once (in parallel, in
/// any order), each run's figures or why it failed, in the batch's order. An evaluator
/// that stops (a signal) leaves the runs it did not make `None`, and the search ends with
/// what it has.
pub trait Evaluator {
    /// The runs of `batch`.
    fn evaluate(&mut self, batch: &[(Vec<f64>, u64)]) -> Vec<RunResult>;
    /// Told after every batch: runs done, the budget, the best score so far.
    fn progress(&mut self, _runs: usize, _budget: usize, _best: Option<f64>) {}
}

/// Why a search could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// The budget does not cover the starting configuration and one candidate on every seed.
    #[error(
        "a budget of {budget} runs does not cover the starting configuration and one candidate on {seeds} seeds: give --budget {need} or more"
    )]
    Budget {
        /// The budget given.
        budget: usize,
        /// Seeds per point.
        seeds: usize,
        /// The least budget that searches at all.
        need: usize,
    },
    /// The starting configuration's runs failed or gave no objective.
    #[error("the starting configuration: {0}")]
    Start(String),
}

/// Searches `knobs` from the starting values (each knob's `start`).
pub fn search(
    knobs: &[Knob],
    settings: &Settings,
    eval: &mut dyn Evaluator,
) -> Result<Found, SearchError> {
    let seeds = &settings.seeds;
    let s = seeds.len().max(1);
    if settings.budget_runs < 2 * s {
        return Err(SearchError::Budget {
            budget: settings.budget_runs,
            seeds: s,
            need: 2 * s,
        });
    }
    let mut state = State {
        knobs,
        settings,
        eval,
        trials: Vec::new(),
        runs: 0,
        best: 0,
    };
    let start: Vec<f64> = knobs.iter().map(|k| k.start).collect();
    state.trials.push(Trial {
        id: 0,
        bracket: None,
        values: start,
        runs: Vec::new(),
        score: None,
        rejected: None,
    });
    if !state.run_rung(&[0], seeds) {
        return Ok(state.found(0, true));
    }
    let t = &state.trials[0];
    if let Some(why) = &t.rejected {
        return Err(SearchError::Start(why.clone()));
    }
    let mut rng = Rng::new(settings.search_seed);
    let mut bracket = 0;
    loop {
        let left = settings.budget_runs - state.runs;
        let Some(n) = (1..=BRACKET_MAX).rev().find(|&n| cost(n, s) <= left) else {
            break;
        };
        let mut alive = state.draw(&mut rng, n, bracket);
        if alive.is_empty() {
            break;
        }
        for r in 0..s {
            if !state.run_rung(&alive, &seeds[..=r]) {
                return Ok(state.found(bracket + 1, true));
            }
            alive.sort_by(|&a, &b| state.rank(a).total_cmp(&state.rank(b)).then(a.cmp(&b)));
            if r + 1 < s {
                alive.truncate(alive.len().div_ceil(ETA));
            }
        }
        if let Some(&top) = alive.first() {
            let t = &state.trials[top];
            if t.rejected.is_none() && state.rank(top) < state.rank(state.best) {
                state.best = top;
            }
        }
        bracket += 1;
        let best = state.trials[state.best].score;
        state.eval.progress(state.runs, settings.budget_runs, best);
    }
    Ok(state.found(bracket, false))
}

/// Runs of a bracket of `n` candidates over `s` seeds: every survivor runs once more per
/// rung.
fn cost(n: usize, s: usize) -> usize {
    let mut alive = n;
    let mut total = 0;
    for r in 0..s {
        total += alive;
        if r + 1 < s {
            alive = alive.div_ceil(ETA);
        }
    }
    total
}

struct State<'a> {
    knobs: &'a [Knob],
    settings: &'a Settings,
    eval: &'a mut dyn Evaluator,
    trials: Vec<Trial>,
    runs: usize,
    best: usize,
}

impl State<'_> {
    /// A point's rank at the seeds it ran on: its score, or infinity when rejected.
    fn rank(&self, id: usize) -> f64 {
        let t = &self.trials[id];
        match (t.rejected.is_none(), t.score) {
            (true, Some(x)) => x,
            _ => f64::INFINITY,
        }
    }

    /// What the search found, `brackets` begun; when `interrupted`, the best point so far
    /// among those that ran on every seed.
    fn found(mut self, brackets: usize, interrupted: bool) -> Found {
        if interrupted {
            for id in 1..self.trials.len() {
                let t = &self.trials[id];
                if t.rejected.is_none()
                    && t.ran_on(&self.settings.seeds)
                    && self.rank(id) < self.rank(self.best)
                {
                    self.best = id;
                }
            }
        }
        Found {
            trials: self.trials,
            best: self.best,
            runs: self.runs,
            brackets,
            interrupted,
        }
    }

    /// Runs every trial of `ids` on each seed of `seeds` it has not run on, then scores
    /// and checks them on those seeds. False when the evaluator stopped before every run
    /// was made (those made are kept and scored).
    fn run_rung(&mut self, ids: &[usize], seeds: &[u64]) -> bool {
        let mut batch = Vec::new();
        let mut owners = Vec::new();
        for &id in ids {
            for &seed in seeds {
                if !self.trials[id].runs.iter().any(|(s, _)| *s == seed) {
                    batch.push((self.trials[id].values.clone(), seed));
                    owners.push(id);
                }
            }
        }
        let results = self.eval.evaluate(&batch);
        let mut complete = true;
        for ((id, (_, seed)), r) in owners.into_iter().zip(&batch).zip(results) {
            match r {
                Some(Ok(f)) => self.trials[id].runs.push((*seed, f)),
                Some(Err(e)) => self.trials[id].rejected = Some(format!("seed {seed}: {e}")),
                None => {
                    complete = false;
                    continue;
                }
            }
            self.runs += 1;
        }
        let start: Vec<(u64, RunFigures)> = self.trials[0].runs.clone();
        for &id in ids {
            let t = &mut self.trials[id];
            if t.rejected
                .as_deref()
                .is_some_and(|r| r.starts_with("seed "))
            {
                continue;
            }
            t.score = score(
                self.settings.objective,
                self.settings.aggregate,
                &t.figures(),
            );
            // The start ran on every seed before any candidate: each run has its pair.
            let (seeds, theirs): (Vec<u64>, Vec<RunFigures>) = t
                .runs
                .iter()
                .filter_map(|(s, _)| start.iter().find(|(x, _)| x == s).copied())
                .unzip();
            t.rejected = if t.score.is_none() {
                Some("a run has no value of the objective (no flow finished, or the all-reduce did not)".into())
            } else if id == 0 {
                None
            } else {
                violation(&seeds, &t.figures(), &theirs)
            };
        }
        complete
    }

    /// `n` new candidates for bracket `bracket`.
    fn draw(&mut self, rng: &mut Rng, n: usize, bracket: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let around = if bracket == 0 { 0 } else { n / 2 };
        let mut lhs = latin_hypercube(self.knobs, n - around, rng);
        let best: Vec<usize> = self
            .knobs
            .iter()
            .zip(&self.trials[self.best].values)
            .map(|(k, &v)| k.nearest(v))
            .collect();
        for i in 0..n {
            let mut tries = 0;
            let values = loop {
                let idx = if i < around || lhs.is_empty() {
                    step_from(&best, self.knobs, rng)
                } else {
                    lhs.pop().unwrap_or_else(|| best.clone())
                };
                let mut v: Vec<f64> = self
                    .knobs
                    .iter()
                    .zip(&idx)
                    .map(|(k, &j)| k.values[j])
                    .collect();
                repair(self.knobs, &mut v);
                tries += 1;
                if !self.trials.iter().any(|t| t.values == v) || tries > 20 {
                    break v;
                }
            };
            if self.trials.iter().any(|t| t.values == values) {
                continue;
            }
            let id = self.trials.len();
            self.trials.push(Trial {
                id,
                bracket: Some(bracket),
                values,
                runs: Vec::new(),
                score: None,
                rejected: None,
            });
            out.push(id);
        }
        out
    }
}

/// `n` points, as ladder indices, such that each knob's ladder is cut into `n` equal
/// strata and every stratum is used once (McKay, Beckman and Conover, 1979).
fn latin_hypercube(knobs: &[Knob], n: usize, rng: &mut Rng) -> Vec<Vec<usize>> {
    let mut points = vec![Vec::with_capacity(knobs.len()); n];
    for k in knobs {
        let mut strata: Vec<usize> = (0..n).collect();
        rng.shuffle(&mut strata);
        let len = k.values.len();
        for (p, &stratum) in points.iter_mut().zip(&strata) {
            let x = (stratum as f64 + rng.next_f64()) / n as f64;
            p.push(((x * len as f64) as usize).min(len - 1));
        }
    }
    points
}

/// A step around `from`: each knob, with probability one half (and at least one knob),
/// moves one to three rungs of its ladder up or down.
fn step_from(from: &[usize], knobs: &[Knob], rng: &mut Rng) -> Vec<usize> {
    let mut out = from.to_vec();
    let forced = rng.below(knobs.len().max(1));
    for (i, k) in knobs.iter().enumerate() {
        if i != forced && rng.next_f64() < 0.5 {
            continue;
        }
        let by = 1 + rng.below(3) as i64;
        let by = if rng.next_f64() < 0.5 { -by } else { by };
        let top = k.values.len() as i64 - 1;
        out[i] = (out[i] as i64 + by).clamp(0, top) as usize;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A landscape with a known best (Kmin near 40 KB, Pmax near 0.2), noise that
    /// depends on the seed, and unfinished flows when Kmin is tiny.
    struct Bowl {
        calls: Vec<(Vec<f64>, u64)>,
        /// Stops (as on a signal) once this many runs are made.
        stop_after: Option<usize>,
    }

    impl Bowl {
        fn new() -> Bowl {
            Bowl {
                calls: vec![],
                stop_after: None,
            }
        }
    }

    impl Evaluator for Bowl {
        fn evaluate(&mut self, batch: &[(Vec<f64>, u64)]) -> Vec<RunResult> {
            batch
                .iter()
                .map(|(v, seed)| {
                    if self.stop_after.is_some_and(|n| self.calls.len() >= n) {
                        return None;
                    }
                    self.calls.push((v.clone(), *seed));
                    let (kmin, pmax) = (v[0], v[1]);
                    let noise = (*seed % 3) as f64 * 0.5;
                    let value = 2.0 + (kmin / 40_000.0).ln().powi(2) + (pmax / 0.2).ln().powi(2);
                    Some(Ok(RunFigures {
                        objective: Some(value + noise),
                        unfinished_flows: u64::from(kmin < 3000.0),
                        lossless_drops: 0,
                        storms: 0,
                        pfc_sent: 0,
                        ce_marked: 0,
                    }))
                })
                .collect()
        }
    }

    fn knobs() -> Vec<Knob> {
        vec![
            Knob {
                name: "ecn.kmin".into(),
                what: String::new(),
                values: super::super::knobs::tests_ladder(2000.0, 4e6, 1000.0),
                keys: vec![],
                start: 1_000_000.0,
            },
            Knob {
                name: "ecn.pmax".into(),
                what: String::new(),
                values: (1..=100).map(|p| f64::from(p) / 100.0).collect(),
                keys: vec![],
                start: 0.05,
            },
        ]
    }

    fn settings(budget: usize) -> Settings {
        Settings {
            objective: Objective::FctP99,
            aggregate: Aggregate::Mean,
            seeds: vec![1, 2, 3],
            budget_runs: budget,
            search_seed: 7,
        }
    }

    #[test]
    fn the_search_finds_the_bowl_within_budget_and_repeats_exactly() {
        let mut a = Bowl::new();
        let found = search(&knobs(), &settings(120), &mut a).unwrap();
        assert!(found.runs <= 120, "{}", found.runs);
        assert_eq!(a.calls.len(), found.runs);
        let best = &found.trials[found.best];
        // The start scores 2 + ln(25)^2 + ln(4)^2 + 0.5 = 14.8; the bowl's floor is 2.5.
        assert!(best.score.unwrap() < 4.0, "{best:?}");
        assert!(best.ran_on(&[1, 2, 3]));
        // Never a run twice for a point and seed.
        let mut seen = a.calls.clone();
        seen.sort_by(|x, y| x.partial_cmp(y).unwrap());
        seen.dedup();
        assert_eq!(seen.len(), a.calls.len());
        let mut b = Bowl::new();
        assert_eq!(search(&knobs(), &settings(120), &mut b).unwrap(), found);
    }

    /// A grid of as many runs (5 x 5 points... on three seeds is 75 runs plus the start)
    /// lands farther from the floor than the search on the same budget.
    #[test]
    fn the_search_beats_a_grid_of_the_same_budget() {
        let k = knobs();
        let mut bowl = Bowl::new();
        let found = search(&k, &settings(78), &mut bowl).unwrap();
        let mut grid_best = f64::INFINITY;
        for i in 0..5 {
            for j in 0..5 {
                let kmin = k[0].values[(i * (k[0].values.len() - 1)) / 4];
                let pmax = k[1].values[(j * 99) / 4];
                let runs = bowl.evaluate(&[
                    (vec![kmin, pmax], 1),
                    (vec![kmin, pmax], 2),
                    (vec![kmin, pmax], 3),
                ]);
                let figs: Vec<RunFigures> = runs.into_iter().map(|r| r.unwrap().unwrap()).collect();
                let s = score(Objective::FctP99, Aggregate::Mean, &figs).unwrap();
                grid_best = grid_best.min(s);
            }
        }
        assert!(
            found.trials[found.best].score.unwrap() < grid_best,
            "{grid_best}"
        );
    }

    /// Stopped after 50 runs of 120, the search keeps every run made, recommends the best
    /// point that ran on every seed, and says it was interrupted; its runs are the first 50
    /// of the whole search's, so a resumed search that replays them goes on as if never
    /// stopped.
    #[test]
    fn a_stopped_search_keeps_its_runs_and_the_best_point_on_every_seed() {
        let mut whole = Bowl::new();
        let all = search(&knobs(), &settings(120), &mut whole).unwrap();
        assert!(!all.interrupted);
        let mut cut = Bowl::new();
        cut.stop_after = Some(50);
        let part = search(&knobs(), &settings(120), &mut cut).unwrap();
        assert!(part.interrupted);
        assert_eq!(part.runs, 50);
        assert_eq!(cut.calls[..], whole.calls[..50]);
        let best = &part.trials[part.best];
        assert!(
            best.ran_on(&[1, 2, 3]) && best.rejected.is_none(),
            "{best:?}"
        );
        // No point that ran on every seed without breaking a constraint scores better.
        for t in &part.trials {
            if t.ran_on(&[1, 2, 3]) && t.rejected.is_none() {
                assert!(t.score.unwrap() >= best.score.unwrap(), "{t:?}");
            }
        }
        assert!(part.best != 0, "50 runs find a point better than the start");
        // Stopped before the start ran on every seed: nothing to recommend yet.
        let mut early = Bowl::new();
        early.stop_after = Some(2);
        let none = search(&knobs(), &settings(120), &mut early).unwrap();
        assert!(none.interrupted && none.runs == 2 && !none.trials[0].ran_on(&[1, 2, 3]));
    }

    #[test]
    fn a_budget_below_two_points_is_refused() {
        let e = search(&knobs(), &settings(5), &mut Bowl::new()).unwrap_err();
        assert!(e.to_string().contains("--budget 6"), "{e}");
    }

    #[test]
    fn bracket_costs_count_every_rung() {
        assert_eq!(cost(27, 3), 27 + 9 + 3);
        assert_eq!(cost(1, 3), 3);
        assert_eq!(cost(4, 2), 4 + 2);
    }
}

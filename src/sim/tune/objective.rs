//! What a run of the tuned scenario comes to for the search: the objective (FCT slowdown
//! p99 of all or of small flows, or the all-reduce's bus bandwidth) and the figures the
//! constraints look at (unfinished flows, lossless drops, PFC storms).

use crate::sim::run::Outcome;
use crate::sim::scenario::Scenario;

/// What the search makes better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// The workload flows' FCT slowdown at p99, all sizes, an unfinished flow at its
    /// slowdown so far (lower is better).
    FctP99,
    /// The same of the flows under 100 KB (lower is better).
    SmallFctP99,
    /// The largest all-reduce size's bus bandwidth, GB/s (higher is better).
    Busbw,
}

impl Objective {
    /// In words, with its unit and direction.
    pub fn describe(self) -> &'static str {
        match self {
            Objective::FctP99 => {
                "FCT slowdown p99, all flows, unfinished at their slowdown so far (lower is better)"
            }
            Objective::SmallFctP99 => {
                "FCT slowdown p99, flows under 100 KB, unfinished at their slowdown so far (lower is better)"
            }
            Objective::Busbw => "all-reduce bus bandwidth, GB/s (higher is better)",
        }
    }

    /// True when a larger value is better.
    pub fn higher_is_better(self) -> bool {
        self == Objective::Busbw
    }
}

/// How the seeds' values of a point make its score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Aggregate {
    /// The mean over the seeds.
    Mean,
    /// The worst seed's value.
    Worst,
}

/// One run's figures.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunFigures {
    /// The objective's value; `None` when the run has none (no flow finished, the
    /// all-reduce did not finish).
    pub objective: Option<f64>,
    /// Workload flows that had not finished when the run ended.
    pub unfinished_flows: u64,
    /// Frames the switches dropped in lossless classes.
    pub lossless_drops: u64,
    /// PFC storms the watchdogs detected.
    pub storms: u64,
    /// PFC frames the switches sent.
    pub pfc_sent: u64,
    /// Frames the switches marked CE.
    pub ce_marked: u64,
}

/// The counts of a run's summary the figures take, under the names a sim report's
/// `summary` gives them (a run made elsewhere is read back from its report.json).
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
pub struct Counts {
    /// The largest all-reduce size's bus bandwidth, GB/s.
    pub busbw_gbytes_per_s: Option<f64>,
    /// Frames the switches dropped in lossless classes.
    pub lossless_drops: u64,
    /// PFC storms the watchdogs detected.
    pub storms_detected: u64,
    /// PFC frames the switches sent.
    pub switch_pfc_sent: u64,
    /// Frames the switches marked CE.
    pub ce_marked: u64,
}

/// The figures of a finished run.
pub fn figures(objective: Objective, scenario: &Scenario, outcome: &Outcome) -> RunFigures {
    let s = crate::sim::summary::summary(scenario, outcome);
    let counts = Counts {
        busbw_gbytes_per_s: s.busbw_gbytes_per_s,
        lossless_drops: s.lossless_drops,
        storms_detected: s.storms_detected,
        switch_pfc_sent: s.switch_pfc_sent,
        ce_marked: s.ce_marked,
    };
    figures_of(objective, &outcome.flows, outcome.net.engine.now(), &counts)
}

/// The figures of a run that ended at `end` with `flows` and `counts`.
pub fn figures_of(
    objective: Objective,
    flows: &[crate::sim::fct::FlowFct],
    end: crate::time::Nanos,
    counts: &Counts,
) -> RunFigures {
    let value = match objective {
        Objective::FctP99 => censored_p99(flows, end, |_| true),
        Objective::SmallFctP99 => censored_p99(flows, end, |f| f.bytes < 100_000),
        Objective::Busbw => counts.busbw_gbytes_per_s,
    };
    RunFigures {
        objective: value,
        unfinished_flows: flows.iter().filter(|f| f.finished.is_none()).count() as u64,
        lossless_drops: counts.lossless_drops,
        storms: counts.storms_detected,
        pfc_sent: counts.switch_pfc_sent,
        ce_marked: counts.ce_marked,
    }
}

/// The p99 slowdown of the flows `keep` takes, an unfinished flow counted at its
/// slowdown so far (from its arrival to the run's `end`, over its ideal FCT): a lower bound
/// of what it would have had. Counting only finished flows rewards a setting that leaves
/// its slowest flows unfinished. `None` without flows.
pub fn censored_p99(
    flows: &[crate::sim::fct::FlowFct],
    end: crate::time::Nanos,
    keep: impl Fn(&crate::sim::fct::FlowFct) -> bool,
) -> Option<f64> {
    let mut slowdowns: Vec<f64> = flows
        .iter()
        .filter(|f| keep(f))
        .map(|f| {
            f.slowdown()
                .unwrap_or_else(|| end.saturating_sub(f.arrival).0 as f64 / f.ideal.0.max(1) as f64)
        })
        .collect();
    slowdowns.sort_by(f64::total_cmp);
    crate::sim::fct::nearest_rank(&slowdowns, 0.99)
}

/// The score of a point over its runs, lower is better: the objective's mean or worst
/// over the seeds (negated when higher is better); `None` when a run has no value.
pub fn score(objective: Objective, aggregate: Aggregate, runs: &[RunFigures]) -> Option<f64> {
    if runs.is_empty() {
        return None;
    }
    let sign = if objective.higher_is_better() {
        -1.0
    } else {
        1.0
    };
    let values: Option<Vec<f64>> = runs.iter().map(|r| r.objective.map(|v| sign * v)).collect();
    let values = values?;
    Some(match aggregate {
        Aggregate::Mean => values.iter().sum::<f64>() / values.len() as f64,
        Aggregate::Worst => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    })
}

/// One count of a run.
type Figure = fn(&RunFigures) -> u64;

/// Why a point's runs break the constraints against the starting configuration's runs on
/// the same seeds (`seeds[i]` is the seed of `runs[i]` and `start[i]`), in words; `None`
/// when they keep them. On each seed: no more frames lost in a lossless class, no more PFC
/// storms, no more unfinished flows than the start had on that seed (a setting that hides
/// slow flows by not finishing them loses, and a good seed cannot pay for a bad one).
pub fn violation(seeds: &[u64], runs: &[RunFigures], start: &[RunFigures]) -> Option<String> {
    let checks: [(&str, Figure); 3] = [
        ("frames lost in lossless classes", |r| r.lossless_drops),
        ("PFC storms", |r| r.storms),
        ("unfinished flows", |r| r.unfinished_flows),
    ];
    checks.iter().find_map(|(what, f)| {
        seeds
            .iter()
            .zip(runs.iter().zip(start))
            .find_map(|(seed, (r, s))| {
                let (mine, theirs) = (f(r), f(s));
                (mine > theirs)
                    .then(|| format!("seed {seed}: {mine} {what} against the start's {theirs}"))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(v: Option<f64>, unfinished: u64) -> RunFigures {
        RunFigures {
            objective: v,
            unfinished_flows: unfinished,
            lossless_drops: 0,
            storms: 0,
            pfc_sent: 0,
            ce_marked: 0,
        }
    }

    #[test]
    fn scores_are_the_mean_or_the_worst_seed_lower_better() {
        let runs = [run(Some(2.0), 0), run(Some(6.0), 0)];
        assert_eq!(score(Objective::FctP99, Aggregate::Mean, &runs), Some(4.0));
        assert_eq!(score(Objective::FctP99, Aggregate::Worst, &runs), Some(6.0));
        // Bus bandwidth: higher is better, so the worst seed is the lowest, negated.
        assert_eq!(score(Objective::Busbw, Aggregate::Worst, &runs), Some(-2.0));
        assert_eq!(
            score(
                Objective::FctP99,
                Aggregate::Mean,
                &[run(None, 0), run(Some(1.0), 0)]
            ),
            None
        );
    }

    #[test]
    fn an_unfinished_flow_counts_at_its_slowdown_so_far() {
        use crate::sim::fct::FlowFct;
        use crate::time::Nanos;
        let flow = |id, finished: Option<u64>| FlowFct {
            id,
            workload: 0,
            from: 0,
            to: 1,
            bytes: 1000,
            arrival: Nanos(0),
            started: Some(Nanos(0)),
            finished: finished.map(Nanos),
            ideal: Nanos(100),
        };
        // 99 flows at slowdown 2: p99 is 2. Two more unfinished at the end, 5000 ns after
        // their arrival, ideal 100 ns: the 100th of 101 by nearest rank is one of them, 50.
        let mut flows: Vec<FlowFct> = (0..99).map(|i| flow(i, Some(200))).collect();
        assert_eq!(censored_p99(&flows, Nanos(5000), |_| true), Some(2.0));
        flows.push(flow(99, None));
        flows.push(flow(100, None));
        assert_eq!(censored_p99(&flows, Nanos(5000), |_| true), Some(50.0));
        assert_eq!(censored_p99(&flows, Nanos(5000), |f| f.id < 10), Some(2.0));
        assert_eq!(censored_p99(&[], Nanos(5000), |_| true), None);
    }

    #[test]
    fn more_unfinished_flows_than_the_start_on_any_seed_break_the_constraints() {
        let start = [run(Some(5.0), 2), run(Some(5.0), 0)];
        let seeds = [7, 8];
        assert_eq!(
            violation(&seeds, &[run(Some(1.0), 2), run(Some(1.0), 0)], &start),
            None
        );
        // One fewer on seed 7 does not pay for one more on seed 8.
        let v = violation(&seeds, &[run(Some(1.0), 1), run(Some(1.0), 1)], &start).unwrap();
        assert_eq!(v, "seed 8: 1 unfinished flows against the start's 0");
        let mut lossy = run(Some(1.0), 0);
        lossy.lossless_drops = 1;
        let v = violation(&seeds, &[run(Some(1.0), 0), lossy], &start).unwrap();
        assert!(
            v.contains("seed 8: 1 frames lost in lossless classes"),
            "{v}"
        );
    }
}

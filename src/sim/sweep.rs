//! Parameter sweeps (`rocelab sweep`): a scenario run at every point of a grid of keys'
//! values, each point with one or more seeds, summarised as one row per point (goodput,
//! FCT slowdown p99, PFC pause time, drops, deepest queue) with the points on the Pareto
//! front marked. A row is computed from the point's `report.json` document, whether the
//! point ran in this process or as a planned job elsewhere, so both give the same table.

use std::fmt::Write as _;

/// A grid: keys (dotted scenario paths, as `--set` takes them) and each key's values
/// (TOML values as text).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Grid {
    /// The keys, in the order given.
    pub keys: Vec<String>,
    /// Per key, its values in the order given.
    pub values: Vec<Vec<String>>,
}

/// A scenario's `[sweep]` table: the grid and the seeds `rocelab sweep` runs it over
/// (`rocelab sim` runs the scenario as written, but refuses a key it does not know).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepTable {
    /// `grid = { "key" = [values] }`: per dotted key, its values.
    pub grid: Option<toml::Table>,
    /// `seeds = N`: runs per point.
    pub seeds: Option<u64>,
}

/// A grid argument that does not read, or a grid that cannot be swept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--grid{}{}: {message}", if arg.is_empty() { "" } else { " " }, arg)]
pub struct GridError {
    /// The argument as given; empty when the grid as a whole is wrong.
    pub arg: String,
    /// What is wrong.
    pub message: String,
}

/// The most points a grid may have (times seeds, the most runs).
pub const MAX_RUNS: usize = 10_000;

impl Grid {
    /// The grid of `args`, each `KEY=V1,V2,...` (commas inside `[...]`, `{...}` or quotes
    /// belong to the value).
    pub fn parse(args: &[String]) -> Result<Grid, GridError> {
        let mut grid = Grid {
            keys: Vec::new(),
            values: Vec::new(),
        };
        for arg in args {
            let bad = |message: &str| GridError {
                arg: arg.clone(),
                message: message.to_owned(),
            };
            let (key, list) = arg.split_once('=').ok_or_else(|| {
                bad("give KEY=V1,V2,... (e.g. switch.queue.3.ecn.kmin_bytes=5K,20K)")
            })?;
            let key = key.trim();
            if key.is_empty() || key.split('.').any(str::is_empty) {
                return Err(bad("a key is names joined by dots"));
            }
            if grid.keys.iter().any(|k| k == key) {
                return Err(bad("this key is already in the grid"));
            }
            // Each run's seed is the sweep's (--seed, --seeds): a grid of seeds would be
            // overwritten by it, run after run.
            if key == "seed" {
                return Err(bad(
                    "the sweep sets each run's seed: give --seed FIRST and --seeds N instead",
                ));
            }
            let values = split_values(list);
            if values.is_empty() || values.iter().any(String::is_empty) {
                return Err(bad("give at least one value, none empty"));
            }
            // The same point twice would run twice and take two rows.
            if let Some((i, v)) = values
                .iter()
                .enumerate()
                .find(|(i, v)| values[..*i].contains(v))
            {
                return Err(bad(&format!(
                    "the value {v} is given twice (value {})",
                    i + 1
                )));
            }
            grid.keys.push(key.to_owned());
            grid.values.push(values);
        }
        if grid.keys.is_empty() {
            return Err(GridError {
                arg: String::new(),
                message: "give at least one --grid KEY=V1,V2,...".into(),
            });
        }
        grid.check()?;
        Ok(grid)
    }

    /// Whether the grid can be swept: a list of values per key, none empty, and at most
    /// [`MAX_RUNS`] points. A grid read from a file (a plan's) is checked by it before
    /// use; the count is a checked product (40 keys of two values each once wrapped to
    /// 0 points, skipped the limit and filled the memory).
    pub fn check(&self) -> Result<(), GridError> {
        let whole = |message: String| GridError {
            arg: String::new(),
            message,
        };
        if self.keys.is_empty() {
            return Err(whole("no keys".into()));
        }
        if self.keys.len() != self.values.len() {
            return Err(whole(format!(
                "{} key{} but {} list{} of values: give one list per key",
                self.keys.len(),
                if self.keys.len() == 1 { "" } else { "s" },
                self.values.len(),
                if self.values.len() == 1 { "" } else { "s" },
            )));
        }
        if let Some(key) = self
            .keys
            .iter()
            .zip(&self.values)
            .find_map(|(k, v)| v.is_empty().then_some(k))
        {
            return Err(whole(format!("{key} has no value")));
        }
        if self.count().is_none_or(|n| n > MAX_RUNS) {
            let exact = self
                .values
                .iter()
                .try_fold(1u128, |n, v| n.checked_mul(v.len() as u128));
            return Err(whole(format!(
                "{} key{} of {} make {} points; at most {MAX_RUNS}: give fewer keys or values",
                self.keys.len(),
                if self.keys.len() == 1 { "" } else { "s" },
                value_counts(&self.values),
                exact.map_or_else(|| "more than 2^128".to_owned(), |n| n.to_string()),
            )));
        }
        Ok(())
    }

    /// The points' count, or `None` when it does not fit a `usize`.
    pub fn count(&self) -> Option<usize> {
        self.values
            .iter()
            .try_fold(1usize, |n, v| n.checked_mul(v.len()))
    }

    /// Every point: one value per key, the last key varying fastest.
    pub fn points(&self) -> Vec<Vec<String>> {
        let mut out = vec![Vec::new()];
        for values in &self.values {
            out = out
                .into_iter()
                .flat_map(|p| {
                    values.iter().map(move |v| {
                        let mut p = p.clone();
                        p.push(v.clone());
                        p
                    })
                })
                .collect();
        }
        out
    }

    /// The points' count (at most [`MAX_RUNS`] once [checked](Grid::check); saturated
    /// otherwise).
    pub fn len(&self) -> usize {
        self.count().unwrap_or(usize::MAX)
    }

    /// True when a key has no value (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `2, 3 and 2 values`, or `2 values each` when every key has as many.
fn value_counts(values: &[Vec<String>]) -> String {
    let counts: Vec<String> = values.iter().map(|v| v.len().to_string()).collect();
    match counts.split_last() {
        Some((last, [])) => format!("{last} values"),
        Some((last, rest)) if rest.iter().all(|c| c == last) => format!("{last} values each"),
        Some((last, rest)) => format!("{} and {last} values", rest.join(", ")),
        None => "no values".to_owned(),
    }
}

/// `a,b,[c,d],"e,f"` → `a`, `b`, `[c,d]`, `"e,f"`.
fn split_values(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut quoted, mut here) = (0i32, false, String::new());
    for c in list.chars() {
        match c {
            '"' => quoted = !quoted,
            '[' | '{' if !quoted => depth += 1,
            ']' | '}' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(here.trim().to_owned());
                here.clear();
                continue;
            }
            _ => {}
        }
        here.push(c);
    }
    out.push(here.trim().to_owned());
    out
}

/// What a run comes to, read from its report.json document.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Metrics {
    /// Payload every endpoint accepted over the run, Gb/s.
    pub delivered_gbps: f64,
    /// Workload FCT slowdown at p99, if the run had workload flows that finished.
    pub fct_p99_slowdown: Option<f64>,
    /// Time the hosts were paused by PFC, summed, ms.
    pub host_paused_ms: f64,
    /// Frames the switches and the hosts dropped (a median of two runs may be a half).
    pub drops: f64,
    /// The deepest egress queue, bytes (a median of two runs may be a half).
    pub max_queue_bytes: f64,
    /// Jain's fairness index of the sending QPs' goodputs, if any moved data.
    #[serde(default)]
    pub jain: Option<f64>,
    /// The largest all-reduce size's bus bandwidth, GB/s, if the run had an all-reduce.
    #[serde(default)]
    pub busbw_gbytes_per_s: Option<f64>,
}

impl Metrics {
    /// The metrics in a `rocelab sim` report.json (`summary`); `None` when it is not one.
    pub fn of_report(report: &serde_json::Value) -> Option<Metrics> {
        let s = report.get("summary")?;
        let n = |k: &str| s.get(k).and_then(serde_json::Value::as_u64);
        Some(Metrics {
            delivered_gbps: s.get("delivered_gbps")?.as_f64()?,
            fct_p99_slowdown: s
                .get("fct_p99_slowdown")
                .and_then(serde_json::Value::as_f64),
            host_paused_ms: n("host_paused_ns")? as f64 / 1e6,
            drops: (n("lossless_drops")? + n("lossy_drops")? + n("host_drops")?) as f64,
            max_queue_bytes: n("max_queue_bytes")? as f64,
            jain: s.get("jain").and_then(serde_json::Value::as_f64),
            busbw_gbytes_per_s: s
                .get("busbw_gbytes_per_s")
                .and_then(serde_json::Value::as_f64),
        })
    }

    /// The median of each metric over `runs` (the seeds of a point): the middle value,
    /// or the mean of the two middle values of an even count. A run without an FCT p99
    /// (no flow finished) counts as the slowest, so a point has a p99 only when more than
    /// half its runs have one.
    pub fn median(runs: &[Metrics]) -> Metrics {
        fn mid(mut v: Vec<f64>) -> f64 {
            v.sort_by(f64::total_cmp);
            match v.len() {
                0 => 0.0,
                n if n % 2 == 1 => v[n / 2],
                n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
            }
        }
        let of = |f: fn(&Metrics) -> f64| mid(runs.iter().map(f).collect());
        let p99 = of(|m| m.fct_p99_slowdown.unwrap_or(f64::INFINITY));
        // A run without fairness or busbw counts as the worst, as a missing p99 does.
        let jain = of(|m| m.jain.unwrap_or(f64::NEG_INFINITY));
        let busbw = of(|m| m.busbw_gbytes_per_s.unwrap_or(f64::NEG_INFINITY));
        Metrics {
            delivered_gbps: of(|m| m.delivered_gbps),
            fct_p99_slowdown: p99.is_finite().then_some(p99),
            host_paused_ms: of(|m| m.host_paused_ms),
            drops: of(|m| m.drops),
            max_queue_bytes: of(|m| m.max_queue_bytes),
            jain: jain.is_finite().then_some(jain),
            busbw_gbytes_per_s: busbw.is_finite().then_some(busbw),
        }
    }

    /// The objectives, each to be made larger: goodput, fairness and busbw, and minus the
    /// p99 slowdown, the pause time, drops and the deepest queue. A point without a p99
    /// (no flow finished), a fairness or a busbw is the worst on it, never better than
    /// one with a value; points that all lack it tie.
    fn objectives(&self) -> [f64; 7] {
        [
            self.delivered_gbps,
            self.jain.unwrap_or(f64::NEG_INFINITY),
            self.busbw_gbytes_per_s.unwrap_or(f64::NEG_INFINITY),
            self.fct_p99_slowdown.map_or(f64::NEG_INFINITY, |x| -x),
            -self.host_paused_ms,
            -self.drops,
            -self.max_queue_bytes,
        ]
    }
}

/// One point's row: its values, its seeds and the median metrics over them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Row {
    /// Its number, from 0, in [`Grid::points`] order.
    pub point: usize,
    /// One value per grid key.
    pub values: Vec<String>,
    /// The seeds it ran with.
    pub seeds: Vec<u64>,
    /// Median over the seeds.
    pub metrics: Metrics,
    /// On the Pareto front of the sweep.
    pub pareto: bool,
}

/// Marks the rows no other row beats on every objective (at least as good on all, better
/// on one).
pub fn mark_pareto(rows: &mut [Row]) {
    let objectives: Vec<[f64; 7]> = rows.iter().map(|r| r.metrics.objectives()).collect();
    for (i, row) in rows.iter_mut().enumerate() {
        row.pareto = !objectives.iter().enumerate().any(|(j, o)| {
            j != i
                && o.iter().zip(&objectives[i]).all(|(a, b)| a >= b)
                && o.iter().zip(&objectives[i]).any(|(a, b)| a > b)
        });
    }
}

/// The table: a row per point, the grid's values then the metrics, `*` on the Pareto
/// front.
pub fn table(grid: &Grid, rows: &[Row]) -> String {
    let widths: Vec<usize> = grid
        .keys
        .iter()
        .enumerate()
        .map(|(k, key)| {
            rows.iter()
                .map(|r| r.values[k].len())
                .chain([key.len()])
                .max()
                .unwrap_or(1)
        })
        .collect();
    let mut out = String::new();
    let _ = write!(out, "{:>5} ", "point");
    for (key, w) in grid.keys.iter().zip(&widths) {
        let _ = write!(out, " {key:>w$}");
    }
    // Fairness and busbw only where a point has them (flows, an all-reduce).
    let jain = rows.iter().any(|r| r.metrics.jain.is_some());
    let busbw = rows.iter().any(|r| r.metrics.busbw_gbytes_per_s.is_some());
    let opt = |on: bool, v: Option<f64>| match (on, v) {
        (false, _) => String::new(),
        (true, None) => format!(" {:>7}", "-"),
        (true, Some(x)) => format!(" {x:>7.3}"),
    };
    let _ = write!(out, "  {:>10}", "total Gb/s");
    if jain {
        let _ = write!(out, " {:>7}", "Jain");
    }
    if busbw {
        let _ = write!(out, " {:>7}", "busbw");
    }
    let _ = writeln!(
        out,
        " {:>9} {:>10} {:>7} {:>12}  pareto",
        "FCT p99", "paused ms", "drops", "max queue B"
    );
    for r in rows {
        let _ = write!(out, "{:>5} ", r.point);
        for (v, w) in r.values.iter().zip(&widths) {
            let _ = write!(out, " {v:>w$}");
        }
        let m = &r.metrics;
        let _ = write!(
            out,
            "  {:>10.3}{}{}",
            m.delivered_gbps,
            opt(jain, m.jain),
            opt(busbw, m.busbw_gbytes_per_s)
        );
        let _ = writeln!(
            out,
            " {:>9} {:>10.3} {:>7} {:>12}  {}",
            m.fct_p99_slowdown
                .map_or_else(|| "-".to_owned(), |x| format!("{x:.2}")),
            m.host_paused_ms,
            m.drops,
            m.max_queue_bytes,
            if r.pareto { "*" } else { "" }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn grids_read_values_with_commas_inside_brackets() {
        let g = Grid::parse(&args(&[
            "switch.queue.3.ecn.kmin_bytes=5K,20K,80K",
            "switch.pfc.lossless=[3],[3,4]",
            "description=\"a, b\",c",
        ]))
        .unwrap();
        assert_eq!(g.values[0], ["5K", "20K", "80K"]);
        assert_eq!(g.values[1], ["[3]", "[3,4]"]);
        assert_eq!(g.values[2], ["\"a, b\"", "c"]);
        assert_eq!(g.len(), 12);
        let points = g.points();
        assert_eq!(points.len(), 12);
        assert_eq!(points[0], ["5K", "[3]", "\"a, b\""]);
        assert_eq!(points[1], ["5K", "[3]", "c"]);
        assert_eq!(points[11], ["80K", "[3,4]", "c"]);
    }

    #[test]
    fn bad_grids_are_refused() {
        for bad in ["kmin", "=1,2", "a..b=1", "a=1,,2", "a="] {
            assert!(Grid::parse(&args(&[bad])).is_err(), "{bad}");
        }
        assert!(Grid::parse(&args(&["a=1", "a=2"])).is_err());
        assert!(Grid::parse(&[]).is_err());
        // The same value twice ran the same point twice, in two rows.
        let e = Grid::parse(&args(&["topology.link_gbps=10,25,10"])).unwrap_err();
        assert!(e.to_string().contains("10 is given twice"), "{e}");
        // The sweep sets every run's seed: a grid of seeds was silently overwritten.
        let e = Grid::parse(&args(&["seed=1,2"])).unwrap_err();
        assert!(e.to_string().contains("--seeds"), "{e}");
    }

    #[test]
    fn the_pareto_front_keeps_what_nothing_beats() {
        let row = |point, gbps, p99| Row {
            point,
            values: vec![],
            seeds: vec![1],
            metrics: Metrics {
                delivered_gbps: gbps,
                fct_p99_slowdown: Some(p99),
                ..Metrics::default()
            },
            pareto: false,
        };
        let mut rows = vec![
            row(0, 10.0, 5.0),
            row(1, 9.0, 6.0),
            row(2, 11.0, 7.0),
            row(3, 10.0, 5.0),
        ];
        mark_pareto(&mut rows);
        // 1 is beaten by 0; 0 and 3 tie (neither beats the other); 2 has the most goodput.
        assert_eq!(
            rows.iter().map(|r| r.pareto).collect::<Vec<_>>(),
            [true, false, true, true]
        );
        // A point where no flow finished has no p99: it counted as 0, the best, and
        // knocked a point with a real p99 and the same other metrics off the front.
        let mut missing = vec![row(0, 10.0, 2.22), row(1, 10.0, 0.0)];
        missing[1].metrics.fct_p99_slowdown = None;
        mark_pareto(&mut missing);
        assert_eq!(
            missing.iter().map(|r| r.pareto).collect::<Vec<_>>(),
            [true, false]
        );
        let m = Metrics::median(&[rows[0].metrics, rows[1].metrics, rows[2].metrics]);
        assert_eq!((m.delivered_gbps, m.fct_p99_slowdown), (10.0, Some(6.0)));
    }

    /// Of an even count, the median is the mean of the two middle values: with two seeds
    /// it was the larger of each metric.
    #[test]
    fn the_median_of_two_runs_is_their_mean() {
        let run = |gbps, p99, drops, queue| Metrics {
            delivered_gbps: gbps,
            fct_p99_slowdown: p99,
            host_paused_ms: gbps / 10.0,
            drops,
            max_queue_bytes: queue,
            jain: None,
            busbw_gbytes_per_s: None,
        };
        let m = Metrics::median(&[
            run(10.0, Some(3.0), 3.0, 1000.0),
            run(12.0, Some(5.0), 4.0, 3000.0),
        ]);
        assert_eq!(m, run(11.0, Some(4.0), 3.5, 2000.0));
        let m = Metrics::median(&[
            run(10.0, Some(3.0), 1.0, 1.0),
            run(30.0, Some(9.0), 9.0, 9.0),
            run(12.0, Some(5.0), 4.0, 3.0),
            run(20.0, Some(8.0), 5.0, 4.0),
        ]);
        assert_eq!(m, run(16.0, Some(6.5), 4.5, 3.5));
        // A run where no flow finished is the slowest: half the runs without a p99 leave
        // the point without one; fewer, and it is the middle of the rest with them last.
        let none = run(10.0, None, 0.0, 0.0);
        let two = Metrics::median(&[run(10.0, Some(3.0), 0.0, 0.0), none]);
        assert_eq!(two.fct_p99_slowdown, None);
        let three = Metrics::median(&[
            run(10.0, Some(3.0), 0.0, 0.0),
            none,
            run(10.0, Some(2.0), 0.0, 0.0),
        ]);
        assert_eq!(three.fct_p99_slowdown, Some(3.0));
        assert_eq!(Metrics::median(&[none, none]).fct_p99_slowdown, None);
    }
}

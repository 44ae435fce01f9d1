//! `--budget`: a number of runs (the search's answer is then a function of its input
//! alone) or a wall time (`90s`, `20m`, `1h`: the answer then depends on how fast the
//! machine runs, as the runs made by the time it is up do).

use std::time::Duration;

/// The most runs a run budget may give.
pub(super) const MAX_RUNS: usize = 100_000;

/// The longest a time budget may be: a week.
const MAX_SECONDS: u64 = 7 * 24 * 3600;

/// What the search may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Budget {
    /// At most this many runs, the starting configuration's included.
    Runs(usize),
    /// No new run starts after this many seconds of wall time; runs in flight finish.
    Seconds(u64),
}

impl Budget {
    /// The runs the search may make: a time budget bounds them by the clock instead.
    pub(super) fn runs(self) -> usize {
        match self {
            Budget::Runs(n) => n,
            Budget::Seconds(_) => usize::MAX,
        }
    }

    /// The wall time, for a time budget.
    pub(super) fn time(self) -> Option<Duration> {
        match self {
            Budget::Runs(_) => None,
            Budget::Seconds(s) => Some(Duration::from_secs(s)),
        }
    }

    /// As the user would write it: `60 runs`, `20m`, `90s`, `1h30m`.
    pub(super) fn describe(self) -> String {
        match self {
            Budget::Runs(n) => format!("{n} runs"),
            Budget::Seconds(s) => {
                let (h, m, sec) = (s / 3600, s / 60 % 60, s % 60);
                let mut out = String::new();
                for (v, unit) in [(h, "h"), (m, "m"), (sec, "s")] {
                    if v > 0 {
                        out.push_str(&format!("{v}{unit}"));
                    }
                }
                out
            }
        }
    }
}

/// Reads `--budget`: `1200` (runs), `90s`, `20m` or `1h` (wall time).
pub(crate) fn parse(text: &str) -> Result<Budget, String> {
    let what = "give a number of runs (1 to 100000) or a wall time such as 90s, 20m or 1h";
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    if number.is_empty() {
        return Err(format!("{text}: {what}"));
    }
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text}: too large; {what}"))?;
    let per = match unit {
        "" => {
            return match usize::try_from(n) {
                Ok(runs @ 1..=MAX_RUNS) => Ok(Budget::Runs(runs)),
                _ => Err(format!("{text}: {what}")),
            };
        }
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => {
            return Err(format!(
                "{text}: unknown unit \"{unit}\" (s, m or h); {what}"
            ));
        }
    };
    match n.checked_mul(per) {
        Some(s @ 1..=MAX_SECONDS) => Ok(Budget::Seconds(s)),
        Some(0) => Err(format!("{text}: no time at all; {what}")),
        _ => Err(format!("{text}: more than a week; {what}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_runs_or_a_wall_time_and_nothing_else() {
        assert_eq!(parse("1200"), Ok(Budget::Runs(1200)));
        assert_eq!(parse("90s"), Ok(Budget::Seconds(90)));
        assert_eq!(parse("20m"), Ok(Budget::Seconds(1200)));
        assert_eq!(parse("1h"), Ok(Budget::Seconds(3600)));
        assert_eq!(Budget::Seconds(5400).describe(), "1h30m");
        assert_eq!(Budget::Runs(60).describe(), "60 runs");
        for (bad, says) in [
            ("0", "give a number of runs"),
            ("-5", "give a number of runs"),
            ("0m", "no time at all"),
            ("20x", "unknown unit \"x\""),
            ("20 min", "unknown unit \" min\""),
            ("m", "give a number of runs"),
            ("100001", "give a number of runs (1 to 100000)"),
            ("9999999h", "more than a week"),
            ("99999999999999999999", "too large"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.starts_with(bad) && e.contains(says), "{bad}: {e}");
        }
    }
}

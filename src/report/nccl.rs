//! The all-reduce table as nccl-tests' `all_reduce_perf` prints it (size, count, type,
//! redop, time, algbw, busbw, #wrong), with optional columns of the fabric's counts beside
//! each size, in pieces so that each row is printed as its size finishes.

use crate::endpoint::app::allreduce::AllReduceResult;
use std::fmt::Write as _;

/// The table's head: the title as a `#` comment, then the column names (nccl-tests', then
/// `extra_headers` of at most 9 characters) and their units. A table is this, then a
/// [`row`] as each size finishes, then the [`foot`].
pub fn head(title: &str, extra_headers: &[&str]) -> String {
    let mut out = format!("# {title}\n#\n");
    let extra: String = extra_headers.iter().map(|h| format!(" {h:>9}")).collect();
    let _ = writeln!(
        out,
        "# {:>10} {:>11} {:>6} {:>6} {:>10} {:>7} {:>7} {:>7}{}{extra}",
        "size",
        "count",
        "type",
        "redop",
        "time",
        "algbw",
        "busbw",
        "#wrong",
        gap(extra_headers.len())
    );
    let _ = writeln!(
        out,
        "# {:>10} {:>11} {:>6} {:>6} {:>10} {:>7} {:>7} {:>7}",
        "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", ""
    );
    out
}

/// One size's line, with `extra` values under the head's extra columns; a size that did
/// not finish says `timeout` in its time column.
pub fn row(r: &AllReduceResult, extra: &[u64]) -> String {
    row_unfinished_as(r, extra, "timeout")
}

/// As [`row`], a size that did not finish saying `why` in its time column (`interrupted`
/// when Ctrl-C or SIGTERM ended the run, `timeout` when its time limit did).
pub fn row_unfinished_as(r: &AllReduceResult, extra: &[u64], why: &str) -> String {
    let time = r
        .time_ns
        .map_or_else(|| why.to_owned(), |t| format!("{:.2}", t as f64 / 1e3));
    // No bandwidth for a size that did not finish, as no #wrong.
    let bw = |v: f64| match r.time_ns {
        Some(_) => format!("{v:.3}"),
        None => "-".to_owned(),
    };
    let values: String = extra.iter().map(|v| format!(" {v:>9}")).collect();
    format!(
        "  {:>10} {:>11} {:>6} {:>6} {:>10} {:>7} {:>7} {:>7}{}{values}\n",
        r.size,
        r.count(),
        "float",
        "sum",
        time,
        bw(r.algbw()),
        bw(r.busbw()),
        r.wrong.map_or_else(|| "-".to_owned(), |w| w.to_string()),
        gap(extra.len())
    )
}

/// nccl-tests' two summary lines over all the rows: the count of wrong values and the
/// average bus bandwidth over the sizes that finished; then, when some did not, a line
/// that says how many (they are neither checked nor averaged) and that their time limit
/// ended them. With none finished there is nothing to count wrong, and no average.
pub fn foot(rows: &[AllReduceResult]) -> String {
    foot_unfinished_as(rows, "timeout")
}

/// As [`foot`], the sizes that did not finish ended by `why` (as
/// [`row_unfinished_as`]'s).
pub fn foot_unfinished_as(rows: &[AllReduceResult], why: &str) -> String {
    let mut out = String::new();
    let wrong: u64 = rows.iter().filter_map(|r| r.wrong).sum();
    let unfinished = rows.iter().filter(|r| r.time_ns.is_none()).count();
    if unfinished == rows.len() && !rows.is_empty() {
        let _ = writeln!(
            out,
            "# Out of bounds values : - (nothing finished to check)"
        );
    } else {
        let _ = writeln!(
            out,
            "# Out of bounds values : {wrong} {}",
            if wrong == 0 { "OK" } else { "WRONG" }
        );
    }
    let done: Vec<f64> = rows
        .iter()
        .filter(|r| r.time_ns.is_some())
        .map(AllReduceResult::busbw)
        .collect();
    if !done.is_empty() {
        let _ = writeln!(
            out,
            "# Avg bus bandwidth    : {:.3}",
            done.iter().sum::<f64>() / done.len() as f64
        );
    }
    if unfinished > 0 {
        let _ = writeln!(
            out,
            "# Did not finish       : {unfinished} of {} size{} ({why}): not checked, not averaged",
            rows.len(),
            if rows.len() == 1 { "" } else { "s" }
        );
    }
    out
}

/// The space between nccl-tests' columns and the extra ones, when there are any.
fn gap(extra: usize) -> &'static str {
    if extra == 0 { "" } else { "  " }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_as_nccl_tests_prints_them() {
        let rows = [
            AllReduceResult {
                size: 8192,
                ranks: 4,
                time_ns: Some(8192),
                wrong: Some(3),
            },
            AllReduceResult {
                size: 16384,
                ranks: 4,
                time_ns: None,
                wrong: None,
            },
        ];
        let t =
            head("ring", &["CNPs tx"]) + &row(&rows[0], &[5]) + &row(&rows[1], &[7]) + &foot(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "# ring");
        assert!(lines[2].ends_with("#wrong     CNPs tx"), "{}", lines[2]);
        let first: Vec<&str> = lines[4].split_whitespace().collect();
        // 8192 B in 8.192 µs: algbw 1 GB/s, busbw 1.5 GB/s for 4 ranks.
        assert_eq!(
            first,
            [
                "8192", "2048", "float", "sum", "8.19", "1.000", "1.500", "3", "5"
            ]
        );
        // A size that did not finish: no time, nothing checked.
        assert!(lines[5].contains("timeout"));
        // No bandwidth (it printed 0.000) and nothing wrong: it was not checked.
        let second: Vec<&str> = lines[5].split_whitespace().collect();
        assert_eq!(&second[4..8], ["timeout", "-", "-", "-"]);
        assert_eq!(lines[6], "# Out of bounds values : 3 WRONG");
        assert_eq!(lines[7], "# Avg bus bandwidth    : 1.500");
        assert_eq!(
            lines[8],
            "# Did not finish       : 1 of 2 sizes (timeout): not checked, not averaged"
        );
        // Every size timed out: it said "0 OK".
        let foot = foot(&rows[1..]);
        assert_eq!(
            foot.lines().collect::<Vec<_>>(),
            [
                "# Out of bounds values : - (nothing finished to check)",
                "# Did not finish       : 1 of 1 size (timeout): not checked, not averaged"
            ]
        );
        // Stopped by Ctrl-C rather than by the limit (every unfinished size said
        // "timeout"); a size that finished is the same either way.
        let cut = row_unfinished_as(&rows[1], &[7], "interrupted");
        assert_eq!(cut.split_whitespace().nth(4), Some("interrupted"), "{cut}");
        assert_eq!(
            row_unfinished_as(&rows[0], &[5], "interrupted"),
            row(&rows[0], &[5])
        );
        // The foot says the same as the rows above it (it said "timeout" after a Ctrl-C).
        assert!(foot_unfinished_as(&rows, "interrupted").ends_with(
            "# Did not finish       : 1 of 2 sizes (interrupted): not checked, not averaged\n"
        ));
    }
}

//! The all-reduce table as nccl-tests' `all_reduce_perf` prints it (size, count, type,
//! redop, time, algbw, busbw, #wrong), with optional columns of the fabric's counts beside
//! each size.

use crate::endpoint::sweep::AllReduceResult;
use std::fmt::Write as _;

/// Another column beside the nccl-tests ones: its header and one value per row.
#[derive(Debug, Clone)]
pub struct ExtraColumn {
    /// Column header, at most 9 characters to stay aligned (`CE marked`).
    pub header: &'static str,
    /// One value per row, in the table's row order.
    pub values: Vec<u64>,
}

/// The table under `title` (one line, printed as a `#` comment), then nccl-tests' two
/// summary lines: the count of wrong values and the average bus bandwidth over the sizes
/// that finished.
pub fn allreduce_table(title: &str, rows: &[AllReduceResult], extra: &[ExtraColumn]) -> String {
    let mut out = format!("# {title}\n#\n");
    let extra_headers: String = extra.iter().map(|c| format!(" {:>9}", c.header)).collect();
    let gap = if extra.is_empty() { "" } else { "  " };
    let _ = writeln!(
        out,
        "# {:>10} {:>11} {:>6} {:>6} {:>10} {:>7} {:>7} {:>7}{gap}{extra_headers}",
        "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong"
    );
    let _ = writeln!(
        out,
        "# {:>10} {:>11} {:>6} {:>6} {:>10} {:>7} {:>7} {:>7}",
        "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", ""
    );
    for (i, r) in rows.iter().enumerate() {
        let time = r.time_ns.map_or_else(
            || "timeout".to_owned(),
            |t| format!("{:.2}", t as f64 / 1e3),
        );
        let values: String = extra
            .iter()
            .map(|c| format!(" {:>9}", c.values.get(i).copied().unwrap_or(0)))
            .collect();
        let _ = writeln!(
            out,
            "  {:>10} {:>11} {:>6} {:>6} {:>10} {:>7.3} {:>7.3} {:>7}{gap}{values}",
            r.size,
            r.count(),
            "float",
            "sum",
            time,
            r.algbw(),
            r.busbw(),
            r.wrong.map_or_else(|| "-".to_owned(), |w| w.to_string())
        );
    }
    let wrong: u64 = rows.iter().filter_map(|r| r.wrong).sum();
    let _ = writeln!(
        out,
        "# Out of bounds values : {wrong} {}",
        if wrong == 0 { "OK" } else { "WRONG" }
    );
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
    out
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
        let extra = [ExtraColumn {
            header: "CNPs tx",
            values: vec![5, 7],
        }];
        let t = allreduce_table("ring", &rows, &extra);
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
        assert_eq!(lines[5].split_whitespace().nth(7), Some("-"));
        assert_eq!(lines[6], "# Out of bounds values : 3 WRONG");
        assert_eq!(lines[7], "# Avg bus bandwidth    : 1.500");
    }
}

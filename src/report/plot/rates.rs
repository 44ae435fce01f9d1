//! What the QPs send: DCQCN's rate and the measured throughput.

use super::toolkit::{Extras, Result, SIZE, largest, lines, of_kind, plot_err};
use crate::series::{Column, ColumnKind, Series};
use plotters::prelude::*;

/// Each sending QP's rate over time: DCQCN's Rc above, the measured payload throughput
/// (averaged over 100 µs and at least 5 samples) below.
pub fn rates_svg(series: &Series, title: &str) -> Result<String> {
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (SIZE.0, SIZE.1 * 2 - 120)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let (upper, lower) = root.split_vertically(SIZE.1 - 60);
        let rc = largest(of_kind(series, ColumnKind::RcGbps));
        let rt = of_kind(series, ColumnKind::RtGbps);
        let cnps = of_kind(series, ColumnKind::Cnps);
        let smoothed = smooth(series, &largest(of_kind(series, ColumnKind::RateGbps)));
        // One QP, one colour, in both panels.
        let mut palette: Vec<String> = rc.iter().map(|c| c.label.clone()).collect();
        for c in &smoothed {
            if !palette.contains(&c.label) {
                palette.push(c.label.clone());
            }
        }
        lines(
            &upper,
            series,
            &rc,
            &format!("DCQCN Rc per QP (target Rt dashed, CNPs as ticks): {title}"),
            "Rc (Gb/s)",
            false,
            1.0,
            Extras {
                dashed: &rt,
                ticks: &cnps,
                palette: Some(&palette),
                empty: Some(
                    "no QP's Rc was sampled: per-QP rates are kept for [[flow]]s and all-reduce ranks, not workload flows",
                ),
                ..Extras::default()
            },
        )?;
        let (lower_title, shown) = summarised(smoothed);
        // The summary lines get colours of their own, after every QP's.
        for c in &shown {
            if !palette.contains(&c.label) {
                palette.push(c.label.clone());
            }
        }
        let refs: Vec<&Column> = shown.iter().collect();
        lines(
            &lower,
            series,
            &refs,
            &lower_title,
            "throughput (Gb/s)",
            false,
            1.0,
            Extras {
                palette: Some(&palette),
                ..Extras::default()
            },
        )?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Most QPs drawn one by one in the throughput panel; past that, the busiest of them,
/// the mean of the others, and the total.
const THROUGHPUT_LINES: usize = 4;

/// The throughput panel's title and lines: every QP when there are few; otherwise the
/// [`THROUGHPUT_LINES`] − 1 busiest (by mean), "the other N, mean per QP" and "all N QPs,
/// total", so that the lines do not cover each other.
fn summarised(columns: Vec<Column>) -> (String, Vec<Column>) {
    if columns.len() <= THROUGHPUT_LINES {
        return ("Measured payload throughput per QP".to_owned(), columns);
    }
    let mean = |c: &Column| c.values.iter().sum::<f64>() / c.values.len().max(1) as f64;
    let mut columns = columns;
    columns.sort_by(|a, b| mean(b).total_cmp(&mean(a)));
    let n = columns.len();
    let len = columns[0].values.len();
    let sum_of = |cs: &[Column]| -> Vec<f64> {
        (0..len)
            .map(|i| cs.iter().map(|c| c.values[i]).sum::<f64>())
            .collect()
    };
    let total = sum_of(&columns);
    let rest = &columns[THROUGHPUT_LINES - 1..];
    let others: Vec<f64> = sum_of(rest)
        .into_iter()
        .map(|v| v / rest.len() as f64)
        .collect();
    let template = columns[0].clone();
    let mut shown: Vec<Column> = columns[..THROUGHPUT_LINES - 1].to_vec();
    shown.push(Column {
        label: format!("other {}, mean per QP", rest.len()),
        values: others,
        ..template.clone()
    });
    shown.push(Column {
        label: format!("all {n} QPs, total"),
        values: total,
        ..template
    });
    (
        format!(
            "Measured payload throughput: the {} busiest QPs, the mean of the other {}, the total",
            THROUGHPUT_LINES - 1,
            rest.len()
        ),
        shown,
    )
}

/// Rates averaged over a trailing window of 100 µs and at least 5 samples.
fn smooth(series: &Series, columns: &[&Column]) -> Vec<Column> {
    let step = series
        .times
        .get(1)
        .zip(series.times.first())
        .map_or(1, |(b, a)| (b.0 - a.0).max(1));
    let window = (100_000 / step).max(5) as usize;
    columns
        .iter()
        .map(|c| {
            let mut sum = 0.0;
            let values = (0..c.values.len())
                .map(|i| {
                    sum += c.values[i];
                    if i >= window {
                        sum -= c.values[i - window];
                    }
                    sum / (i + 1).min(window) as f64
                })
                .collect();
            Column {
                values,
                ..(*c).clone()
            }
        })
        .collect()
}

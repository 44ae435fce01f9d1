//! The report folder of a run (`sim --out`, `lab --out`): report.json, series.csv and
//! the four plots, written the same way for the simulator and the lab.

use super::plot::{self, PlotError};
use crate::output::{self, OutputError};
use crate::series::Series;
use std::path::Path;

/// The files of a report folder, in the order they are written.
pub const FILES: [&str; 6] = [
    "report.json",
    "series.csv",
    "queues.svg",
    "rates.svg",
    "pauses.svg",
    "pgs.svg",
];

/// The FCT plot, written when the run had workload flows.
pub const FCT_FILE: &str = "fct.svg";

/// A report folder that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A file or the folder could not be written.
    #[error(transparent)]
    Write(#[from] OutputError),
    /// A plot could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// The report could not be serialised.
    #[error("report.json: {0}")]
    Json(#[from] serde_json::Error),
}

/// Writes the report `json`, the series as CSV and its plots titled `title` (the queue
/// plot with `thresholds` dashed), and with workload `flows` their FCT plot
/// ([`FCT_FILE`]), into `dir`; the time-series plots from `plots_from` on (the CSV
/// keeps every row),
/// making the folder (its parent must exist: see [`output::check_folder`]). Everything is
/// drawn before anything is written, and each file appears whole or not at all. An
/// earlier run's FCT plot, when this run has none, is removed once the rest is written.
/// The names of the files removed.
pub fn write(
    dir: &Path,
    json: &serde_json::Value,
    series: &Series,
    title: &str,
    thresholds: &[plot::Threshold],
    flows: &[crate::sim::fct::FlowFct],
    plots_from: crate::time::Nanos,
) -> Result<Vec<&'static str>, BundleError> {
    let mut csv = Vec::new();
    series
        .write_csv(&mut csv)
        .expect("writing CSV into memory cannot fail");
    let window;
    let plotted = if plots_from > crate::time::Nanos::ZERO {
        window = series.since(plots_from);
        &window
    } else {
        series
    };
    let files: [Vec<u8>; 6] = [
        (serde_json::to_string_pretty(json)? + "\n").into_bytes(),
        csv,
        plot::queues_svg(plotted, title, thresholds)?.into_bytes(),
        plot::rates_svg(plotted, title)?.into_bytes(),
        plot::pauses_svg(plotted, title)?.into_bytes(),
        plot::pgs_svg(plotted, title)?.into_bytes(),
    ];
    let fct = if flows.is_empty() {
        None
    } else {
        Some(plot::fct_svg(flows, title)?.into_bytes())
    };
    output::make_folder(dir)?;
    for (name, bytes) in FILES.iter().zip(&files) {
        output::write_whole(&dir.join(name), bytes)?;
    }
    match fct {
        Some(bytes) => {
            output::write_whole(&dir.join(FCT_FILE), &bytes)?;
            Ok(Vec::new())
        }
        None => Ok(output::remove_stale(dir, &[FCT_FILE])?),
    }
}

/// Removes a report folder an earlier run wrote: its files ([`FILES`], [`FCT_FILE`]),
/// then the folder itself if nothing else is left in it (a file of the user's keeps it).
/// The names of the files removed.
pub fn remove(dir: &Path) -> Result<Vec<&'static str>, OutputError> {
    let mut names = FILES.to_vec();
    names.push(FCT_FILE);
    let removed = output::remove_stale(dir, &names)?;
    // Fails when something else is in it, or it is not there: both leave it as it is.
    let _ = std::fs::remove_dir(dir);
    Ok(removed)
}

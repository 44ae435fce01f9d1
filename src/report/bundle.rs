//! The report folder of a run (`sim --out`, `lab --report`): report.json, series.csv and
//! the three plots, written the same way for the simulator and the lab.

use super::plot::{self, PlotError};
use crate::series::Series;
use std::io;
use std::path::{Path, PathBuf};

/// The files of a report folder, in the order they are written.
pub const FILES: [&str; 5] = [
    "report.json",
    "series.csv",
    "queues.svg",
    "rates.svg",
    "pauses.svg",
];

/// A report folder that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A plot could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// The report could not be serialised.
    #[error("report.json: {0}")]
    Json(#[from] serde_json::Error),
}

/// Writes the report `json`, the series as CSV and its plots titled `title` into `dir`
/// (which must exist).
pub fn write(
    dir: &Path,
    json: &serde_json::Value,
    series: &Series,
    title: &str,
) -> Result<(), BundleError> {
    let put = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|source| BundleError::Write { path, source })
    };
    put(
        "report.json",
        (serde_json::to_string_pretty(json)? + "\n").as_bytes(),
    )?;
    let mut csv = Vec::new();
    series
        .write_csv(&mut csv)
        .map_err(|source| BundleError::Write {
            path: dir.join("series.csv"),
            source,
        })?;
    put("series.csv", &csv)?;
    put("queues.svg", plot::queues_svg(series, title)?.as_bytes())?;
    put("rates.svg", plot::rates_svg(series, title)?.as_bytes())?;
    put("pauses.svg", plot::pauses_svg(series, title)?.as_bytes())?;
    Ok(())
}

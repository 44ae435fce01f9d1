//! SVG plots of a simulation's time series (plotters): queue depth per queue, each QP's
//! rate (DCQCN's Rc and the measured throughput), and PFC pause intervals.

mod buffers;
mod fct;
mod pauses;
mod rates;
mod runs;
mod search;
mod toolkit;

pub use buffers::{ecn_thresholds, pgs_svg, queues_svg};
pub use fct::fct_svg;
pub use pauses::pauses_svg;
pub use rates::rates_svg;
pub use runs::{bars_svg, heatmap_svg};
pub use search::{Tried, search_svg};
pub use toolkit::{PlotError, Threshold};

#[cfg(test)]
mod tests;

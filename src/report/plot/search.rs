//! How a search went: the objective of every point tried, in the order tried.

use super::toolkit::{Result, SIZE, plot_err};
use plotters::prelude::*;

/// One point a search tried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tried {
    /// Its number, in the order tried (0: the starting configuration).
    pub id: usize,
    /// Its value of the objective over the seeds it ran on (positive).
    pub value: f64,
    /// True when it ran on every seed (a finalist), false when halving dropped it early.
    pub finalist: bool,
    /// True when it broke a constraint.
    pub rejected: bool,
}

/// Which points a series of the plot draws.
type Kind = fn(&Tried) -> bool;

/// The objective of every point tried against its number: finalists, points dropped early
/// and points that broke a constraint apart, the start marked, and the best finalist so
/// far as a step line. The y axis is logarithmic when the values span a decade or more.
pub fn search_svg(points: &[Tried], title: &str, y_desc: &str) -> Result<String> {
    let values = || points.iter().map(|p| p.value).filter(|v| *v > 0.0);
    let lo = values().fold(f64::INFINITY, f64::min);
    let hi = values().fold(0.0f64, f64::max);
    let (lo, hi) = if lo.is_finite() {
        (lo, hi)
    } else {
        (1.0, 10.0)
    };
    let x_max = points.iter().map(|p| p.id).max().unwrap_or(1).max(1) as f64;
    let mut best: Vec<(f64, f64)> = Vec::new();
    for p in points.iter().filter(|p| p.finalist && !p.rejected) {
        if best.last().is_none_or(|b| p.value < b.1) {
            if let Some(&(_, v)) = best.last() {
                best.push((p.id as f64, v));
            }
            best.push((p.id as f64, p.value));
        }
    }
    if let Some(&(_, v)) = best.last() {
        best.push((x_max, v));
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let builder = |root| {
            let mut b = ChartBuilder::on(root);
            b.caption(title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(64);
            b
        };
        let kinds: [(&str, RGBColor, Kind); 3] = [
            ("dropped after fewer seeds", RGBColor(150, 150, 150), |p| {
                !p.finalist && !p.rejected
            }),
            ("ran on every seed", BLUE, |p| p.finalist && !p.rejected),
            ("broke a constraint", RED, |p| p.rejected),
        ];
        // A decade or more: log scale, where the good points (low values) stay apart.
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc("point tried, in order (0 is the start)")
                    .y_desc(y_desc)
                    .x_label_formatter(&|v| format!("{v:.0}"))
                    .y_label_formatter(&|v| short(*v))
                    .draw()
                    .map_err(plot_err)?;
                for (name, colour, pick) in kinds {
                    chart
                        .draw_series(
                            points
                                .iter()
                                .filter(|p| pick(p) && p.value > 0.0)
                                .map(|p| Circle::new((p.id as f64, p.value), 3, colour.filled())),
                        )
                        .map_err(plot_err)?
                        .label(name)
                        .legend(move |(x, y)| Circle::new((x + 10, y), 3, colour.filled()));
                }
                chart
                    .draw_series(LineSeries::new(best.clone(), GREEN.stroke_width(2)))
                    .map_err(plot_err)?
                    .label("best that ran on every seed, so far")
                    .legend(|(x, y)| {
                        PathElement::new([(x, y), (x + 20, y)], GREEN.stroke_width(2))
                    });
                if let Some(start) = points.iter().find(|p| p.id == 0) {
                    chart
                        .draw_series([TriangleMarker::new((0.0, start.value), 7, BLACK.filled())])
                        .map_err(plot_err)?
                        .label("the start")
                        .legend(|(x, y)| TriangleMarker::new((x + 10, y), 5, BLACK.filled()));
                }
                super::toolkit::series_legend(&mut chart)?;
            }};
        }
        if hi >= 10.0 * lo {
            draw!(
                builder(&root)
                    .build_cartesian_2d(-0.5..x_max + 0.5, (lo * 0.8..hi * 1.25).log_scale())
                    .map_err(plot_err)?
            );
        } else {
            let pad = (hi - lo).max(hi * 0.05);
            draw!(
                builder(&root)
                    .build_cartesian_2d(
                        -0.5..x_max + 0.5,
                        (lo - pad * 0.1).max(0.0)..hi + pad * 0.2
                    )
                    .map_err(plot_err)?
            );
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// A value with about three significant digits, for an axis label.
fn short(v: f64) -> String {
    match v.abs() {
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

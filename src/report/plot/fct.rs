//! How long flows took: FCT slowdown against flow size.

use super::toolkit::{Result, SIZE, plot_err};
use plotters::prelude::*;

/// Workload flows' FCT slowdown against flow size, both on log scales: a dot per finished
/// flow, and the p50 and p99 of each size bucket drawn through the bucket's median size.
pub fn fct_svg(flows: &[crate::sim::fct::FlowFct], title: &str) -> Result<String> {
    use crate::sim::fct::{BUCKETS, nearest_rank};
    let dots: Vec<(f64, f64)> = flows
        .iter()
        .filter_map(|f| Some((f.bytes.max(1) as f64, f.slowdown()?.max(1e-3))))
        .collect();
    // Per bucket: (median size, p50, p99) of the finished flows.
    let mut marks: Vec<(f64, f64, f64)> = Vec::new();
    for &(_, min, max) in &BUCKETS {
        let mut mine: Vec<(f64, f64)> = dots
            .iter()
            .copied()
            .filter(|&(b, _)| (min as f64..=max as f64).contains(&b))
            .collect();
        if mine.is_empty() {
            continue;
        }
        mine.sort_by(|a, b| a.0.total_cmp(&b.0));
        let size = mine[mine.len() / 2].0;
        let mut slow: Vec<f64> = mine.iter().map(|d| d.1).collect();
        slow.sort_by(f64::total_cmp);
        if let (Some(p50), Some(p99)) = (nearest_rank(&slow, 0.5), nearest_rank(&slow, 0.99)) {
            marks.push((size, p50, p99));
        }
    }
    let x_min = dots
        .iter()
        .map(|d| d.0)
        .fold(f64::INFINITY, f64::min)
        .min(1e3);
    let x_max = dots
        .iter()
        .map(|d| d.0)
        .fold(1.0, f64::max)
        .max(x_min * 10.0);
    let y_max = dots.iter().map(|d| d.1).fold(2.0, f64::max) * 1.5;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("FCT slowdown (FCT / ideal FCT) by flow size: {title}"),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(
                (x_min * 0.8..x_max * 1.25).log_scale(),
                (0.8..y_max).log_scale(),
            )
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("flow size (bytes)")
            .y_desc("slowdown")
            .x_label_formatter(&|v| crate::sim::fct::decimal_bytes(*v))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(plot_err)?;
        chart
            .draw_series(
                dots.iter()
                    .map(|&p| Circle::new(p, 2, RGBColor(120, 120, 120).mix(0.35).filled())),
            )
            .map_err(plot_err)?
            .label(format!("a flow ({} finished)", dots.len()))
            .legend(|(x, y)| Circle::new((x + 10, y), 3, RGBColor(120, 120, 120).filled()));
        for (name, color, pick) in [
            ("p50 per size bucket", BLUE, 1usize),
            ("p99 per size bucket", RED, 2),
        ] {
            let line: Vec<(f64, f64)> = marks
                .iter()
                .map(|m| (m.0, if pick == 1 { m.1 } else { m.2 }))
                .collect();
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                .map_err(plot_err)?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(line.into_iter().map(|p| Circle::new(p, 4, color.filled())))
                .map_err(plot_err)?;
        }
        super::toolkit::series_legend(&mut chart)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

//! SVG plots of a simulation's time series (plotters): queue depth per queue, each QP's
//! rate (DCQCN's Rc and the measured throughput), and PFC pause intervals.

use crate::series::{Column, ColumnKind, Series};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Most points drawn per line: longer series are bucketed (queues keep each bucket's peak,
/// rates its mean), so a plot stays a few hundred KB.
const MAX_POINTS: usize = 2000;
/// Most lines in one chart (the largest by peak); a legend of more is unreadable.
const MAX_LINES: usize = 12;
const SIZE: (u32, u32) = (1000, 520);

/// A plot that could not be drawn (plotters' drawing errors, as text: they carry the
/// backend's error type, which differs per backend).
#[derive(Debug, Clone, thiserror::Error)]
#[error("drawing the plot: {0}")]
pub struct PlotError(String);

type Result<T> = std::result::Result<T, PlotError>;

fn plot_err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError(format!("{e:?}"))
}

fn ms(series: &Series, row: usize) -> f64 {
    series.times[row].0 as f64 / 1e6
}

/// (time ms, value) points of `column`, bucketed to at most [`MAX_POINTS`], values
/// multiplied by `scale`.
fn points(series: &Series, column: &Column, peak: bool, scale: f64) -> Vec<(f64, f64)> {
    let n = column.values.len();
    let bucket = n.div_ceil(MAX_POINTS).max(1);
    (0..n)
        .step_by(bucket)
        .map(|start| {
            let vals = &column.values[start..(start + bucket).min(n)];
            let v = if peak {
                vals.iter().copied().fold(0.0, f64::max)
            } else {
                vals.iter().sum::<f64>() / vals.len() as f64
            };
            (ms(series, start), v * scale)
        })
        .collect()
}

fn largest(mut cols: Vec<&Column>) -> Vec<&Column> {
    let peak = |c: &Column| c.values.iter().copied().fold(0.0, f64::max);
    cols.sort_by(|a, b| peak(b).total_cmp(&peak(a)));
    cols.truncate(MAX_LINES);
    cols
}

fn span_ms(series: &Series) -> f64 {
    series
        .times
        .last()
        .map_or(1.0, |t| (t.0 as f64 / 1e6).max(1e-3))
}

/// Lines of `columns` on one chart area.
fn lines(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    series: &Series,
    columns: &[&Column],
    title: &str,
    y_desc: &str,
    peak: bool,
    scale: f64,
) -> Result<()> {
    let data: Vec<Vec<(f64, f64)>> = columns
        .iter()
        .map(|c| points(series, c, peak, scale))
        .collect();
    let top = data
        .iter()
        .flatten()
        .map(|p| p.1)
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.08;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..span_ms(series), 0.0..top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("time (ms)")
        .y_desc(y_desc)
        .draw()
        .map_err(plot_err)?;
    if columns.is_empty() {
        area.draw(&Text::new(
            "nothing to show in this run",
            (120, 80),
            ("sans-serif", 16),
        ))
        .map_err(plot_err)?;
        return Ok(());
    }
    for (i, (c, pts)) in columns.iter().zip(data).enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(1)))
            .map_err(plot_err)?
            .label(c.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()
        .map_err(plot_err)?;
    Ok(())
}

fn of_kind(series: &Series, kind: ColumnKind) -> Vec<&Column> {
    series
        .kept()
        .into_iter()
        .filter(|c| c.kind == kind)
        .collect()
}

/// Egress queue depth over time, KB, one line per queue that held anything.
pub fn queues_svg(series: &Series, title: &str) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let cols = largest(of_kind(series, ColumnKind::QueueBytes));
        let title = format!("Egress queue depth: {title}");
        lines(&root, series, &cols, &title, "queue (KB)", true, 1e-3)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

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
        lines(
            &upper,
            series,
            &rc,
            &format!("DCQCN current rate Rc per QP: {title}"),
            "Rc (Gb/s)",
            false,
            1.0,
        )?;
        let smoothed = smooth(series, &largest(of_kind(series, ColumnKind::RateGbps)));
        let refs: Vec<&Column> = smoothed.iter().collect();
        lines(
            &lower,
            series,
            &refs,
            "Measured payload throughput per QP",
            "throughput (Gb/s)",
            false,
            1.0,
        )?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
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

/// PFC pause intervals: one row per switch ingress priority group that sent XOFF (red:
/// the switch pausing its peer), per switch queue and host that was paused (blue), and
/// per queue the watchdog held as stormed (orange), a bar while it lasted.
pub fn pauses_svg(series: &Series, title: &str) -> Result<String> {
    let rows: Vec<&Column> = series
        .kept()
        .into_iter()
        .filter(|c| {
            matches!(
                c.kind,
                ColumnKind::Xoff | ColumnKind::Paused | ColumnKind::Stormed
            )
        })
        .collect();
    let mut svg = String::new();
    {
        let height = (160 + 28 * rows.len() as u32).max(260);
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let labels: Vec<String> = rows.iter().map(|c| c.label.clone()).collect();
        let n = rows.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("PFC pause intervals: {title}"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(200)
            .build_cartesian_2d(0.0..span_ms(series), 0.0..n as f64)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("time (ms)")
            .y_labels(0)
            .disable_y_mesh()
            .draw()
            .map_err(plot_err)?;
        // Row names beside the rows' middles (plotters' own labels sit on round numbers).
        for (i, label) in labels.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(0.0, i as f64 + 0.5));
            let style = TextStyle::from(("sans-serif", 13).into_font())
                .pos(Pos::new(HPos::Right, VPos::Center));
            root.draw(&Text::new(label.clone(), (x - 8, y), style))
                .map_err(plot_err)?;
        }
        if rows.is_empty() {
            root.draw(&Text::new(
                "no PFC pause in this run",
                (260, 110),
                ("sans-serif", 16),
            ))
            .map_err(plot_err)?;
        }
        for (i, c) in rows.iter().enumerate() {
            let color = match c.kind {
                ColumnKind::Xoff => RGBColor(200, 40, 40),
                ColumnKind::Stormed => RGBColor(230, 140, 20),
                _ => RGBColor(40, 90, 200),
            };
            let y0 = i as f64 + 0.2;
            let y1 = i as f64 + 0.8;
            let bars = series.intervals(c).into_iter().map(|(a, b)| {
                // A pause shorter than a sample still shows, one sample wide.
                let (a, b) = (a.0 as f64 / 1e6, b.0 as f64 / 1e6);
                Rectangle::new(
                    [(a, y0), (b.max(a + span_ms(series) / 2000.0), y1)],
                    color.filled(),
                )
            });
            chart.draw_series(bars).map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

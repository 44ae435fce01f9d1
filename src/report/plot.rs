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
/// Width of the legend column at the right of a line chart, pixels.
const LEGEND_WIDTH: u32 = 170;

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

/// Where the time axis starts: the first sample (0 unless the series was cut to a
/// window), ms.
fn start_ms(series: &Series) -> f64 {
    series.times.first().map_or(0.0, |t| t.0 as f64 / 1e6)
}

fn span_ms(series: &Series) -> f64 {
    series
        .times
        .last()
        .map_or(1.0, |t| (t.0 as f64 / 1e6).max(start_ms(series) + 1e-3))
}

/// A horizontal line a person tuning the switch looks for: a threshold, in the plot's
/// units before scaling (bytes for queues).
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// What it is ("q3 Kmin").
    pub label: String,
    /// Where, in the column's unit.
    pub value: f64,
}

/// The lines a queue plot draws: the RED-ECN thresholds (Kmin, Kmax) of every queue of
/// `cfg` that marks, and the shared buffer all queues draw on (the most any queue can
/// hold beyond its reserve).
pub fn ecn_thresholds(cfg: &crate::config::SwitchConfig) -> Vec<Threshold> {
    let mut out = Vec::new();
    for (q, queue) in cfg.queues.iter().enumerate() {
        if let Some(p) = queue.ecn {
            out.push(Threshold {
                label: format!("q{q} Kmin"),
                value: p.kmin_bytes as f64,
            });
            out.push(Threshold {
                label: format!("q{q} Kmax"),
                value: p.kmax_bytes as f64,
            });
        }
    }
    out.push(Threshold {
        label: "shared buffer".to_owned(),
        value: cfg.shared_bytes as f64,
    });
    out
}

/// Bytes per KiB: the plots count buffers in KiB (1024 bytes), as the CLI's `K` does.
const KIB: f64 = 1024.0;

/// A tick label: a number with no trailing zeros ("20", not "20.0"; "2.5").
fn tick(v: &f64) -> String {
    let text = format!("{v:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// The y-axis top for `data`: a little above the highest point, unless that point is a
/// start-up spike (in the first 5 % of the run, more than three times anything after
/// it), which is then left off the scale and returned to be named.
fn y_top(data: &[Vec<(f64, f64)>], start: f64, end: f64) -> (f64, Option<(f64, f64)>) {
    let early = start + (end - start) * 0.05;
    let all = data.iter().flatten().fold(
        (0.0, 0.0),
        |m: (f64, f64), p| {
            if p.1 > m.1 { (p.0, p.1) } else { m }
        },
    );
    let later = data
        .iter()
        .flatten()
        .filter(|p| p.0 > early)
        .map(|p| p.1)
        .fold(0.0, f64::max);
    if all.0 <= early && later > 0.0 && all.1 > 3.0 * later {
        (later * 1.15, Some(all))
    } else if all.1 > 0.0 {
        (all.1 * 1.08, None)
    } else {
        // Nothing above zero: a unit scale, not ticks that all read 0.0.
        (1.0, None)
    }
}

/// Row `row` of a chart's legend column: a solid (or dashed) sample of `color`, then
/// `label`.
fn legend_entry(
    legend: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    row: usize,
    color: RGBAColor,
    label: &str,
    dash: Dash,
) -> Result<()> {
    let y = 48 + 18 * row as i32;
    let segments: &[(i32, i32)] = match dash {
        Dash::Solid => &[(4, 24)],
        Dash::Long => &[(4, 10), (16, 24)],
        Dash::Dots => &[(4, 6), (9, 11), (14, 16), (19, 21)],
    };
    for &(a, b) in segments {
        let width = if dash == Dash::Solid { 2 } else { 1 };
        legend
            .draw(&PathElement::new(
                vec![(a, y), (b, y)],
                color.stroke_width(width),
            ))
            .map_err(plot_err)?;
    }
    let style =
        TextStyle::from(("sans-serif", 12).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    legend
        .draw(&Text::new(label.to_owned(), (30, y), style))
        .map_err(plot_err)?;
    Ok(())
}

/// How a line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dash {
    Solid,
    /// A moving threshold (XOFF, DCQCN's target rate).
    Long,
    /// A second moving threshold beside the first (XON).
    Dots,
}

/// A line's colour: by its place in `palette` (labels in colour order) when one is
/// given, so that one QP has one colour in every panel; else by its place in `columns`.
fn pick(palette: Option<&[String]>, columns: &[&Column], label: &str) -> Option<RGBAColor> {
    // The throughput panel's summary lines stand apart from every QP's colour.
    if label.starts_with("all ") && label.ends_with(" QPs, total") {
        return Some(BLACK.to_rgba());
    }
    if label.starts_with("other ") && label.ends_with(", mean per QP") {
        return Some(RGBColor(128, 128, 128).to_rgba());
    }
    match palette {
        Some(p) => p.iter().position(|l| l == label),
        None => columns.iter().position(|c| c.label == label),
    }
    .map(|i| Palette99::pick(i).to_rgba())
}

/// What a line chart draws besides its lines.
#[derive(Default)]
struct Extras<'a> {
    /// Fixed thresholds (in the columns' unit), dashed grey where they fall within the
    /// scale, named above it otherwise.
    thresholds: &'a [Threshold],
    /// Moving values drawn dashed, in the colour of the line with the same label (grey
    /// when none); they never set the scale.
    dashed: &'a [&'a Column],
    /// Event counts per sample: a tick at the foot of the chart wherever one is
    /// non-zero, in the colour of the line with the same label.
    ticks: &'a [&'a Column],
    /// Labels in colour order, shared by the panels of one figure.
    palette: Option<&'a [String]>,
    /// What an empty chart says (default: "nothing to show in this run").
    empty: Option<&'a str>,
}

/// Lines of `columns` on one chart area (`peak`: buckets keep their peak, else their
/// mean; values times `scale`), with the `extras`.
#[allow(clippy::too_many_arguments)]
fn lines(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    series: &Series,
    columns: &[&Column],
    title: &str,
    y_desc: &str,
    peak: bool,
    scale: f64,
    extras: Extras<'_>,
) -> Result<()> {
    let Extras {
        thresholds,
        dashed,
        ticks,
        palette,
        empty,
    } = extras;
    let color_of = |label: &str| {
        columns
            .iter()
            .any(|c| c.label == label)
            .then(|| pick(palette, columns, label))
            .flatten()
    };
    let data: Vec<Vec<(f64, f64)>> = columns
        .iter()
        .map(|c| points(series, c, peak, scale))
        .collect();
    let (data_top, spike) = y_top(&data, start_ms(series), span_ms(series));
    // Dashed columns (moving thresholds): see the scale below.
    let dashed_data: Vec<Vec<(f64, f64)>> = dashed
        .iter()
        .map(|c| points(series, c, false, scale))
        .collect();
    // Thresholds, fixed or moving, up to twice the data's height widen the scale (a PG's
    // use means something against its XOFF point); higher ones are named, or cut.
    let moving_tops = dashed_data
        .iter()
        .flat_map(|pts| pts.iter().map(|p| p.1))
        .filter(|&v| v <= data_top * 2.0);
    let top = thresholds
        .iter()
        .map(|t| t.value * scale)
        .filter(|&v| v <= data_top * 2.0)
        .chain(moving_tops)
        .fold(data_top, |m, v| m.max(v * 1.08));
    // The axis's unit ("KiB" of "queue (KiB, 1 KiB = 1024 B)"), for values in the notes.
    let unit = y_desc
        .split(['(', ',', ')'])
        .nth(1)
        .map_or_else(String::new, |u| format!(" {}", u.trim()));
    let mut notes: Vec<String> = thresholds
        .iter()
        .filter(|t| t.value * scale > top)
        .map(|t| format!("{} {:.1}{unit} above the scale", t.label, t.value * scale))
        .collect();
    if let Some((at, v)) = spike {
        notes.push(format!(
            "start-up peak {v:.1}{unit} at {at:.2} ms above the scale"
        ));
    }
    // Dashed lines off the scale, named; many of them (a QP's Rt each) counted, in a line.
    let (mut always, mut at_times) = (Vec::new(), Vec::new());
    for (c, pts) in dashed.iter().zip(&dashed_data) {
        if pts.iter().all(|p| p.1 > top) {
            always.push(c.label.as_str());
        } else if pts.iter().any(|p| p.1 > top) {
            at_times.push(c.label.as_str());
        }
    }
    for (labels, when) in [(always, ""), (at_times, " at times")] {
        match labels.len() {
            0 => {}
            1 | 2 => notes.extend(labels.iter().map(|l| format!("{l} above the scale{when}"))),
            n => notes.push(format!(
                "{n} of the {} dashed lines above the scale{when}",
                dashed.len()
            )),
        }
    }
    // The legend gets a column of its own at the right, so that it covers no line; the
    // notes a band of their own between the title and the plot, for the same reason.
    let width = area.dim_in_pixel().0;
    let (area, legend) = area.split_horizontally(width.saturating_sub(LEGEND_WIDTH));
    let (head, area) = if notes.is_empty() {
        area.split_vertically(0)
    } else {
        area.split_vertically(TITLE_BAND + NOTE_LINE * notes.len() as u32)
    };
    let area = &area;
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64);
    if notes.is_empty() {
        builder.caption(title, ("sans-serif", 18));
    } else {
        builder.margin_top(4);
        let centre = (head.dim_in_pixel().0 / 2) as i32;
        let style =
            TextStyle::from(("sans-serif", 18).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        head.draw(&Text::new(title.to_owned(), (centre, 12), style))
            .map_err(plot_err)?;
        for (k, note) in notes.iter().enumerate() {
            let style = TextStyle::from(("sans-serif", 12).into_font())
                .color(&RGBColor(90, 90, 90))
                .pos(Pos::new(HPos::Left, VPos::Top));
            let y = (TITLE_BAND + NOTE_LINE * k as u32) as i32;
            head.draw(&Text::new(note.clone(), (12 + 64 + 6, y), style))
                .map_err(plot_err)?;
        }
    }
    let mut chart = builder
        .build_cartesian_2d(start_ms(series)..span_ms(series), 0.0..top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("time (ms)")
        .y_desc(y_desc)
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .draw()
        .map_err(plot_err)?;
    if columns.is_empty() {
        area.draw(&Text::new(
            empty.unwrap_or("nothing to show in this run").to_owned(),
            (120, 80),
            ("sans-serif", 16),
        ))
        .map_err(plot_err)?;
        return Ok(());
    }
    for (i, (c, pts)) in columns.iter().zip(data).enumerate() {
        let color = pick(palette, columns, &c.label).unwrap_or(Palette99::pick(i).to_rgba());
        let pts = pts.into_iter().map(|(x, y)| (x, y.min(top)));
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(1)))
            .map_err(plot_err)?;
        legend_entry(&legend, i, color, &c.label, Dash::Solid)?;
    }
    let grey = RGBColor(90, 90, 90);
    for (i, (c, pts)) in dashed.iter().zip(dashed_data).enumerate() {
        let color = color_of(&c.label).unwrap_or(RGBColor(40, 40, 40).mix(0.8));
        let dash = if c.kind == ColumnKind::XonBytes {
            Dash::Dots
        } else {
            Dash::Long
        };
        let (on, off) = if dash == Dash::Dots { (2, 3) } else { (6, 4) };
        if pts.iter().all(|p| p.1 > top) {
            continue; // named in the notes
        }
        // Drawn where it is within the scale: a line flat along the top would read as a
        // value.
        for run in pts.split(|p| p.1 > top).filter(|r| r.len() > 1) {
            chart
                .draw_series(DashedLineSeries::new(
                    run.to_vec(),
                    on,
                    off,
                    color.stroke_width(1),
                ))
                .map_err(plot_err)?;
        }
        if color_of(&c.label).is_some() {
            continue; // its line's legend entry stands for it
        }
        legend_entry(&legend, columns.len() + i, color, &c.label, dash)?;
    }
    for c in ticks {
        let Some(color) = color_of(&c.label) else {
            continue;
        };
        let h = top * 0.04;
        let marks = series
            .times
            .iter()
            .zip(&c.values)
            .filter(|(_, v)| **v > 0.0)
            .map(|(t, _)| {
                let x = t.0 as f64 / 1e6;
                PathElement::new(vec![(x, 0.0), (x, h)], color.stroke_width(1))
            });
        chart.draw_series(marks).map_err(plot_err)?;
    }
    for t in thresholds.iter().filter(|t| t.value * scale <= top) {
        let y = t.value * scale;
        chart
            .draw_series(DashedLineSeries::new(
                [(start_ms(series), y), (span_ms(series), y)],
                6,
                4,
                grey.stroke_width(1),
            ))
            .map_err(plot_err)?;
        // The backend's pixels, the area's own from its corner (below any notes).
        let (x, py) = chart.backend_coord(&(start_ms(series), y));
        let (x0, y0) = area.get_base_pixel();
        let style = TextStyle::from(("sans-serif", 12).into_font())
            .color(&grey)
            .pos(Pos::new(HPos::Left, VPos::Bottom));
        area.draw(&Text::new(
            format!("{} {:.1}", t.label, y),
            (x - x0 + 4, py - y0 - 2),
            style,
        ))
        .map_err(plot_err)?;
    }
    Ok(())
}

/// The height of a line of a chart's notes ("... above the scale"), pixels.
const NOTE_LINE: u32 = 15;

/// The band of a chart's title, above its notes, pixels: the margin and the title.
const TITLE_BAND: u32 = 40;

/// The columns (largest first) whose peak reaches 1 % of the largest one's: queues that
/// held only a CNP or an ACK now and then stay flat at zero and would only fill the
/// legend.
fn significant(columns: Vec<&Column>) -> Vec<&Column> {
    let peak = |c: &Column| c.values.iter().copied().fold(0.0, f64::max);
    let top = columns.first().map_or(0.0, |c| peak(c));
    columns
        .into_iter()
        .filter(|c| peak(c) >= top * 0.01)
        .collect()
}

fn of_kind(series: &Series, kind: ColumnKind) -> Vec<&Column> {
    series
        .kept()
        .into_iter()
        .filter(|c| c.kind == kind)
        .collect()
}

/// Egress queue depth over time, KiB (each sample the deepest since the previous one),
/// one line per queue that held anything, with `thresholds` (bytes) dashed, and the
/// lossless PGs' XOFF points (which move with the free buffer) dashed too: a queue fed
/// by one PG cannot grow past its XOFF point and headroom.
pub fn queues_svg(series: &Series, title: &str, thresholds: &[Threshold]) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let cols = significant(largest(of_kind(series, ColumnKind::QueueBytes)));
        // Each ingress PG's limit, not the queue's: say so in its legend entry.
        let xoff: Vec<Column> = of_kind(series, ColumnKind::XoffBytes)
            .into_iter()
            .map(|c| Column {
                label: c.label.replace(" point", " per PG"),
                ..c.clone()
            })
            .collect();
        let xoff: Vec<&Column> = xoff.iter().collect();
        let title = format!("Egress queue depth (peak per sample): {title}");
        lines(
            &root,
            series,
            &cols,
            &title,
            "queue (KiB, 1 KiB = 1024 B)",
            true,
            1.0 / KIB,
            Extras {
                thresholds,
                dashed: &xoff,
                ..Extras::default()
            },
        )?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Ingress priority groups' shared-buffer use over time, KiB (each sample the most since
/// the previous one): what PFC decides on. The XOFF and XON points (dashed) move with the
/// free buffer under a dynamic threshold; a PG that reaches XOFF pauses its peer until it
/// drains to XON.
pub fn pgs_svg(series: &Series, title: &str) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let cols = significant(largest(of_kind(series, ColumnKind::PgBytes)));
        let mut xoff = of_kind(series, ColumnKind::XoffBytes);
        xoff.extend(of_kind(series, ColumnKind::XonBytes));
        let title = format!("Ingress PG shared-buffer use (peak per sample): {title}");
        lines(
            &root,
            series,
            &cols,
            &title,
            "PG use (KiB, 1 KiB = 1024 B)",
            true,
            1.0 / KIB,
            Extras {
                dashed: &xoff,
                ..Extras::default()
            },
        )?;
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

/// Height of the pause chart's colour key, pixels.
const PAUSE_KEY_BAND: u32 = 30;

/// The pause chart's colours and what each means.
const PAUSE_KEY: [(RGBColor, &str); 3] = [
    (
        RGBColor(200, 40, 40),
        "XOFF sent: the switch's ingress PG pausing its peer",
    ),
    (
        RGBColor(40, 90, 200),
        "paused: a queue or host held by its peer",
    ),
    (
        RGBColor(230, 140, 20),
        "watchdog: the queue held as stormed",
    ),
];

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
        let height = (160 + 28 * rows.len() as u32).max(260) + PAUSE_KEY_BAND;
        let whole = SVGBackend::with_string(&mut svg, (SIZE.0, height)).into_drawing_area();
        whole.fill(&WHITE).map_err(plot_err)?;
        // The colour key in a band of its own under the time axis.
        let (root, key) = whole.split_vertically(height - PAUSE_KEY_BAND);
        let mut x = 24;
        for (color, text) in PAUSE_KEY {
            key.draw(&Rectangle::new([(x, 8), (x + 18, 20)], color.filled()))
                .map_err(plot_err)?;
            let style = TextStyle::from(("sans-serif", 13).into_font())
                .pos(Pos::new(HPos::Left, VPos::Center));
            key.draw(&Text::new(text.to_owned(), (x + 24, 14), style))
                .map_err(plot_err)?;
            x += 24 + 7 * text.len() as i32 + 24;
        }
        let labels: Vec<String> = rows.iter().map(|c| c.label.clone()).collect();
        let n = rows.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("PFC pause intervals: {title}"), ("sans-serif", 18))
            .margin(12)
            // Room for the last time label, centred on the right edge.
            .margin_right(32)
            .x_label_area_size(36)
            .y_label_area_size(200)
            .build_cartesian_2d(start_ms(series)..span_ms(series), 0.0..n as f64)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("time (ms)")
            .x_label_formatter(&tick)
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
                ColumnKind::Xoff => PAUSE_KEY[0].0,
                ColumnKind::Stormed => PAUSE_KEY[2].0,
                _ => PAUSE_KEY[1].0,
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
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// A two-key sweep's heatmap: a cell per point, coloured by its value from light (best)
/// to dark (worst), the value written in it; `higher_is_better` says which way is best.
/// `x` and `y` are each a key and its values; `cells[y][x]`, `None` for a point that did
/// not run.
pub fn heatmap_svg(
    title: &str,
    x: (&str, &[String]),
    y: (&str, &[String]),
    cells: &[Vec<Option<f64>>],
    higher_is_better: bool,
) -> Result<String> {
    let values: Vec<f64> = cells.iter().flatten().flatten().copied().collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let badness = |v: f64| {
        let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
        if higher_is_better { 1.0 - t } else { t }
    };
    let shade = |v: f64| {
        let bad = badness(v);
        // From pale yellow (best) to dark red (worst).
        let mix = |a: f64, b: f64| (a + (b - a) * bad).round() as u8;
        RGBColor(mix(255.0, 150.0), mix(245.0, 20.0), mix(200.0, 30.0))
    };
    let (nx, ny) = (x.1.len().max(1), y.1.len().max(1));
    let mut svg = String::new();
    {
        let whole = SVGBackend::with_string(&mut svg, (860 + SCALE_BAND, 620)).into_drawing_area();
        whole.fill(&WHITE).map_err(plot_err)?;
        // The colour scale at the right: a bar from the best value to the worst, labelled
        // at both ends and the middle.
        let (root, scale) = whole.split_horizontally(860);
        if lo.is_finite() && hi.is_finite() {
            let (top, bottom) = (60i32, 520i32);
            let steps = 50;
            let h = f64::from(bottom - top) / f64::from(steps);
            for k in 0..steps {
                // Top of the bar: the highest value.
                let v = hi - (hi - lo) * f64::from(k) / f64::from(steps - 1);
                let y0 = top + (f64::from(k) * h) as i32;
                let y1 = top + (f64::from(k + 1) * h).ceil() as i32;
                scale
                    .draw(&Rectangle::new([(10, y0), (34, y1)], shade(v).filled()))
                    .map_err(plot_err)?;
            }
            scale
                .draw(&Rectangle::new(
                    [(10, top), (34, bottom)],
                    BLACK.stroke_width(1),
                ))
                .map_err(plot_err)?;
            let style = TextStyle::from(("sans-serif", 13).into_font())
                .pos(Pos::new(HPos::Left, VPos::Center));
            for (v, y) in [
                (hi, top),
                ((hi + lo) / 2.0, (top + bottom) / 2),
                (lo, bottom),
            ] {
                scale
                    .draw(&Text::new(cell_value(v), (40, y), style.clone()))
                    .map_err(plot_err)?;
            }
            let note = TextStyle::from(("sans-serif", 12).into_font())
                .color(&RGBColor(90, 90, 90))
                .pos(Pos::new(HPos::Left, VPos::Top));
            let worse = if higher_is_better {
                "dark: lower, worse"
            } else {
                "dark: higher, worse"
            };
            scale
                .draw(&Text::new(worse.to_owned(), (10, bottom + 12), note))
                .map_err(plot_err)?;
        }
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(110)
            .build_cartesian_2d(0.0..nx as f64, 0.0..ny as f64)
            .map_err(plot_err)?;
        let xs = x.1.to_vec();
        let ys = y.1.to_vec();
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(x.0)
            .y_desc(y.0)
            .x_labels(nx * 2 + 1)
            .y_labels(ny * 2 + 1)
            .x_label_formatter(&|v| label_at(&xs, *v))
            .y_label_formatter(&|v| label_at(&ys, *v))
            .draw()
            .map_err(plot_err)?;
        for (j, row) in cells.iter().enumerate() {
            for (i, cell) in row.iter().enumerate() {
                let (x0, y0) = (i as f64, j as f64);
                let fill = cell.map_or(RGBColor(230, 230, 230), shade);
                chart
                    .draw_series([Rectangle::new(
                        [(x0 + 0.02, y0 + 0.02), (x0 + 0.98, y0 + 0.98)],
                        fill.filled(),
                    )])
                    .map_err(plot_err)?;
                let text = cell.map_or_else(|| "-".to_owned(), cell_value);
                // White on the dark cells.
                let ink = if cell.is_some_and(|v| badness(v) > 0.6) {
                    WHITE
                } else {
                    BLACK
                };
                let style = ("sans-serif", 18)
                    .into_font()
                    .color(&ink)
                    .pos(Pos::new(HPos::Center, VPos::Center));
                chart
                    .draw_series([Text::new(text, (x0 + 0.5, y0 + 0.5), style)])
                    .map_err(plot_err)?;
            }
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// A heatmap value as written in its cell and on its scale: a whole number (bytes,
/// frames) without decimals, anything else with two.
fn cell_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Width of a heatmap's colour scale at its right, pixels.
const SCALE_BAND: u32 = 140;

/// The label of the cell whose middle is at `v` (cells span [i, i + 1)), blank elsewhere.
fn label_at(labels: &[String], v: f64) -> String {
    let i = v.floor();
    if (v - i - 0.5).abs() < 1e-6 && i >= 0.0 {
        labels.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// Colours of the bars of a grouped bar chart, one per series.
const BAR_COLOURS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

/// A grouped bar chart: per group (a flow, a size bucket, or one metric), a bar per
/// series (a fabric), its value written above it; `None` draws no bar and writes "-".
pub fn bars_svg(
    title: &str,
    y_desc: &str,
    groups: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> Result<String> {
    let top = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten())
        .copied()
        .fold(0.0f64, f64::max);
    let top = if top > 0.0 { top * 1.15 } else { 1.0 };
    let ng = groups.len().max(1);
    let ns = series.len().max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        // The legend in a column of its own, as the line charts have it: plotters sizes a
        // legend box by its own estimate of the text, which a viewer's font outgrows.
        let (root, legend) = root.split_horizontally(SIZE.0.saturating_sub(LEGEND_WIDTH));
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..ng as f64, 0.0..top)
            .map_err(plot_err)?;
        let names = groups.to_vec();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(ng * 2 + 1)
            .x_label_formatter(&|v| label_at(&names, *v))
            .y_desc(y_desc)
            .draw()
            .map_err(plot_err)?;
        let width = 0.8 / ns as f64;
        // A value over each bar, across when the widest fits the bar (with a gap to the
        // next), else upwards: side by side they ran into one another ("2.852.99").
        let bar_px = {
            let (a, _) = chart.backend_coord(&(0.0, 0.0));
            let (b, _) = chart.backend_coord(&(width, 0.0));
            f64::from(b - a)
        };
        let widest = series
            .iter()
            .flat_map(|(_, v)| v.iter())
            .map(|v| v.map_or(1, |v| short_number(v).len()))
            .max()
            .unwrap_or(1);
        let upright = widest as f64 * LABEL_CHAR_PX + 4.0 > bar_px;
        for (k, (name, values)) in series.iter().enumerate() {
            let colour = BAR_COLOURS[k % BAR_COLOURS.len()];
            let bars = values.iter().enumerate().filter_map(|(g, v)| {
                let x0 = g as f64 + 0.1 + k as f64 * width;
                v.map(|v| Rectangle::new([(x0, 0.0), (x0 + width * 0.95, v)], colour.filled()))
            });
            chart.draw_series(bars).map_err(plot_err)?;
            let y = 48 + 18 * k as i32;
            legend
                .draw(&Rectangle::new([(4, y - 5), (18, y + 5)], colour.filled()))
                .map_err(plot_err)?;
            let style = TextStyle::from(("sans-serif", 12).into_font())
                .pos(Pos::new(HPos::Left, VPos::Center));
            legend
                .draw(&Text::new(name.clone(), (24, y), style))
                .map_err(plot_err)?;
            for (g, v) in values.iter().enumerate() {
                let x = g as f64 + 0.1 + (k as f64 + 0.5) * width;
                let text = v.map_or_else(|| "-".to_owned(), short_number);
                let font = ("sans-serif", 13).into_font().color(&BLACK);
                let style = if upright {
                    font.transform(FontTransform::Rotate270)
                        .pos(Pos::new(HPos::Left, VPos::Center))
                } else {
                    font.pos(Pos::new(HPos::Center, VPos::Bottom))
                };
                chart
                    .draw_series([Text::new(text, (x, v.unwrap_or(0.0) + top * 0.01), style)])
                    .map_err(plot_err)?;
            }
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// About how wide a character of a bar's label is, pixels: plotters writes a 13-point font
/// as 10.5 px in SVG, and a digit of DejaVu Sans is 0.64 em (6.7 px); a little more, so
/// that a label judged to fit does.
const LABEL_CHAR_PX: f64 = 7.0;

/// A value in three or four significant digits, for a label.
fn short_number(v: f64) -> String {
    match v.abs() {
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        a if a >= 1.0 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Nanos;

    /// The `y` of each `<text>` element whose content contains `needle`, and its
    /// `transform`, if any.
    fn texts(svg: &str, needle: &str) -> Vec<(f64, Option<String>)> {
        svg.split("<text ")
            .skip(1)
            .filter(|t| {
                t.split_once('>')
                    .is_some_and(|(_, body)| body.contains(needle))
            })
            .map(|t| {
                let attr = |name: &str| {
                    t.split_once(&format!(" {name}=\""))
                        .and_then(|(_, rest)| rest.split_once('"'))
                        .map(|(v, _)| v.to_owned())
                };
                let y = t
                    .split_once("y=\"")
                    .and_then(|(_, r)| r.split_once('"'))
                    .and_then(|(v, _)| v.parse().ok())
                    .unwrap();
                (y, attr("transform"))
            })
            .collect()
    }

    /// compare's goodput bars: 9 groups of 3 bars side by side ran their values together
    /// ("2.852.99"); too narrow for its label, a bar's value stands upright.
    #[test]
    fn bar_values_stand_upright_when_the_bars_are_narrow() {
        let groups: Vec<String> = (0..9).map(|g| format!("h{g}->h8")).collect();
        let series: Vec<(String, Vec<Option<f64>>)> = ["a", "b", "c"]
            .iter()
            .map(|n| ((*n).to_owned(), vec![Some(2.85); 9]))
            .collect();
        let narrow = bars_svg("t", "Gb/s", &groups, &series).unwrap();
        let labels = texts(&narrow, "2.85");
        assert_eq!(labels.len(), 27);
        assert!(
            labels
                .iter()
                .all(|(_, t)| t.as_deref().is_some_and(|t| t.starts_with("rotate(270")))
        );
        let one = [("a".to_owned(), vec![Some(2.85)])];
        let wide = bars_svg("t", "Gb/s", &groups[..1], &one).unwrap();
        let labels = texts(&wide, "2.85");
        assert_eq!(labels.len(), 1);
        assert_eq!(labels[0].1, None, "across, as before");
    }

    /// "... above the scale" notes were written inside the plot, over its top-left
    /// curves; they sit in a band between the title and the plot.
    #[test]
    fn notes_are_above_the_plot_not_on_it() {
        let times: Vec<Nanos> = (0..200).map(|i| Nanos(i * 10_000)).collect();
        // A start-up spike, then a queue of 10 to 20 KB: the spike is left off the scale.
        let values: Vec<f64> = (0..200)
            .map(|i| {
                if i == 1 {
                    400_000.0
                } else {
                    10_000.0 + (i % 10) as f64 * 1000.0
                }
            })
            .collect();
        let series = Series {
            times,
            columns: vec![Column {
                name: "queue_sw_h2_q3_bytes".into(),
                label: "sw/h2 q3".into(),
                kind: ColumnKind::QueueBytes,
                values,
            }],
        };
        let kmax = Threshold {
            label: "q3 Kmax".into(),
            value: 1_000_000.0,
        };
        let svg = queues_svg(&series, "t", &[kmax]).unwrap();
        let notes: Vec<f64> = texts(&svg, "above the scale").iter().map(|n| n.0).collect();
        assert_eq!(notes.len(), 2, "the spike and Kmax");
        // The plot's top: the highest point of its lines (the clipped spike runs along
        // it), the legend's samples in the column at the right left out.
        let plot_right = f64::from(SIZE.0 - LEGEND_WIDTH);
        let top = svg
            .split("points=\"")
            .skip(1)
            .filter_map(|p| p.split_once('"'))
            .flat_map(|(pts, _)| {
                pts.split_whitespace()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter_map(|xy| {
                let (x, y) = xy.split_once(',')?;
                let (x, y) = (x.parse::<f64>().ok()?, y.parse::<f64>().ok()?);
                (x < plot_right).then_some(y)
            })
            .fold(f64::MAX, f64::min);
        assert!(
            notes.iter().all(|&y| y + 12.0 < top),
            "{notes:?} against the top at {top}"
        );
    }
}

//! The plots' toolkit: the SVG frame, time axes and their scales, tick labels, colours,
//! legends, and the line chart that the buffer and rate charts draw on.

use crate::series::{Column, ColumnKind, Series};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Most points drawn per line: longer series are bucketed (queues keep each bucket's peak,
/// rates its mean), so a plot stays a few hundred KB.
pub(super) const MAX_POINTS: usize = 2000;
/// Most lines in one chart (the largest by peak); a legend of more is unreadable.
pub(super) const MAX_LINES: usize = 12;
pub(super) const SIZE: (u32, u32) = (1000, 520);
/// Width of the legend column at the right of a line chart, pixels.
pub(super) const LEGEND_WIDTH: u32 = 170;

/// A plot that could not be drawn (plotters' drawing errors, as text: they carry the
/// backend's error type, which differs per backend).
#[derive(Debug, Clone, thiserror::Error)]
#[error("drawing the plot: {0}")]
pub struct PlotError(String);

pub(super) type Result<T> = std::result::Result<T, PlotError>;

pub(super) fn plot_err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError(format!("{e:?}"))
}

/// The legend of a chart's labelled series, boxed in the upper right corner.
pub(super) fn series_legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)
}

pub(super) fn ms(series: &Series, row: usize) -> f64 {
    series.times[row].0 as f64 / 1e6
}

/// (time ms, value) points of `column`, bucketed to at most [`MAX_POINTS`], values
/// multiplied by `scale`.
pub(super) fn points(series: &Series, column: &Column, peak: bool, scale: f64) -> Vec<(f64, f64)> {
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

pub(super) fn largest(mut cols: Vec<&Column>) -> Vec<&Column> {
    let peak = |c: &Column| c.values.iter().copied().fold(0.0, f64::max);
    cols.sort_by(|a, b| peak(b).total_cmp(&peak(a)));
    cols.truncate(MAX_LINES);
    cols
}

/// Where the time axis starts: the first sample (0 unless the series was cut to a
/// window), ms.
pub(super) fn start_ms(series: &Series) -> f64 {
    series.times.first().map_or(0.0, |t| t.0 as f64 / 1e6)
}

pub(super) fn span_ms(series: &Series) -> f64 {
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

/// Bytes per KiB: the plots count buffers in KiB (1024 bytes), as the CLI's `K` does.
pub(super) const KIB: f64 = 1024.0;

/// A tick label: a number with no trailing zeros ("20", not "20.0"; "2.5").
pub(super) fn tick(v: &f64) -> String {
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
pub(super) fn y_top(data: &[Vec<(f64, f64)>], start: f64, end: f64) -> (f64, Option<(f64, f64)>) {
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
pub(super) fn legend_entry(
    legend: &Area<'_>,
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
pub(super) enum Dash {
    Solid,
    /// A moving threshold (XOFF, DCQCN's target rate).
    Long,
    /// A second moving threshold beside the first (XON).
    Dots,
}

/// A line's colour: by its place in `palette` (labels in colour order) when one is
/// given, so that one QP has one colour in every panel; else by its place in `columns`.
pub(super) fn pick(
    palette: Option<&[String]>,
    columns: &[&Column],
    label: &str,
) -> Option<RGBAColor> {
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
pub(super) struct Extras<'a> {
    /// Fixed thresholds (in the columns' unit), dashed grey where they fall within the
    /// scale, named above it otherwise.
    pub(super) thresholds: &'a [Threshold],
    /// Moving values drawn dashed, in the colour of the line with the same label (grey
    /// when none); they never set the scale.
    pub(super) dashed: &'a [&'a Column],
    /// Event counts per sample: a tick at the foot of the chart wherever one is
    /// non-zero, in the colour of the line with the same label.
    pub(super) ticks: &'a [&'a Column],
    /// Labels in colour order, shared by the panels of one figure.
    pub(super) palette: Option<&'a [String]>,
    /// What an empty chart says (default: "nothing to show in this run").
    pub(super) empty: Option<&'a str>,
}

/// A chart area of an SVG plot.
type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// A line chart: time (ms) across, a value up.
type LineChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A line chart's points and scale: its lines', its dashed lines', the axis's top, and
/// the notes naming what stays above it.
struct Scaled {
    data: Vec<Vec<(f64, f64)>>,
    dashed: Vec<Vec<(f64, f64)>>,
    top: f64,
    notes: Vec<String>,
}

/// The points of `columns` (`peak`: buckets keep their peak, else their mean; values
/// times `scale`) and of `dashed`, and the scale they and `thresholds` set.
fn scaled(
    series: &Series,
    columns: &[&Column],
    y_desc: &str,
    (peak, scale): (bool, f64),
    thresholds: &[Threshold],
    dashed: &[&Column],
) -> Scaled {
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
    notes.extend(dashed_notes(dashed, &dashed_data, top));
    Scaled {
        data,
        dashed: dashed_data,
        top,
        notes,
    }
}

/// Notes on the dashed lines off the scale: named, or counted when many (a QP's Rt
/// each), in a line.
fn dashed_notes(dashed: &[&Column], dashed_data: &[Vec<(f64, f64)>], top: f64) -> Vec<String> {
    let (mut always, mut at_times) = (Vec::new(), Vec::new());
    for (c, pts) in dashed.iter().zip(dashed_data) {
        if pts.iter().all(|p| p.1 > top) {
            always.push(c.label.as_str());
        } else if pts.iter().any(|p| p.1 > top) {
            at_times.push(c.label.as_str());
        }
    }
    let mut notes = Vec::new();
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
    notes
}

/// The title and the notes, in the band above the plot.
fn head_with_notes(head: &Area<'_>, title: &str, notes: &[String]) -> Result<()> {
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
    Ok(())
}

/// Lines of `columns` on one chart area (`peak`: buckets keep their peak, else their
/// mean; values times `scale`), with the `extras`.
#[allow(clippy::too_many_arguments)]
pub(super) fn lines(
    area: &Area<'_>,
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
    let Scaled {
        data,
        dashed: dashed_data,
        top,
        notes,
    } = scaled(series, columns, y_desc, (peak, scale), thresholds, dashed);
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
        head_with_notes(&head, title, &notes)?;
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
    draw_dashed(
        &mut chart,
        &legend,
        dashed,
        dashed_data,
        top,
        columns.len(),
        color_of,
    )?;
    draw_ticks(&mut chart, series, ticks, top, color_of)?;
    draw_thresholds(&mut chart, area, series, thresholds, scale, top)
}

/// The dashed lines (moving thresholds) where they are within the scale, and legend
/// entries, from row `row`, for those with no line of their own.
fn draw_dashed(
    chart: &mut LineChart<'_, '_>,
    legend: &Area<'_>,
    dashed: &[&Column],
    dashed_data: Vec<Vec<(f64, f64)>>,
    top: f64,
    row: usize,
    color_of: impl Fn(&str) -> Option<RGBAColor>,
) -> Result<()> {
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
        legend_entry(legend, row + i, color, &c.label, dash)?;
    }
    Ok(())
}

/// A tick at the foot of the chart wherever an event column is non-zero.
fn draw_ticks(
    chart: &mut LineChart<'_, '_>,
    series: &Series,
    ticks: &[&Column],
    top: f64,
    color_of: impl Fn(&str) -> Option<RGBAColor>,
) -> Result<()> {
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
    Ok(())
}

/// The fixed thresholds within the scale, dashed grey, each named above its line.
fn draw_thresholds(
    chart: &mut LineChart<'_, '_>,
    area: &Area<'_>,
    series: &Series,
    thresholds: &[Threshold],
    scale: f64,
    top: f64,
) -> Result<()> {
    let grey = RGBColor(90, 90, 90);
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
pub(super) const NOTE_LINE: u32 = 15;

/// The band of a chart's title, above its notes, pixels: the margin and the title.
pub(super) const TITLE_BAND: u32 = 40;

/// The columns (largest first) whose peak reaches 1 % of the largest one's: queues that
/// held only a CNP or an ACK now and then stay flat at zero and would only fill the
/// legend.
pub(super) fn significant(columns: Vec<&Column>) -> Vec<&Column> {
    let peak = |c: &Column| c.values.iter().copied().fold(0.0, f64::max);
    let top = columns.first().map_or(0.0, |c| peak(c));
    columns
        .into_iter()
        .filter(|c| peak(c) >= top * 0.01)
        .collect()
}

pub(super) fn of_kind(series: &Series, kind: ColumnKind) -> Vec<&Column> {
    series
        .kept()
        .into_iter()
        .filter(|c| c.kind == kind)
        .collect()
}

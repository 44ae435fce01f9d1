//! Runs side by side: a two-key sweep's heatmap and a comparison's grouped bars.

use super::toolkit::{LEGEND_WIDTH, Result, SIZE, plot_err};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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

//! When PFC held the fabric: pause intervals per priority group, queue and host.

use super::toolkit::{Result, SIZE, plot_err, span_ms, start_ms, tick};
use crate::series::{Column, ColumnKind, Series};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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

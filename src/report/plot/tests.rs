use super::*;
use crate::series::{Column, ColumnKind, Series};
use crate::time::Nanos;
use toolkit::{LEGEND_WIDTH, SIZE};

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

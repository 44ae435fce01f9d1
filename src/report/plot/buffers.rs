//! What the switch's buffers hold: egress queue depth and ingress priority groups' use.

use super::toolkit::{
    Extras, KIB, Result, SIZE, Threshold, largest, lines, of_kind, plot_err, significant,
};
use crate::series::{Column, ColumnKind, Series};
use plotters::prelude::*;

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

//! `rocelab compare`'s output: the fabric settings side by side, a metric per row, as
//! text, JSON and one SVG per metric.

use crate::sim::compare::{Measured, Setting};
use std::fmt::Write as _;

/// Width of the metric column.
const METRIC: usize = 44;

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

/// The settings side by side: one column each, one metric per row.
pub fn table(rows: &[Measured]) -> String {
    let mut t = Lines {
        rows,
        lines: Vec::new(),
    };
    throughput_lines(&mut t);
    victim_lines(&mut t);
    fct_lines(&mut t);
    allreduce_lines(&mut t);
    balance_lines(&mut t);
    fabric_lines(&mut t);
    let mut out = columns(&t.lines, rows.len());
    pfc_unused_notes(&mut out, rows);
    out
}

/// The table's metrics as they are added: each a name and a cell per setting.
struct Lines<'a> {
    rows: &'a [Measured],
    lines: Vec<(String, Vec<String>)>,
}

impl Lines<'_> {
    /// A metric, its cell in each setting's column given by `cell`.
    fn line(&mut self, name: &str, cell: &dyn Fn(&Measured) -> String) {
        self.lines
            .push((name.to_owned(), self.rows.iter().map(cell).collect()));
    }
}

/// The header (each setting's label), goodput and payload delivered, and how fairly the
/// flows shared it.
fn throughput_lines(t: &mut Lines<'_>) {
    t.line("", &|r| r.label.clone());
    if t.rows
        .iter()
        .any(|r| !r.flows.is_empty() || !r.allreduce.is_empty())
    {
        t.line("goodput, all sending QPs (Gb/s)", &|r| {
            format!("{:.3}", r.summary.goodput_gbps)
        });
    }
    t.line("payload delivered over the run (Gb/s)", &|r| {
        format!("{:.3}", r.summary.delivered_gbps)
    });
    if t.rows.iter().any(|r| r.flows.len() > 1) {
        t.line("goodput per flow, least / most (Gb/s)", &|r| {
            let g = r.flows.iter().map(|f| f.goodput_gbps);
            let lo = g.clone().fold(f64::INFINITY, f64::min);
            let hi = g.fold(0.0, f64::max);
            format!("{lo:.2} / {hi:.2}")
        });
        t.line("Jain fairness", &|r| super::sim::jain_text(r.summary.jain));
    }
}

/// Each victim flow's goodput, and its slowdown against its fair share.
fn victim_lines(t: &mut Lines<'_>) {
    let victims = t.rows.first().map_or(0, |r| r.victims.len());
    for v in 0..victims {
        let f = &t.rows[0].victims[v];
        let fair = f
            .fair_gbps
            .map_or_else(String::new, |g| format!(", fair share {g:.1}"));
        t.line(
            &format!("victim h{}->h{} (Gb/s{fair})", f.from, f.to),
            &|r| format!("{:.2}", r.victims[v].goodput_gbps),
        );
        if f.fair_gbps.is_some() {
            t.line("  its slowdown (fair share / goodput)", &|r| {
                let f = &r.victims[v];
                opt(
                    f.fair_gbps
                        .filter(|_| f.goodput_gbps > 0.0)
                        .map(|g| g / f.goodput_gbps),
                    2,
                )
            });
        }
    }
}

/// FCT slowdown percentiles per size bucket.
fn fct_lines(t: &mut Lines<'_>) {
    let buckets = t.rows.first().map_or(0, |r| r.fct.len());
    for b in 0..buckets {
        let label = &t.rows[0].fct[b].label;
        t.line(&format!("FCT slowdown p50 / p95 / p99, {label}"), &|r| {
            let k = &r.fct[b];
            format!("{} / {} / {}", opt(k.p50, 2), opt(k.p95, 2), opt(k.p99, 2))
        });
    }
}

/// Each all-reduce size's time, busbw and step times.
fn allreduce_lines(t: &mut Lines<'_>) {
    let sizes = t.rows.first().map_or(0, |r| r.allreduce.len());
    for i in 0..sizes {
        let size = crate::bytes::human(t.rows[0].allreduce[i].size);
        t.line(
            &format!("all-reduce {size}: time (µs) / busbw (GB/s)"),
            &|r| {
                let a = &r.allreduce[i];
                format!(
                    "{} / {}",
                    opt(a.time_ns.map(|t| t as f64 / 1e3), 1),
                    opt(a.busbw_gbytes_per_s, 3)
                )
            },
        );
        t.line("  its step times p50 / p99 / max (µs)", &|r| {
            let st = &r.allreduce[i].steps;
            if st.count == 0 {
                return "-".to_owned();
            }
            let us = |ns: u64| ns as f64 / 1e3;
            format!(
                "{:.1} / {:.1} / {:.1}",
                us(st.p50_ns),
                us(st.p99_ns),
                us(st.max_ns)
            )
        });
    }
}

/// What load balancing came to, where a column names a mode.
fn balance_lines(t: &mut Lines<'_>) {
    if t.rows.iter().all(|r| r.load_balancing.is_none()) {
        return;
    }
    let lb = |r: &Measured, f: &dyn Fn(&crate::sim::balance::BalanceReport) -> String| {
        r.load_balancing.as_ref().map_or_else(|| "-".to_owned(), f)
    };
    t.line("effective bandwidth, flows (%)", &|r| {
        lb(r, &|b| opt(b.effective_bandwidth.map(|e| 100.0 * e), 1))
    });
    if t.rows.iter().any(|r| {
        r.load_balancing
            .as_ref()
            .is_some_and(|b| b.exchange.is_some())
    }) {
        t.line("workload done, µs (its bound)", &|r| {
            lb(r, &|b| {
                b.exchange.as_ref().map_or_else(
                    || "-".to_owned(),
                    |x| {
                        let done = x
                            .done_ns
                            .map_or("-".to_owned(), |d| format!("{:.1}", d as f64 / 1e3));
                        format!("{done} ({:.1})", x.bound_ns as f64 / 1e3)
                    },
                )
            })
        });
        t.line("workload effective bandwidth (%)", &|r| {
            lb(r, &|b| {
                opt(
                    b.exchange
                        .as_ref()
                        .and_then(|x| x.efficiency)
                        .map(|e| 100.0 * e),
                    1,
                )
            })
        });
    }
    if t.rows.iter().any(|r| {
        r.load_balancing
            .as_ref()
            .is_some_and(|b| b.allreduce.is_some())
    }) {
        t.line("all-reduce effective bandwidth, largest size (%)", &|r| {
            lb(r, &|b| {
                opt(
                    b.allreduce
                        .as_ref()
                        .and_then(|a| a.efficiency)
                        .map(|e| 100.0 * e),
                    1,
                )
            })
        });
    }
    t.line("uplink imbalance, max/mean (busiest leaf)", &|r| {
        lb(r, &|b| opt(b.imbalance, 2))
    });
    t.line("out of order, placed / discarded", &|r| {
        lb(r, &|b| {
            format!("{} / {}", b.out_of_order_placed, b.out_of_order_discarded)
        })
    });
    t.line("reorder depth (packets)", &|r| {
        lb(r, &|b| b.max_reorder_depth.to_string())
    });
    t.line("spurious retransmissions", &|r| {
        lb(r, &|b| b.spurious_retransmissions.to_string())
    });
}

/// A plot's series: each column's label with the values `f` reads from it.
fn per_column(
    rows: &[Measured],
    f: &dyn Fn(&Measured) -> Vec<Option<f64>>,
) -> Vec<(String, Vec<Option<f64>>)> {
    rows.iter().map(|r| (r.label.clone(), f(r))).collect()
}

/// The all-reduce's plots, where the columns ran one: busbw and the step-time spread per
/// size.
fn allreduce_svgs(
    scenario: &str,
    rows: &[Measured],
) -> Result<Vec<(String, String)>, super::plot::PlotError> {
    use super::plot::bars_svg;
    let series = |f: &dyn Fn(&Measured) -> Vec<Option<f64>>| per_column(rows, f);
    let mut out = Vec::new();
    if rows.first().is_some_and(|r| !r.allreduce.is_empty()) {
        let groups: Vec<String> = rows[0]
            .allreduce
            .iter()
            .map(|a| crate::bytes::human(a.size))
            .collect();
        out.push((
            "busbw.svg".to_owned(),
            bars_svg(
                &format!("{scenario}: all-reduce bus bandwidth per size"),
                "busbw, GB/s",
                &groups,
                &series(&|r| r.allreduce.iter().map(|a| a.busbw_gbytes_per_s).collect()),
            )?,
        ));
        out.push((
            "steps.svg".to_owned(),
            bars_svg(
                &format!("{scenario}: all-reduce step time spread (p99 / p50) per size"),
                "p99 / p50 of step times",
                &groups,
                &series(&|r| {
                    r.allreduce
                        .iter()
                        .map(|a| {
                            (a.steps.p50_ns > 0)
                                .then(|| a.steps.p99_ns as f64 / a.steps.p50_ns as f64)
                        })
                        .collect()
                }),
            )?,
        ));
    }
    Ok(out)
}

/// Each uplink's utilization on the busiest leaf (the one whose uplinks sent the most in
/// the first column), per column, where the columns name a load-balancing mode: the picture of ECMP's
/// collisions against the spreading modes' even load.
fn uplinks_svg(
    scenario: &str,
    rows: &[Measured],
) -> Result<Option<String>, super::plot::PlotError> {
    let busiest = |r: &Measured| {
        r.load_balancing.as_ref().and_then(|b| {
            b.switches
                .iter()
                .max_by_key(|s| s.uplinks.iter().map(|u| u.tx_bytes).sum::<u64>())
                .cloned()
        })
    };
    let Some(first) = rows.iter().find_map(busiest) else {
        return Ok(None);
    };
    // The same leaf in every column: the first column's busiest.
    let groups: Vec<String> = first.uplinks.iter().map(|u| u.port.clone()).collect();
    let series: Vec<(String, Vec<Option<f64>>)> = rows
        .iter()
        .map(|r| {
            let loads = r
                .load_balancing
                .as_ref()
                .and_then(|b| b.switches.iter().find(|s| s.switch == first.switch))
                .map_or_else(Vec::new, |s| s.uplinks.clone());
            let values = groups
                .iter()
                .map(|port| {
                    loads
                        .iter()
                        .find(|u| &u.port == port)
                        .map(|u| 100.0 * u.utilization)
                })
                .collect();
            (r.label.clone(), values)
        })
        .collect();
    super::plot::bars_svg(
        &format!(
            "{scenario}: uplink utilization on {} (busiest leaf)",
            first.switch
        ),
        "% of the link, over the run",
        &groups,
        &series,
    )
    .map(Some)
}

/// What the fabric did: queues, buffer, pauses, stalls, PFC, ECN, drops, retransmissions.
fn fabric_lines(t: &mut Lines<'_>) {
    t.line("deepest egress queue (KB)", &|r| {
        format!("{:.1}", r.summary.max_queue_bytes as f64 / 1e3)
    });
    t.line("egress queues, sampled: mean / p50 / p99 (KB)", &|r| {
        r.queues.map_or_else(
            || "-".to_owned(),
            |q| {
                format!(
                    "{:.1} / {:.1} / {:.1}",
                    q.mean_bytes / 1e3,
                    q.p50_bytes / 1e3,
                    q.p99_bytes / 1e3
                )
            },
        )
    });
    t.line("buffer held to stay lossless, per port (KB)", &|r| {
        format!("{:.1}", r.summary.ingress_peak_bytes as f64 / 1e3)
    });
    t.line("paused by PFC, hosts / switches (ms)", &|r| {
        format!(
            "{} / {}",
            ms(r.summary.host_paused_ns),
            ms(r.summary.switch_paused_ns)
        )
    });
    t.line("stalled for credit, hosts / switches (ms)", &|r| {
        format!(
            "{} / {}",
            ms(r.summary.host_credit_stalled_ns),
            ms(r.summary.switch_credit_stalled_ns)
        )
    });
    t.line("PFC frames sent, switches + hosts", &|r| {
        let sent = r.summary.switch_pfc_sent + r.summary.host_pfc_sent;
        match r.pfc_unused {
            // PFC was on and never acted: the cell says so, the note under the table why.
            Some(_) => format!("{sent}: never at XOFF"),
            None => sent.to_string(),
        }
    });
    t.line("CE marked / CNPs sent", &|r| {
        format!("{} / {}", r.summary.ce_marked, r.summary.cnps_sent)
    });
    t.line("dropped, lossless / lossy / hosts", &|r| {
        format!(
            "{} / {} / {}",
            r.summary.lossless_drops, r.summary.lossy_drops, r.summary.host_drops
        )
    });
    t.line("retransmitted packets", &|r| {
        r.summary.retransmitted.to_string()
    });
}

/// The metrics as text: the names in a column, each setting's cells in one as wide as
/// its widest cell.
fn columns(lines: &[(String, Vec<String>)], settings: usize) -> String {
    // Every column as wide as its widest cell.
    let widths: Vec<usize> = (0..settings)
        .map(|i| {
            lines
                .iter()
                .map(|(_, cells)| cells[i].chars().count())
                .max()
                .unwrap_or(0)
                .max(12)
        })
        .collect();
    let mut out = String::new();
    for (name, cells) in lines {
        let _ = write!(out, "{name:<METRIC$}");
        for (cell, &w) in cells.iter().zip(&widths) {
            let _ = write!(out, " {cell:>w$}");
        }
        out.push('\n');
    }
    out
}

/// Where PFC alone was to keep the class lossless and never acted, a note why.
fn pfc_unused_notes(out: &mut String, rows: &[Measured]) {
    // The buffer took the whole load, so the column shows a big switch buffer, not PFC.
    for r in rows.iter().filter(|r| r.fabric == Setting::RocePfc) {
        if let Some(u) = r.pfc_unused {
            let _ = writeln!(
                out,
                "{}: PFC never acted. The fullest ingress priority group held {:.1} KB at most,\n\
                 and its XOFF point never came below {:.1} KB: the shared buffer took the whole load\n\
                 (the deepest egress queue held {:.1} KB), so this column shows the buffer at work,\n\
                 not PFC. A smaller buffer (--set switch.buffer.shared_bytes=...) lets PFC act.",
                r.label,
                u.pg_peak_bytes as f64 / 1e3,
                u.xoff_min_bytes as f64 / 1e3,
                r.summary.max_queue_bytes as f64 / 1e3,
            );
        }
    }
}

/// Every plot [`svgs`] may draw (each scenario gets those of the metrics it has).
pub const SVG_FILES: [&str; 10] = [
    "goodput.svg",
    "victim.svg",
    "fct-p50.svg",
    "fct-p95.svg",
    "fct.svg",
    "busbw.svg",
    "steps.svg",
    "buffer.svg",
    "stalls.svg",
    "uplinks.svg",
];

/// One SVG per metric, the settings side by side: (file name, SVG).
pub fn svgs(
    scenario: &str,
    rows: &[Measured],
) -> Result<Vec<(String, String)>, super::plot::PlotError> {
    use super::plot::bars_svg;
    let series = |f: &dyn Fn(&Measured) -> Vec<Option<f64>>| per_column(rows, f);
    let mut out = Vec::new();
    // Bulk flows and all-reduce have QPs measured over the scenario's span; workloads
    // only what was delivered over the run.
    let qps = rows
        .iter()
        .any(|r| !r.flows.is_empty() || !r.allreduce.is_empty());
    let mut groups: Vec<String> = vec![if qps {
        "all sending QPs".to_owned()
    } else {
        "payload delivered".to_owned()
    }];
    if rows.first().is_some_and(|r| r.flows.len() > 1) && rows[0].flows.len() <= 16 {
        groups.extend(
            rows[0]
                .flows
                .iter()
                .map(|f| format!("h{}->h{}", f.from, f.to)),
        );
    }
    let per_flow = groups.len() > 1;
    out.push((
        "goodput.svg".to_owned(),
        bars_svg(
            &format!("{scenario}: goodput"),
            "Gb/s",
            &groups,
            &series(&|r| {
                let mut v = vec![Some(if qps {
                    r.summary.goodput_gbps
                } else {
                    r.summary.delivered_gbps
                })];
                if per_flow {
                    v.extend(r.flows.iter().map(|f| Some(f.goodput_gbps)));
                }
                v
            }),
        )?,
    ));
    if rows.first().is_some_and(|r| !r.victims.is_empty()) {
        let groups: Vec<String> = rows[0]
            .victims
            .iter()
            .map(|f| format!("h{}->h{}", f.from, f.to))
            .collect();
        out.push((
            "victim.svg".to_owned(),
            bars_svg(
                &format!("{scenario}: victim flows, goodput over their max-min fair share"),
                "share of its fair share",
                &groups,
                &series(&|r| {
                    r.victims
                        .iter()
                        .map(|f| f.fair_gbps.map(|g| f.goodput_gbps / g))
                        .collect()
                }),
            )?,
        ));
    }
    if rows.first().is_some_and(|r| !r.fct.is_empty()) {
        let groups: Vec<String> = rows[0].fct.iter().map(|b| b.label.clone()).collect();
        // The percentiles the congestion-control papers plot per size: p99 in fct.svg.
        type Pick = fn(&crate::sim::fct::Bucket) -> Option<f64>;
        let percentiles: [(&str, &str, Pick); 3] = [
            ("fct-p50.svg", "p50", |b| b.p50),
            ("fct-p95.svg", "p95", |b| b.p95),
            ("fct.svg", "p99", |b| b.p99),
        ];
        for (file, p, pick) in percentiles {
            out.push((
                file.to_owned(),
                bars_svg(
                    &format!("{scenario}: FCT slowdown at {p} per flow size"),
                    &format!("slowdown, {p}"),
                    &groups,
                    &series(&|r| r.fct.iter().map(pick).collect()),
                )?,
            ));
        }
    }
    out.extend(allreduce_svgs(scenario, rows)?);
    if let Some(plot) = uplinks_svg(scenario, rows)? {
        out.push(("uplinks.svg".to_owned(), plot));
    }
    out.push((
        "buffer.svg".to_owned(),
        bars_svg(
            &format!("{scenario}: buffer held to stay lossless, per switch port"),
            "KB",
            &[
                "deepest egress queue".to_owned(),
                "ingress, one class or VL".to_owned(),
            ],
            &series(&|r| {
                vec![
                    Some(r.summary.max_queue_bytes as f64 / 1e3),
                    Some(r.summary.ingress_peak_bytes as f64 / 1e3),
                ]
            }),
        )?,
    ));
    out.push((
        "stalls.svg".to_owned(),
        bars_svg(
            &format!("{scenario}: time paused by PFC and stalled for credit"),
            "ms, summed over ports",
            &[
                "hosts paused".to_owned(),
                "switches paused".to_owned(),
                "hosts stalled".to_owned(),
                "switches stalled".to_owned(),
            ],
            &series(&|r| {
                let s = &r.summary;
                [
                    s.host_paused_ns,
                    s.switch_paused_ns,
                    s.host_credit_stalled_ns,
                    s.switch_credit_stalled_ns,
                ]
                .map(|ns| Some(ns as f64 / 1e6))
                .to_vec()
            }),
        )?,
    ));
    Ok(out)
}

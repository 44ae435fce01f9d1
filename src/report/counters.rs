//! The switch counters printed four ways: rocelab's table (a row per port and class, the
//! port on every row, under 120 columns), the same with every counter (`wide`), and the
//! shapes of SONiC's `show pfc counters` / `show queue counters` / `show queue
//! wredcounters` / `show pfcwd stats` and NX-OS's `show interface priority-flow-control`
//! / `show queuing interface`, for readers who know those.

use super::{ClassReport, PortReport, micros, ports};
use crate::config::CLASSES;
use crate::switch::Switch;
use std::fmt::Write as _;

/// How to print the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CounterStyle {
    /// A row per port and active class, the common columns, under 120 characters.
    #[default]
    Table,
    /// Every counter (drops by cause, XON, PG watermarks, storms, sojourn p50/max).
    Wide,
    /// SONiC's `show pfc counters`, `show queue counters`, `show queue wredcounters` and
    /// `show pfcwd stats`.
    Sonic,
    /// NX-OS's `show interface priority-flow-control` and `show queuing interface`.
    Nxos,
}

/// The counters of `switch` in `style`.
pub fn render(switch: &Switch, style: CounterStyle) -> String {
    match style {
        CounterStyle::Table => table(&ports(switch), false),
        CounterStyle::Wide => table(&ports(switch), true),
        CounterStyle::Sonic => sonic(switch),
        CounterStyle::Nxos => nxos(switch),
    }
}

/// rocelab's counter table: a row per port and active class, every counter when `wide`,
/// then notes on what only some ports counted, and the legend.
fn table(ports: &[PortReport], wide: bool) -> String {
    let mut out = String::new();
    let port_w = ports.iter().map(|p| p.name.len()).max().unwrap_or(4).max(4);
    header(&mut out, port_w, wide);
    let mut notes = Vec::new();
    for port in ports {
        port_notes(&mut notes, port);
        if port.classes.is_empty() {
            let _ = writeln!(out, "{:<port_w$} -     (no traffic)", port.name);
        }
        for c in &port.classes {
            let k = &c.counters;
            if k.late_pause_frames > 0 && !wide {
                notes.push(format!(
                    "{} class {}: {} frames came after its PFC pause should have stopped them \
                     (late_pause_frames): the switch's thread lagged, the pause left late and \
                     the peer kept sending; they were kept, not dropped, so queues can pass \
                     the configured buffer",
                    port.name, c.class, k.late_pause_frames
                ));
            }
            let lossless = c.lossless || c.lossless_queue;
            let class = format!("{}{}", c.class, if lossless { "*" } else { "" });
            if wide {
                wide_row(&mut out, port_w, &port.name, &class, c);
            } else {
                narrow_row(&mut out, port_w, &port.name, &class, c);
            }
        }
    }
    for n in notes {
        let _ = writeln!(out, "{n}");
    }
    out.push_str(if wide {
        "* lossless: class N is a lossless priority, or queue N carries one (tc_to_queue; the\n\
         same rows with a one-to-one map). rx, PFC, XON, drop in (ingress overflow) and the\n\
         PG columns count class N as it came in on the port; tx, CE, the other drops, queue,\n\
         storms and sojourn count the port's egress queue N. PFC counts include XON. PG late:\n\
         frames that came after the PG's pause should have stopped them (the switch's thread\n\
         lagged, the pause left late, the peer kept sending), kept past a full headroom, not\n\
         dropped.\n"
    } else {
        "* lossless: class N is a lossless priority, or queue N carries one (tc_to_queue; the\n\
         same rows with a one-to-one map). rx and PFC count class N as it came in on the port;\n\
         tx, CE marked, queue max and p99 (queue sojourn) the port's egress queue N. dropped\n\
         is every cause at this index (--counters wide splits them). PFC counts include XON.\n"
    });
    out
}

/// The table's column heads.
fn header(out: &mut String, port_w: usize, wide: bool) {
    if wide {
        let _ = writeln!(
            out,
            "{:<port_w$} {:<5} {:>10} {:>12} {:>10} {:>12} {:>7} {:>7} {:>7} {:>7} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>11} {:>11} {:>11} {:>7} {:>7} {:>7}  sojourn p50/p99/max µs",
            "port",
            "class",
            "rx frames",
            "rx bytes",
            "tx frames",
            "tx bytes",
            "PFC rx",
            "XON rx",
            "PFC tx",
            "XON tx",
            "CE marked",
            "drop in",
            "drop red",
            "drop tail",
            "drop mtu",
            "drop wd",
            "queue max B",
            "PG shared B",
            "PG headrm B",
            "PG late",
            "storms",
            "restor"
        );
    } else {
        let _ = writeln!(
            out,
            "{:<port_w$} {:<5} {:>10} {:>10} {:>13} {:>7} {:>7} {:>9} {:>8} {:>11} {:>9}",
            "port",
            "class",
            "rx frames",
            "tx frames",
            "tx bytes",
            "PFC rx",
            "PFC tx",
            "CE marked",
            "dropped",
            "queue max B",
            "p99 µs"
        );
    }
}

/// Notes on what `port` counted that the table has no column for.
fn port_notes(notes: &mut Vec<String>, port: &PortReport) {
    for (n, what) in [
        (port.rx_link_pause_frames, "802.3x PAUSE frames received"),
        (
            port.filtered_frames,
            "frames filtered (destination behind the ingress port)",
        ),
        (
            port.rx_oversize_frames,
            "frames dropped over the MTU (giants)",
        ),
        (
            port.rx_malformed_frames,
            "malformed frames (forwarded as class 0)",
        ),
    ] {
        if n > 0 {
            notes.push(format!("{}: {what}: {n}", port.name));
        }
    }
}

/// A row of the wide table: every counter of class `c`.
fn wide_row(out: &mut String, port_w: usize, port: &str, class: &str, c: &ClassReport) {
    let k = &c.counters;
    let sojourn = c.sojourn.map_or_else(
        || "-".to_owned(),
        |s| {
            format!(
                "{}/{}/{}",
                micros(s.p50_ns),
                micros(s.p99_ns),
                micros(s.max_ns)
            )
        },
    );
    let _ = writeln!(
        out,
        "{:<port_w$} {:<5} {:>10} {:>12} {:>10} {:>12} {:>7} {:>7} {:>7} {:>7} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>11} {:>11} {:>11} {:>7} {:>7} {:>7}  {}",
        port,
        class,
        k.rx_frames,
        k.rx_bytes,
        k.tx_frames,
        k.tx_bytes,
        k.rx_pause_frames,
        k.rx_xon_frames,
        k.tx_pause_frames,
        k.tx_xon_frames,
        k.ecn_marked,
        k.dropped_ingress_overflow,
        k.dropped_wred,
        k.dropped_tail,
        k.dropped_mtu,
        k.dropped_watchdog,
        k.queue_watermark_bytes,
        k.pg_shared_watermark_bytes,
        k.pg_headroom_watermark_bytes,
        k.late_pause_frames,
        k.storms_detected,
        k.storms_restored,
        sojourn
    );
}

/// A row of the table: the common counters of class `c`.
fn narrow_row(out: &mut String, port_w: usize, port: &str, class: &str, c: &ClassReport) {
    let k = &c.counters;
    let p99 = c
        .sojourn
        .map_or_else(|| "-".to_owned(), |s| micros(s.p99_ns));
    let _ = writeln!(
        out,
        "{:<port_w$} {:<5} {:>10} {:>10} {:>13} {:>7} {:>7} {:>9} {:>8} {:>11} {:>9}",
        port,
        class,
        k.rx_frames,
        k.tx_frames,
        k.tx_bytes,
        k.rx_pause_frames,
        k.tx_pause_frames,
        k.ecn_marked,
        k.dropped(),
        k.queue_watermark_bytes,
        p99
    );
}

fn sonic(switch: &Switch) -> String {
    let mut out = String::new();
    let names: Vec<String> = (0..switch.port_count())
        .map(|p| switch.counters(p).name.clone())
        .collect();
    let w = names.iter().map(String::len).max().unwrap_or(4).max(9);
    for (title, rx) in [("Port Rx", true), ("Port Tx", false)] {
        let _ = write!(out, "{title:>w$}");
        for p in 0..CLASSES {
            let _ = write!(out, "  {:>6}", format!("PFC{p}"));
        }
        let _ = writeln!(out);
        let _ = write!(out, "{}", "-".repeat(w));
        for _ in 0..CLASSES {
            let _ = write!(out, "  ------");
        }
        let _ = writeln!(out);
        for (p, name) in names.iter().enumerate() {
            let _ = write!(out, "{name:>w$}");
            for c in &switch.counters(p).classes {
                let n = if rx {
                    c.rx_pause_frames
                } else {
                    c.tx_pause_frames
                };
                let _ = write!(out, "  {n:>6}");
            }
            let _ = writeln!(out);
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "{:>w$}    TxQ    Counter/pkts    Counter/bytes    Drop/pkts    Drop/bytes",
        "Port"
    );
    let _ = writeln!(
        out,
        "{}  -----  --------------  ---------------  -----------  ------------",
        "-".repeat(w)
    );
    for (p, name) in names.iter().enumerate() {
        for (q, c) in switch.counters(p).classes.iter().enumerate() {
            // Drops counted at the egress queue (ingress overflow belongs to the PG).
            let drops = c.dropped_wred + c.dropped_tail + c.dropped_watchdog + c.dropped_mtu;
            let _ = writeln!(
                out,
                "{name:>w$}  {:>5}  {:>14}  {:>15}  {:>11}  {:>12}",
                format!("UC{q}"),
                c.tx_frames,
                c.tx_bytes,
                drops,
                if drops > 0 { c.dropped_bytes } else { 0 }
            );
        }
        let _ = writeln!(out);
    }
    sonic_wred(&mut out, switch, &names, w);
    sonic_pfcwd(&mut out, switch, &names);
    out
}

/// SONiC's `show queue wredcounters`: WRED drops and ECN marks per queue. rocelab counts
/// neither's bytes apart, which SONiC shows as N/A, as on a platform without them.
fn sonic_wred(out: &mut String, switch: &Switch, names: &[String], w: usize) {
    let _ = writeln!(
        out,
        "{:>w$}    TxQ    WredDrp/pkts    WredDrp/bytes    EcnMarked/pkts    EcnMarked/bytes",
        "Port"
    );
    let _ = writeln!(
        out,
        "{}  -----  --------------  ---------------  ----------------  -----------------",
        "-".repeat(w)
    );
    for (p, name) in names.iter().enumerate() {
        for (q, c) in switch.counters(p).classes.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name:>w$}  {:>5}  {:>14}  {:>15}  {:>16}  {:>17}",
                format!("UC{q}"),
                c.dropped_wred,
                "N/A",
                c.ecn_marked,
                "N/A"
            );
        }
        let _ = writeln!(out);
    }
}

/// SONiC's `show pfcwd stats`: a row per watched queue (each port's lossless queues)
/// while the watchdog is on. TX OK is what a stormed queue sent (action forward), TX DROP
/// what the watchdog dropped there; rocelab does not split ingress drops or the last
/// storm's counts, shown N/A.
fn sonic_pfcwd(out: &mut String, switch: &Switch, names: &[String]) {
    let cfg = switch.config();
    if !cfg.watchdog.enabled {
        return;
    }
    let queues: Vec<usize> = (0..CLASSES)
        .filter(|q| cfg.lossless_queues() & (1 << q) != 0)
        .collect();
    let rows: Vec<[String; 7]> = names
        .iter()
        .enumerate()
        .flat_map(|(p, name)| {
            queues.iter().map(move |&q| {
                let c = &switch.counters(p).classes[q];
                [
                    format!("{name}:{q}"),
                    if switch.is_stormed(p, q) {
                        "stormed"
                    } else {
                        "operational"
                    }
                    .to_owned(),
                    format!("{}/{}", c.storms_detected, c.storms_restored),
                    format!("{}/{}", c.tx_during_storm, c.dropped_watchdog),
                    "N/A".to_owned(),
                    "N/A".to_owned(),
                    "N/A".to_owned(),
                ]
            })
        })
        .collect();
    let heads = [
        "QUEUE",
        "STATUS",
        "STORM DETECTED/RESTORED",
        "TX OK/DROP",
        "RX OK/DROP",
        "TX LAST OK/DROP",
        "RX LAST OK/DROP",
    ];
    let widths: Vec<usize> = (0..heads.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([heads[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = String>| {
        cells
            .zip(&widths)
            .map(|(c, &w)| format!("{c:>w$}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let _ = writeln!(out, "{}", line(&mut heads.iter().map(|h| h.to_string())));
    let _ = writeln!(out, "{}", line(&mut widths.iter().map(|&w| "-".repeat(w))));
    for r in &rows {
        let _ = writeln!(out, "{}", line(&mut r.iter().cloned()));
    }
}

fn nxos(switch: &Switch) -> String {
    let cfg = switch.config();
    let mut out = String::new();
    let bar = "=".repeat(72);
    let _ = writeln!(out, "\nslot  1\n=======\n\n{bar}");
    let _ = writeln!(
        out,
        "{:<20} {:<5} {:<15} {:>12} {:>12}",
        "Port", "Mode", "Oper(VL bmap)", "RxPPP", "TxPPP"
    );
    let _ = writeln!(out, "{bar}\n");
    let vl: u8 = cfg.lossless.iter().fold(0, |m, p| m | (1 << p));
    for p in 0..switch.port_count() {
        let c = switch.counters(p);
        let (rx, tx): (u64, u64) = c.classes.iter().fold((0, 0), |(r, t), k| {
            (r + k.rx_pause_frames, t + k.tx_pause_frames)
        });
        let oper = if vl == 0 {
            "Off".to_owned()
        } else {
            format!("On  ({vl:x})")
        };
        let _ = writeln!(
            out,
            "{:<20} {:<5} {:<15} {:>12} {:>12}",
            c.name, "On", oper, rx, tx
        );
    }
    for p in 0..switch.port_count() {
        let c = switch.counters(p);
        let _ = writeln!(out, "\nEgress Queuing for {} [System]", c.name);
        let line = format!("+{}+", "-".repeat(61));
        for (q, k) in c.classes.iter().enumerate() {
            let _ = writeln!(out, "{line}");
            let _ = writeln!(out, "|{:^61}|", format!("QOS GROUP {q}"));
            let _ = writeln!(out, "{line}");
            let _ = writeln!(out, "|{:>28} |{:>15}|{:>15}|", "", "Unicast", "Multicast");
            let _ = writeln!(out, "{line}");
            let rows: [(&str, u64); 9] = [
                ("Tx Pkts", k.tx_frames),
                ("Tx Byts", k.tx_bytes),
                ("WRED/AFD & Tail Drop Pkts", k.dropped_wred + k.dropped_tail),
                ("WD & Tail Drop Pkts", k.dropped_watchdog + k.dropped_tail),
                ("Q Depth Byts", switch.queue_bytes(p, q)),
                ("Q Max Depth Byts", k.queue_watermark_bytes),
                ("Ingress Overflow Drop Pkts", k.dropped_ingress_overflow),
                ("Rx PPP", k.rx_pause_frames),
                ("Tx PPP", k.tx_pause_frames),
            ];
            for (what, n) in rows {
                let _ = writeln!(out, "|{what:>28} |{n:>15}|{:>15}|", 0);
            }
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(
            out,
            "Ingress Overflow Drop Pkts: {}",
            c.classes
                .iter()
                .map(|k| k.dropped_ingress_overflow)
                .sum::<u64>()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ClassReport;
    use crate::switch::ClassCounters;

    fn port(counters: ClassCounters) -> PortReport {
        PortReport {
            name: "p0".to_owned(),
            speed_gbps: 1.0,
            classes: vec![ClassReport {
                class: 3,
                lossless: true,
                lossless_queue: true,
                counters,
                sojourn: None,
            }],
            rx_link_pause_frames: 0,
            rx_link_local_frames: 0,
            rx_malformed_frames: 0,
            filtered_frames: 0,
            rx_oversize_frames: 0,
        }
    }

    /// The value under the column headed `head` in the first row of `table`.
    fn column(table: &str, head: &str) -> String {
        let mut lines = table.lines();
        let header = lines.next().unwrap();
        let end = header.find(head).unwrap() + head.len();
        let row = lines.next().unwrap();
        row[..end].split_whitespace().last().unwrap().to_owned()
    }

    /// f17: late_pause_frames (32827 in the JSON, with a queue of 57 MB over a 1 MB
    /// buffer) appeared in no text output, not even `--counters wide`.
    #[test]
    fn late_pause_frames_are_a_wide_column_and_a_note_in_the_table() {
        let counters = ClassCounters {
            rx_frames: 100,
            late_pause_frames: 32827,
            ..ClassCounters::default()
        };
        let wide = table(&[port(counters.clone())], true);
        assert_eq!(column(&wide, "PG late"), "32827", "{wide}");
        let plain = table(&[port(counters)], false);
        assert!(
            plain.contains("p0 class 3: 32827 frames came after its PFC pause"),
            "{plain}"
        );
        let quiet = table(&[port(ClassCounters::default())], false);
        assert!(!quiet.contains("late_pause_frames"), "{quiet}");
    }

    /// f06: `--counters wide` showed an egress MTU drop under "drop wd", the watchdog's
    /// column (p2 `drop wd 5` with `dropped_mtu 5`, `dropped_watchdog 0` in the JSON).
    #[test]
    fn wide_counts_mtu_drops_apart_from_the_watchdog() {
        let counters = ClassCounters {
            tx_frames: 1,
            dropped_mtu: 5,
            ..ClassCounters::default()
        };
        let wide = table(&[port(counters)], true);
        assert_eq!(column(&wide, "drop mtu"), "5", "{wide}");
        assert_eq!(column(&wide, "drop wd"), "0", "{wide}");
    }
}

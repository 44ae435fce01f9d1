//! "What happened": a run told in plain words, for the person tuning a switch. Which
//! ports paused whom, how often and for how long in all (SONiC's "total pause time"), how
//! many frames were CE-marked and CNPs sent, how far DCQCN cut each QP and whether it got
//! back to line rate, what the PFC watchdog did, and whether the lossless class lost
//! anything, and why. The simulator and the lab tell it from the same inputs.

use super::count;
use crate::config::CLASSES;
use crate::endpoint::EndpointCounters;
use crate::series::{ColumnKind, Series};
use crate::switch::Switch;
use crate::time::Nanos;
use std::fmt::Write as _;

/// A host as the story sees it.
#[derive(Debug, Clone)]
pub struct HostView {
    /// Its name ("h0", "r1").
    pub name: String,
    /// Its endpoint's counters.
    pub counters: EndpointCounters,
    /// How long its data priority was paused, in all.
    pub paused: Nanos,
    /// Its NIC's faults.
    pub faults: crate::endpoint::fault::Faults,
    /// On InfiniBand: how long a packet of its waited for credit, over its VLs.
    pub credit_stalled: Option<Nanos>,
    /// Its QPs that went to the error state.
    pub failures: Vec<crate::endpoint::QpFailure>,
}

/// What a story is told from.
#[derive(Debug)]
pub struct Fabric<'a> {
    /// Every switch with its name.
    pub switches: Vec<(&'a str, &'a Switch)>,
    /// Every host.
    pub hosts: Vec<HostView>,
    /// The end of the run.
    pub now: Nanos,
    /// The run's time series (for DCQCN's rates).
    pub series: Option<&'a Series>,
    /// The hosts' line rate, bit/s.
    pub line_bps: u64,
}

/// Lines shown per topic before "and N more".
const MAX_LINES: usize = 6;

fn pct(part: f64, whole: f64) -> String {
    match 100.0 * part / whole {
        p if !p.is_finite() => "-".to_owned(),
        p if p > 0.0 && p < 1.0 => format!("{p:.2} %"),
        // Not "100 %" for what is short of it (a DCQCN cut of 0.2 %).
        p if p > 99.0 && p < 100.0 => format!("{:.1} %", (p * 10.0).floor() / 10.0),
        p => format!("{p:.0} %"),
    }
}

/// A rate given in Gb/s, written with its unit chosen by its size (Gb/s from 1 Gb/s,
/// Mb/s from 1 Mb/s, kb/s below: "2.50 Mb/s", never "0.00 Gb/s" at a 1 Gb/s line rate),
/// to three significant figures, or five within 1 % below `line` so that it differs from
/// the line rate when it does.
fn rate_near(v: f64, line: f64) -> String {
    let (x, unit) = match v.abs() {
        a if a >= 1.0 || a == 0.0 => (v, "Gb/s"),
        a if a >= 1e-3 => (v * 1e3, "Mb/s"),
        _ => (v * 1e6, "kb/s"),
    };
    let figures: usize = if v < line && v >= line * 0.99 { 5 } else { 3 };
    let whole_digits = |d: usize| {
        let text = format!("{:.*}", d, x.abs());
        text.find('.').unwrap_or(text.len())
    };
    let mut decimals = figures.saturating_sub(whole_digits(0));
    // 9.996 at two decimals is "10.00": one digit too many.
    if decimals > 0 && whole_digits(decimals) + decimals > figures {
        decimals -= 1;
    }
    if x == 0.0 {
        decimals = 0;
    }
    format!("{x:.decimals$} {unit}")
}

/// Appends `lines` under `topic`, the longest first, at most [`MAX_LINES`].
fn topic(out: &mut String, title: &str, mut lines: Vec<(u64, String)>) {
    if lines.is_empty() {
        return;
    }
    lines.sort_by_key(|l| std::cmp::Reverse(l.0));
    let _ = writeln!(out, "  {title}:");
    let more = lines.len().saturating_sub(MAX_LINES);
    for (_, l) in lines.into_iter().take(MAX_LINES) {
        let _ = writeln!(out, "    - {l}");
    }
    if more > 0 {
        let _ = writeln!(out, "    - and {more} more");
    }
}

/// The story of the run, a few lines per mechanism, under "what happened".
pub fn what_happened(f: &Fabric) -> String {
    let mut out = String::from("what happened\n");
    let span = f.now;
    if f.switches.iter().any(|(_, s)| s.has_credit()) {
        credit(&mut out, f, span);
    } else {
        classification(&mut out, f);
        pfc(&mut out, f, span);
        ecn(&mut out, f);
        watchdog(&mut out, f);
    }
    loss(&mut out, f);
    out
}

/// RoCE traffic the configuration put in the wrong place, each kind once over all
/// switches.
fn classification(out: &mut String, f: &Fabric) {
    let mut seen = Vec::new();
    for &(name, sw) in &f.switches {
        for w in sw.warnings() {
            if !seen.iter().any(|(k, _)| *k == w.kind) {
                seen.push((w.kind, format!("{name}: {}", w.message)));
            }
        }
    }
    if seen.is_empty() {
        return;
    }
    let _ = writeln!(out, "  classification (warnings):");
    for (_, m) in seen {
        let _ = writeln!(out, "    - {m}");
    }
}

/// InfiniBand: who waited for credit, and how full the receive buffers got.
fn credit(out: &mut String, f: &Fabric, span: Nanos) {
    let _ = writeln!(
        out,
        "  InfiniBand: credit-based flow control per VL; no PFC, no ECN."
    );
    let mut ports = Vec::new();
    let mut fullest: Option<(u64, String)> = None;
    for &(name, sw) in &f.switches {
        for p in 0..sw.port_count() {
            let port = &sw.config().ports[p].name;
            for vl in 0..crate::credit::DATA_VLS {
                let Some(c) = sw.credit_stats(p, vl, f.now) else {
                    continue;
                };
                if c.credit_stalled > Nanos::ZERO {
                    ports.push((
                        c.credit_stalled.0,
                        format!(
                            "{name}/{port} VL {vl} had a packet waiting for credit {} in all ({} of the run)",
                            c.credit_stalled.human(),
                            pct(c.credit_stalled.0 as f64, span.0 as f64)
                        ),
                    ));
                }
                if fullest
                    .as_ref()
                    .is_none_or(|(b, _)| c.buffer_watermark_bytes > *b)
                {
                    fullest = Some((c.buffer_watermark_bytes, format!("{name}/{port} VL {vl}")));
                }
            }
        }
    }
    let hosts: Vec<(u64, String)> = f
        .hosts
        .iter()
        .filter_map(|h| {
            let t = h.credit_stalled.filter(|t| *t > Nanos::ZERO)?;
            Some((
                t.0,
                format!(
                    "{} had a packet waiting for credit {} in all ({})",
                    h.name,
                    t.human(),
                    pct(t.0 as f64, span.0 as f64)
                ),
            ))
        })
        .collect();
    if ports.is_empty() && hosts.is_empty() {
        let _ = writeln!(out, "  credit: no sender ever waited for credit.");
    }
    topic(out, "credit, switch ports waiting", ports);
    topic(out, "credit, hosts waiting", hosts);
    let marked: u64 = f
        .switches
        .iter()
        .flat_map(|(_, sw)| (0..sw.port_count()).map(|p| sw.counters(p)))
        .flat_map(|c| c.classes.iter().map(|k| k.ecn_marked))
        .sum();
    if marked > 0 {
        let becns: u64 = f.hosts.iter().map(|h| h.counters.cnps_sent).sum();
        let _ = writeln!(
            out,
            "  congestion control: the switches marked FECN on {marked} packets; the destinations answered with {becns} BECNs (CNPs)."
        );
    }
    if let Some((bytes, at)) = fullest.filter(|(b, _)| *b > 0) {
        let _ = writeln!(
            out,
            "  buffer: the fullest receive buffer was {at}'s, {} at most.",
            crate::bytes::human(bytes)
        );
    }
}

/// The words for a PG that flaps: its XON point sits less than one of the frames it
/// takes in (`frame`, their mean size) below its XOFF point, so one frame leaving ends
/// every pause, and it paused and resumed its peer again and again (ten times or more).
/// Empty otherwise.
fn flapping(
    cfg: &crate::config::SwitchConfig,
    pg: usize,
    frame: u64,
    xoff: Nanos,
    xons: u64,
) -> String {
    use crate::config::XoffRule;
    let Some(rule) = cfg.pgs.get(pg).map(|g| g.xoff) else {
        return String::new();
    };
    let hysteresis = match rule {
        XoffRule::Static {
            xoff_bytes,
            xon_bytes,
        } => xoff_bytes.saturating_sub(xon_bytes),
        XoffRule::Dynamic {
            xon_offset_bytes, ..
        } => xon_offset_bytes,
    };
    if xons < 10 || hysteresis >= frame {
        return String::new();
    }
    format!(
        ": flapping, each pause {} on average: the XON point is {hysteresis} B below XOFF, less than one of its {frame} B frames, so one frame leaving ends it (raise the XON offset above a frame)",
        Nanos(xoff.0 / xons).human()
    )
}

fn pfc(out: &mut String, f: &Fabric, span: Nanos) {
    let mut held = Vec::new();
    let mut paused_ports = Vec::new();
    for &(name, sw) in &f.switches {
        let lossless = sw.config().lossless;
        for p in 0..sw.port_count() {
            let port = &sw.config().ports[p].name;
            for (c, k) in sw.counters(p).classes.iter().enumerate().take(CLASSES) {
                if k.tx_pause_frames > 0 {
                    let t = sw.xoff_time(p, c, f.now);
                    let frame = k.rx_bytes.checked_div(k.rx_frames).unwrap_or(0);
                    let flapping = flapping(sw.config(), c, frame, t, k.tx_xon_frames);
                    held.push((
                        t.0,
                        format!(
                            "{name} held the peer on {port} in XOFF for priority {c}: {} in all ({} of the run), {} PFC frames ({} XON){flapping}",
                            t.human(),
                            pct(t.0 as f64, span.0 as f64),
                            k.tx_pause_frames,
                            k.tx_xon_frames
                        ),
                    ));
                }
                if k.rx_pause_frames > 0 && lossless.contains(c as u8) {
                    let q = usize::from(sw.config().tc_to_queue[c]);
                    let t = sw.paused_time(p, q, f.now);
                    paused_ports.push((
                        t.0,
                        format!(
                            "the peer on {name}/{port} paused its queue {q}: {} in all ({}), {} PFC frames",
                            t.human(),
                            pct(t.0 as f64, span.0 as f64),
                            k.rx_pause_frames
                        ),
                    ));
                }
            }
        }
    }
    let hosts: Vec<(u64, String)> = f
        .hosts
        .iter()
        .filter(|h| h.counters.pauses_received > 0 || h.paused > Nanos::ZERO)
        .map(|h| {
            (
                h.paused.0,
                if h.paused == Nanos::ZERO {
                    // XON only, or pauses that a following XON ended at once.
                    format!(
                        "{} received {} but was never paused (an XON ends a pause at once)",
                        h.name,
                        count(h.counters.pauses_received, "PFC frame")
                    )
                } else {
                    format!(
                        "{} was paused {} in all ({}), by {}",
                        h.name,
                        h.paused.human(),
                        pct(h.paused.0 as f64, span.0 as f64),
                        count(h.counters.pauses_received, "PFC frame")
                    )
                },
            )
        })
        .collect();
    let host_pfc: Vec<(u64, String)> = f
        .hosts
        .iter()
        .filter(|h| h.counters.pfc_sent > 0)
        .map(|h| {
            let why = match (h.faults.slow_receiver, h.faults.pause_storm) {
                (Some(_), Some(_)) => "a slow receiver, and stuck in a pause storm",
                (Some(_), None) => "a slow receiver, its receive buffer at XOFF",
                (None, Some(_)) => "stuck in a pause storm",
                (None, None) => "a NIC fault",
            };
            (
                h.counters.pfc_sent,
                format!(
                    "{}'s NIC sent {} PFC frames ({} XON): {why}",
                    h.name, h.counters.pfc_sent, h.counters.pfc_xon_sent
                ),
            )
        })
        .collect();
    if held.is_empty() && paused_ports.is_empty() && hosts.is_empty() && host_pfc.is_empty() {
        let _ = writeln!(out, "  PFC: no pause frame was sent.");
        return;
    }
    topic(out, "PFC, switches pausing their peers", held);
    topic(out, "PFC, NICs pausing the switch", host_pfc);
    topic(
        out,
        "PFC, switch queues paused by their peers",
        paused_ports,
    );
    topic(out, "PFC, hosts paused", hosts);
    deadlock(out, f);
}

/// A PFC deadlock, named: two or more switch queues that hold frames and stay paused,
/// without sending one, from some time to the end of the run (at least a tenth of it),
/// while no NIC is stuck in a pause storm. Each waits for a peer that is itself paused:
/// the cyclic buffer dependency that PFC alone never resolves.
fn deadlock(out: &mut String, f: &Fabric) {
    let Some(series) = f.series else { return };
    let n = series.times.len();
    if n < 10 || f.hosts.iter().any(|h| h.faults.pause_storm.is_some()) {
        return;
    }
    let mut stuck: Vec<(usize, &str)> = Vec::new();
    for paused in series
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Paused)
    {
        let Some(queue) = paused.label.strip_suffix(" paused") else {
            continue;
        };
        let Some(bytes) = series
            .columns
            .iter()
            .find(|c| c.kind == ColumnKind::QueueBytes && c.label == queue)
        else {
            continue;
        };
        // From the end back: paused at every sample, and the queue neither grew nor
        // shrank (nothing left it, nothing came in).
        let last = bytes.values[n - 1];
        let from = (0..n)
            .rev()
            .take_while(|&i| paused.values[i] >= 1.0 && bytes.values[i] == last)
            .last();
        if let Some(from) = from.filter(|&i| last > 0.0 && i <= n - n / 10) {
            stuck.push((from, queue));
        }
    }
    if stuck.len() < 2 {
        return;
    }
    stuck.sort();
    let since = series.times[stuck.iter().map(|s| s.0).max().unwrap_or(0)];
    let watchdog = f
        .switches
        .iter()
        .any(|(_, sw)| sw.config().watchdog.enabled);
    let names: Vec<&str> = stuck.iter().map(|s| s.1).collect();
    let _ = writeln!(
        out,
        "  PFC deadlock: from {} to the end, {} queues held frames and stayed paused without sending one ({}). \
         Each waits for a peer that is itself paused: a cyclic buffer dependency, which PFC alone never resolves{}.",
        since.human(),
        names.len(),
        names.join(", "),
        if watchdog {
            "; the PFC watchdog is on and did not end it"
        } else {
            "; the PFC watchdog (switch.watchdog) breaks it, at the cost of dropping or forwarding what the queues hold"
        }
    );
}

fn ecn(out: &mut String, f: &Fabric) {
    let mut marked = Vec::new();
    for &(name, sw) in &f.switches {
        for p in 0..sw.port_count() {
            let port = &sw.config().ports[p].name;
            for (q, k) in sw.counters(p).classes.iter().enumerate() {
                if k.ecn_marked > 0 {
                    // Marked as queued: the frames still queued at the end count too, or
                    // a run ending on a full queue shows more marks than frames.
                    let queued = k.tx_frames + sw.queue_frames(p, q) as u64;
                    marked.push((
                        k.ecn_marked,
                        format!(
                            "{name}/{port} queue {q} marked {} frames CE ({} of the {} it queued)",
                            k.ecn_marked,
                            pct(k.ecn_marked as f64, queued as f64),
                            queued
                        ),
                    ));
                }
            }
        }
    }
    let cnps: u64 = f.hosts.iter().map(|h| h.counters.cnps_sent).sum();
    let cnps_rx: u64 = f.hosts.iter().map(|h| h.counters.cnps_received).sum();
    if marked.is_empty() && cnps == 0 {
        let _ = writeln!(
            out,
            "  ECN: no frame was CE-marked; DCQCN never cut a rate."
        );
        return;
    }
    topic(out, "ECN", marked);
    let _ = writeln!(
        out,
        "  DCQCN: the receivers sent {cnps} CNPs; the senders took {cnps_rx}."
    );
    let Some(series) = f.series else { return };
    let line = f.line_bps as f64 / 1e9;
    let mut qps = Vec::new();
    for c in series
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::RcGbps)
    {
        let Some((i, &low)) = c
            .values
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
        else {
            continue;
        };
        if low >= line * 0.999 {
            continue;
        }
        let at = series.times[i];
        let back = c.values[i..]
            .iter()
            .position(|&v| v >= line * 0.999)
            .map(|k| series.times[i + k]);
        let end = c.values.last().copied().unwrap_or(low);
        let after = match back {
            // DCQCN's recovery nears the target rate in ever smaller steps.
            Some(t) => format!("back within 0.1 % of line rate at {}", t.human()),
            None => format!(
                "{} at the end ({} of line rate)",
                rate_near(end, line),
                pct(end, line)
            ),
        };
        qps.push((
            ((line - low) * 1e6) as u64,
            format!(
                "{}: Rc down to {} ({} of line rate) at {}; {after}",
                c.label,
                rate_near(low, line),
                pct(low, line),
                at.human()
            ),
        ));
    }
    topic(out, "DCQCN, each QP's deepest cut (sampled)", qps);
}

fn watchdog(out: &mut String, f: &Fabric) {
    let mut lines = Vec::new();
    for &(name, sw) in &f.switches {
        for s in sw.storms() {
            let port = &sw.config().ports[s.port].name;
            let dropped = sw.counters(s.port).classes[s.queue].dropped_watchdog;
            let restored = s.restored.map_or_else(
                || "still stormed at the end".to_owned(),
                |t| format!("restored at {}", t.human()),
            );
            lines.push((
                u64::MAX - s.detected.0,
                format!(
                    "storm on {name}/{port} queue {}: detected at {}, {restored}; {} frames dropped by the watchdog on that queue in all (action {})",
                    s.queue,
                    s.detected.human(),
                    dropped,
                    format!("{:?}", sw.config().watchdog.action).to_lowercase()
                ),
            ));
        }
    }
    topic(out, "PFC watchdog", lines);
}

/// "1 frame", "2 frames".
fn frames(n: u64) -> String {
    count(n, "frame")
}

fn loss(out: &mut String, f: &Fabric) {
    // The classes PFC (or InfiniBand's credit) protects, as configured: none with PFC off.
    let protected = f
        .switches
        .iter()
        .map(|(_, sw)| {
            if sw.has_credit() {
                CLASSES
            } else {
                sw.config().lossless.iter().count()
            }
        })
        .max()
        .unwrap_or(0);
    let mut lossless = 0u64;
    let mut late = 0u64;
    let mut lossy = 0u64;
    let mut lossy_causes = [0u64; 3];
    let mut explained = Vec::new();
    for &(name, sw) in &f.switches {
        let cfg = sw.config();
        let lossless_queues = cfg.lossless_queues();
        for p in 0..sw.port_count() {
            for (c, k) in sw.counters(p).classes.iter().enumerate() {
                // Ingress overflow is counted under the class, the other drops under the
                // egress queue, which tc_to_queue may number otherwise. On InfiniBand every
                // VL is lossless, by credit.
                if sw.has_credit() || cfg.lossless.contains(c as u8) {
                    lossless += k.dropped_ingress_overflow;
                    late += k.late_pause_frames;
                } else {
                    lossy += k.dropped_ingress_overflow;
                    lossy_causes[2] += k.dropped_ingress_overflow;
                }
                if sw.has_credit() || lossless_queues & (1 << c) != 0 {
                    lossless += k.dropped_at_queue();
                } else {
                    lossy += k.dropped_at_queue();
                    lossy_causes[0] += k.dropped_tail;
                    lossy_causes[1] += k.dropped_wred;
                }
            }
        }
        for d in sw.drops() {
            let first = d.explain(cfg, Nanos::ZERO);
            let count = {
                let k = &sw.counters(d.port).classes[usize::from(d.class)];
                let q = &sw.counters(d.port).classes[d.queue];
                match d.cause {
                    crate::switch::DropCause::IngressOverflow => k.dropped_ingress_overflow,
                    crate::switch::DropCause::Tail => q.dropped_tail,
                    crate::switch::DropCause::Wred => q.dropped_wred,
                    crate::switch::DropCause::Watchdog => q.dropped_watchdog,
                    crate::switch::DropCause::Mtu => q.dropped_mtu,
                }
            };
            explained.push((count, format!("{name}/{first} ({count} such drops in all)")));
        }
    }
    let host_drops: u64 = f.hosts.iter().map(|h| h.counters.rx_buffer_drops).sum();
    let resent: u64 = f
        .hosts
        .iter()
        .map(|h| h.counters.retransmitted_packets)
        .sum();
    let timeouts: u64 = f.hosts.iter().map(|h| h.counters.timeouts).sum();
    let classes = if protected == 1 {
        "the lossless class"
    } else {
        "the lossless classes"
    };
    if protected == 0 {
        let _ = writeln!(
            out,
            "  loss: no class is lossless here (no PFC priority), so nothing is protected from drops."
        );
    } else if lossless == 0 {
        let _ = writeln!(out, "  loss: {classes} lost nothing in the switches.");
    } else {
        let _ = writeln!(
            out,
            "  loss: {classes} lost {} in the switches.",
            frames(lossless)
        );
    }
    if late > 0 {
        let _ = writeln!(
            out,
            "  the live switch's thread ran late: its pauses left after their time, and it held {} past full headrooms that their senders would otherwise have held (not drops; the machine could not keep up).",
            frames(late)
        );
    }
    if lossy > 0 {
        let _ = writeln!(
            out,
            "  lossy classes dropped {} ({} tail, {} WRED, {} at ingress).",
            frames(lossy),
            lossy_causes[0],
            lossy_causes[1],
            lossy_causes[2]
        );
    }
    topic(
        out,
        "every kind of drop, its first one explained",
        explained,
    );
    if host_drops > 0 {
        let _ = writeln!(
            out,
            "  hosts' receive buffers dropped {} (a slow receiver's headroom above its XOFF point was too small).",
            frames(host_drops)
        );
    }
    if resent > 0 || timeouts > 0 {
        let _ = writeln!(
            out,
            "  the QPs resent {resent} data packets ({timeouts} retransmission timeouts)."
        );
    }
    for (h, failure) in f
        .hosts
        .iter()
        .flat_map(|h| h.failures.iter().map(move |x| (h, x)))
    {
        let why = match failure.status {
            crate::endpoint::WcStatus::RetryExceeded => "its retry count was exceeded",
            crate::endpoint::WcStatus::RemoteAccess => "the peer NAKed a WRITE it could not place",
            crate::endpoint::WcStatus::Flushed => "it was flushed",
        };
        let _ = writeln!(
            out,
            "  QP {:#x} of {} to {} (QP {:#x}) went to the error state at {} after {} retries: {why}; {} work requests completed in error.",
            failure.qpn,
            h.name,
            failure.peer_ip,
            failure.peer_qpn,
            Nanos(failure.at_ns).human(),
            failure.retries,
            failure.failed_wrs
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SwitchConfig;

    fn story_of(cfg: &SwitchConfig) -> String {
        let sw = Switch::new(cfg);
        what_happened(&Fabric {
            switches: vec![("sw", &sw)],
            hosts: Vec::new(),
            now: Nanos::ZERO,
            series: None,
            line_bps: 1_000_000_000,
        })
    }

    /// With PFC off the story said "the lossless class lost nothing in the switches"
    /// beside 69,760 lossy drops: it names the classes the configuration protects.
    #[test]
    fn the_loss_line_names_the_lossless_classes_the_configuration_has() {
        let mut cfg = SwitchConfig::preset("default").unwrap();
        cfg.ports = vec![cfg.port_or_default("p0"), cfg.port_or_default("p1")];
        assert_eq!(
            cfg.lossless.iter().count(),
            1,
            "the preset protects class 3"
        );
        let one = story_of(&cfg);
        assert!(
            one.contains("loss: the lossless class lost nothing in the switches."),
            "{one}"
        );
        let mut two = cfg.clone();
        two.lossless.insert(4);
        two.pgs[4].lossless = true;
        let two = story_of(&two);
        assert!(
            two.contains("loss: the lossless classes lost nothing"),
            "{two}"
        );
        let mut none = cfg;
        none.disable_pfc();
        let none = story_of(&none);
        assert!(
            none.contains("loss: no class is lossless here (no PFC priority)"),
            "{none}"
        );
        assert!(!none.contains("lossless class lost"), "{none}");
    }

    #[test]
    fn a_rate_takes_the_unit_its_size_calls_for_at_three_figures() {
        // At a 1 Gb/s line rate, Rmin scaled by the lab is 2.5 Mb/s: not "0.00 Gb/s".
        assert_eq!(rate_near(0.0025, 1.0), "2.50 Mb/s");
        assert_eq!(rate_near(0.1, 25.0), "100 Mb/s");
        assert_eq!(rate_near(0.5, 1.0), "500 Mb/s");
        assert_eq!(rate_near(6.6912, 25.0), "6.69 Gb/s");
        assert_eq!(rate_near(24.4, 100.0), "24.4 Gb/s");
        assert_eq!(rate_near(0.000_05, 1.0), "50.0 kb/s");
        assert_eq!(rate_near(9.996, 25.0), "10.0 Gb/s");
        assert_eq!(rate_near(0.0, 25.0), "0 Gb/s");
        // Within 1 % of the line rate: five figures, so a 0.2 % cut shows.
        assert_eq!(rate_near(24.95, 25.0), "24.950 Gb/s");
        assert_eq!(rate_near(0.998, 1.0), "998.00 Mb/s");
    }

    #[test]
    fn a_deep_cut_at_a_slow_line_rate_is_told_in_mb_per_s() {
        use crate::series::{Column, ColumnKind, Series};
        let sw = Switch::new(&SwitchConfig::preset("default").unwrap());
        let series = Series {
            times: vec![Nanos(0), Nanos(1_000_000), Nanos(2_000_000)],
            columns: vec![Column {
                name: "rate_h0_qp0x100_gbps".into(),
                label: "h0 qp 0x100".into(),
                kind: ColumnKind::RcGbps,
                values: vec![1.0, 0.0025, 0.25],
            }],
        };
        let counters = EndpointCounters {
            cnps_sent: 3,
            ..Default::default()
        };
        let story = what_happened(&Fabric {
            switches: vec![("sw", &sw)],
            hosts: vec![HostView {
                name: "h0".into(),
                counters,
                paused: Nanos::ZERO,
                faults: Default::default(),
                credit_stalled: None,
                failures: Vec::new(),
            }],
            now: Nanos(2_000_000),
            series: Some(&series),
            line_bps: 1_000_000_000,
        });
        assert!(
            story.contains(
                "h0 qp 0x100: Rc down to 2.50 Mb/s (0.25 % of line rate) at 1 ms; \
                 250 Mb/s at the end (25 % of line rate)"
            ),
            "{story}"
        );
    }
}

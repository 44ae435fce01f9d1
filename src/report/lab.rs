//! What `rocelab lab` prints and writes.

use super::counters::{CounterStyle, render};
use super::ports;
use crate::bytes::human as human_bytes;
use crate::lab::run::{LabOptions, LabOutcome, Workload};
use crate::lab::twin::Comparison;
use std::fmt::Write as _;

fn gbps(bps: u64) -> f64 {
    bps as f64 / 1e9
}

/// The title of the all-reduce table (nccl-tests' rows, streamed as each size finishes).
pub fn allreduce_title(opts: &LabOptions) -> String {
    format!(
        "ring all-reduce, {} ranks, float sum, one QP per rank to the next",
        opts.ranks()
    )
}

/// What each host's endpoint did, and DCQCN's state of each QP that sent.
pub fn hosts_table(out: &LabOutcome) -> String {
    let mut s = String::from("Endpoints and DCQCN per QP (Rc, Rt, alpha at the end)\n");
    let _ = writeln!(
        s,
        "  {:<4} {:>8} {:>9} {:>8} {:>8} {:>8} {:>9} {:>7} {:>7}   {:>7} {:>8} {:>8} {:>7}",
        "host",
        "frames",
        "data pkts",
        "retrans",
        "CNPs tx",
        "CNPs rx",
        "CE marked",
        "pauses",
        "k.drops",
        "QPN",
        "Rc Gb/s",
        "Rt Gb/s",
        "alpha"
    );
    for h in &out.hosts {
        let c = &h.counters;
        let first = format!(
            "  {:<4} {:>8} {:>9} {:>8} {:>8} {:>8} {:>9} {:>7} {:>7}",
            h.name,
            c.frames_sent,
            c.data_packets_sent,
            c.retransmitted_packets,
            c.cnps_sent,
            c.cnps_received,
            c.ce_received,
            c.pauses_received + c.link_pauses_received,
            h.kernel.drops
        );
        if h.qps.is_empty() {
            let _ = writeln!(s, "{first}   {:>7}", "-");
        }
        for (k, q) in h.qps.iter().enumerate() {
            let lead = if k == 0 {
                first.clone()
            } else {
                " ".repeat(first.len())
            };
            let _ = writeln!(
                s,
                "{lead}   {:>7} {:>8.3} {:>8.3} {:>7.4}",
                format!("{:#x}", q.qpn),
                gbps(q.rate_bps),
                gbps(q.target_bps),
                q.alpha
            );
        }
    }
    s
}

/// Frames each endpoint sent beside frames the switch received on its port in the
/// classes the endpoint's DSCPs map to: they must be equal (the veth loses nothing; the
/// switch counts everything it takes in). Frames of the hosts' own kernels (class 0) are
/// left out.
pub fn consistency(opts: &LabOptions, out: &LabOutcome) -> Vec<(String, u64, u64)> {
    let cfg = out.switch.config();
    let mut classes = vec![cfg.dscp_to_tc[usize::from(opts.endpoint().dscp & 63)]];
    classes.push(cfg.dscp_to_tc[usize::from(opts.endpoint().cnp_dscp & 63)]);
    classes.dedup();
    out.hosts
        .iter()
        .map(|h| {
            let c = out.switch.counters(h.port);
            let rx = classes
                .iter()
                .map(|&k| c.classes[usize::from(k)].rx_frames)
                .sum();
            (h.name.clone(), h.counters.frames_sent, rx)
        })
        .collect()
}

/// The whole text report but the all-reduce table, which the command line streams.
pub fn text(opts: &LabOptions, out: &LabOutcome, style: CounterStyle) -> String {
    let mut s = String::new();
    if opts.workload() == Workload::Incast {
        let _ = writeln!(
            s,
            "incast: {} senders, {} each, into r0; {:.2} s\n",
            opts.ranks() - 1,
            human_bytes(opts.flow_bytes().unwrap_or(0)),
            out.elapsed.as_secs_f64()
        );
    }
    s.push_str(&hosts_table(out));
    let _ = writeln!(s, "\nswitch:");
    s.push_str(&render(&out.switch, style));
    let _ = writeln!(s);
    s.push_str(&what_happened(opts, out));
    let checks = consistency(opts, out);
    let _ = writeln!(s, "\n{}", threads_line(opts, out));
    let _ = writeln!(
        s,
        "frames sent by each endpoint / received by the switch on its port: {}",
        checks
            .iter()
            .map(|(n, a, b)| format!("{n} {a}/{b}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // A difference is the switch's sockets' (their rings overflowed while its thread was
    // behind) or a bug: say which, never leave it to the reader to spot.
    for ((name, sent, received), host) in checks.iter().zip(&out.hosts) {
        if sent == received {
            continue;
        }
        let kernel = out
            .switch_kernel
            .get(host.port)
            .map_or(0, |k| k.drops + k.truncated);
        let _ = writeln!(
            s,
            "warning: {name} sent {sent} frames and the switch counted {received}: {}",
            if kernel > 0 {
                format!(
                    "its port's socket dropped {kernel} frames the switch's thread did not read in time"
                )
            } else {
                "the switch's socket dropped none; frames were lost between them".to_owned()
            }
        );
    }
    s
}

/// "What happened" in the live run, in plain words (see [`super::story`]).
pub fn what_happened(opts: &LabOptions, out: &LabOutcome) -> String {
    let fabric = super::story::Fabric {
        switches: vec![("sw", &out.switch)],
        hosts: out
            .hosts
            .iter()
            .map(|h| super::story::HostView {
                name: h.name.clone(),
                counters: h.counters,
                paused: crate::time::Nanos(h.paused_ns),
                faults: Default::default(),
                credit_stalled: None,
                failures: h.qp_errors.clone(),
            })
            .collect(),
        now: out.switch.now(),
        series: Some(&out.series),
        line_bps: opts.endpoint().bits_per_sec(),
    };
    super::story::what_happened(&fabric)
}

/// How the lab's two threads fared: how busy each was, the share of frames that waited
/// in the kernel past their core's catch-up window, and the longest any frame waited. A thread that takes more than
/// 10 % of its frames late could not keep up with the emulated rate: the time it lost is
/// lost to the fabric, which falls behind its twin.
pub fn threads_line(opts: &LabOptions, out: &LabOutcome) -> String {
    let one = |name: &str, t: &crate::runtime::ports::ThreadStats| {
        format!(
            "{name} {:.0} % busy, {:.1} % of frames late, stalled up to {:.1} ms",
            t.busy() * 100.0,
            t.late() * 100.0,
            t.max_lag_ns as f64 / 1e6
        )
    };
    let mut line = format!(
        "threads ({}): {}; {}",
        if opts.realtime.is_some() {
            "real-time priority"
        } else {
            "normal priority"
        },
        one("switch", &out.switch_thread),
        one("hosts", &out.hosts_thread)
    );
    if let Some(l) = opts.lookahead {
        let lag = out
            .switch_thread
            .dilation_ns
            .max(out.hosts_thread.dilation_ns);
        // The run's time is emulated: the wall clock took the lag longer.
        let emulated = (out.elapsed.as_nanos() as f64).max(1.0);
        let _ = write!(
            line,
            "; in lockstep (lookahead {}): emulated time dilated by {:.1} ms (the wall clock took {:.3}x the run's time), the switch held back {} rounds and the hosts {}",
            l.human(),
            lag as f64 / 1e6,
            (emulated + lag as f64) / emulated,
            out.switch_thread.held_rounds,
            out.hosts_thread.held_rounds,
        );
    }
    if out.switch_thread.late().max(out.hosts_thread.late()) > 0.10 {
        line.push_str(
            "; a thread took over 10 % of its frames late, so it could not keep up: lower --rate for a faithful run",
        );
    }
    line
}

/// Whether the machine produced the live run faithfully, and if not, why: a thread that
/// could not keep up (over 10 % of its frames late), a stall longer than 2 ms outside
/// lockstep, frames that came in after the switch's pause should have stopped them
/// (`late_pause_frames`), or frames the kernel dropped at a socket. A run in lockstep may
/// stall: its emulated time dilates.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Verdict {
    /// True when none of the reasons below holds.
    pub faithful: bool,
    /// Each reason the run is not, in plain words.
    pub why: Vec<String>,
}

/// The longest stall a run outside lockstep may have and still count as faithful.
const MAX_FAITHFUL_STALL_NS: u64 = 2_000_000;

/// See [`Verdict`].
pub fn verdict(opts: &LabOptions, out: &LabOutcome) -> Verdict {
    let mut why = Vec::new();
    for (name, t) in [("switch", &out.switch_thread), ("hosts", &out.hosts_thread)] {
        if t.late() > 0.10 {
            why.push(format!(
                "the {name}' thread took {:.0} % of its frames late: it could not keep up with the emulated rate (lower the rate)",
                t.late() * 100.0
            ));
        }
        if opts.lookahead.is_none() && t.max_lag_ns > MAX_FAITHFUL_STALL_NS {
            why.push(format!(
                "the {name}' thread stalled {:.1} ms, and without lockstep the other thread ran on meanwhile",
                t.max_lag_ns as f64 / 1e6
            ));
        }
    }
    let late_pause: u64 = (0..out.switch.port_count())
        .flat_map(|p| {
            out.switch
                .counters(p)
                .classes
                .iter()
                .map(|c| c.late_pause_frames)
        })
        .sum();
    if late_pause > 0 {
        why.push(format!(
            "{late_pause} frames came in after the switch's pause should have stopped them (a thread ran late): the queue they made is the machine's, not the fabric's"
        ));
    }
    let dropped: u64 = out.hosts.iter().map(|h| h.kernel.drops).sum::<u64>()
        + out.switch_kernel.iter().map(|k| k.drops).sum::<u64>();
    if dropped > 0 {
        why.push(format!(
            "the kernel dropped {dropped} frames at the sockets: frames the emulated fabric did not lose"
        ));
    }
    Verdict {
        faithful: why.is_empty(),
        why,
    }
}

/// The verdict as the lines under the all-reduce table.
pub fn verdict_lines(v: &Verdict) -> String {
    if v.faithful {
        return "# faithful: no thread fell behind and no frame was lost outside the emulated fabric\n".to_owned();
    }
    let mut s = String::from(
        "# NOT FAITHFUL: this machine could not run the fabric as emulated; the figures above are not the fabric's:\n",
    );
    for w in &v.why {
        let _ = writeln!(s, "#   {w}");
    }
    s
}

/// Everything as JSON.
pub fn json(opts: &LabOptions, out: &LabOutcome) -> serde_json::Value {
    let checks: Vec<serde_json::Value> = consistency(opts, out)
        .into_iter()
        .map(|(n, a, b)| serde_json::json!({"host": n, "endpoint_frames_sent": a, "switch_frames_received": b}))
        .collect();
    super::document(
        "lab",
        serde_json::json!({
            "config": super::configs(Some(opts.switch()), Some(&opts.endpoint())),
            "workload": opts.workload().to_string(),
            "ranks": opts.ranks(),
            "link_gbps": opts.endpoint().link_gbps,
            "realtime": opts.realtime.is_some(),
            "pfc": !opts.switch().lossless.is_empty(),
            "ecn": opts.switch().queues.iter().any(|q| q.ecn.is_some()),
            "dcqcn": opts.endpoint().dcqcn.enabled,
            "elapsed_s": out.elapsed.as_secs_f64(),
            "start_ns": out.start_ns,
            "start": crate::time::epoch_seconds_string(out.start_ns),
            "interrupted": out.interrupted,
            "allreduce": out.allreduce,
            "hosts": out.hosts,
            "switch": { "ports": ports(&out.switch), "kernel": out.switch_kernel },
            "consistency": checks,
            "threads": { "switch": out.switch_thread, "hosts": out.hosts_thread },
            "lookahead_ns": opts.lookahead.map(|l| l.0),
            "verdict": verdict(opts, out),
            "what_happened": what_happened(opts, out).lines().skip(1).map(str::trim).collect::<Vec<_>>(),
        }),
    )
}

/// The lab beside its simulated twin: per all-reduce size, live and twin time and busbw
/// with their ratio; then the fabric's totals side by side.
pub fn twin_table(c: &Comparison) -> String {
    let mut s =
        String::from("\n# live vs simulated twin (the same fabric and workload in virtual time)\n");
    if !c.allreduce.is_empty() {
        let _ = writeln!(
            s,
            "# {:>10} {:>12} {:>12} {:>11} {:>11} {:>10}",
            "size", "live time", "twin time", "live busbw", "twin busbw", "live/twin"
        );
        let _ = writeln!(
            s,
            "# {:>10} {:>12} {:>12} {:>11} {:>11} {:>10}",
            "(B)", "(us)", "(us)", "(GB/s)", "(GB/s)", "(busbw)"
        );
        let us =
            |t: Option<u64>| t.map_or_else(|| "-".to_owned(), |t| format!("{:.1}", t as f64 / 1e3));
        for r in &c.allreduce {
            let _ = writeln!(
                s,
                "  {:>10} {:>12} {:>12} {:>11.3} {:>11.3} {:>10}",
                r.size,
                us(r.live.time_ns),
                us(r.twin.time_ns),
                r.live.busbw(),
                r.twin.busbw(),
                r.busbw_ratio()
                    .map_or_else(|| "-".to_owned(), |x| format!("{x:.2}"))
            );
        }
    }
    let _ = writeln!(s, "# {:<28} {:>12} {:>12}", "fabric totals", "live", "twin");
    for (what, live, twin) in [
        ("PFC frames sent", c.live.pfc_sent, c.twin.pfc_sent),
        ("CE marked", c.live.ce_marked, c.twin.ce_marked),
        ("CNPs sent", c.live.cnps_sent, c.twin.cnps_sent),
        ("drops", c.live.dropped, c.twin.dropped),
        (
            "largest queue (B)",
            c.live.queue_watermark_bytes,
            c.twin.queue_watermark_bytes,
        ),
    ] {
        let _ = writeln!(s, "  {what:<28} {live:>12} {twin:>12}");
    }
    if !c.into_r0.is_empty() {
        let _ = writeln!(
            s,
            "# {:<28} {:>12} {:>12} {:>10}",
            "share of r0's inflow", "live", "twin", "live-twin"
        );
        for r in &c.into_r0 {
            let _ = writeln!(
                s,
                "  {:<28} {:>11.1}% {:>11.1}% {:>+9.1}%",
                format!("from {}", r.from),
                r.live * 100.0,
                r.twin * 100.0,
                (r.live - r.twin) * 100.0
            );
        }
    }
    s
}

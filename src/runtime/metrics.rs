//! Prometheus text exposition of the switch counters, served on a loopback address: the
//! core thread renders a snapshot every 250 ms, a small HTTP thread serves the latest.

use crate::config::CLASSES;
use crate::switch::Switch;
use crate::time::Nanos;
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The latest rendered text, shared with the HTTP thread.
#[derive(Debug, Clone, Default)]
pub struct Snapshot(Arc<Mutex<String>>);

impl Snapshot {
    /// Replaces the text.
    pub fn set(&self, text: String) {
        if let Ok(mut s) = self.0.lock() {
            *s = text;
        }
    }

    fn get(&self) -> String {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// Starts serving `GET /metrics` on `addr`, which must be a loopback address. The thread
/// ends when `stop` is raised.
pub fn serve(addr: SocketAddr, stop: Arc<AtomicBool>) -> io::Result<Snapshot> {
    if !addr.ip().is_loopback() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "--metrics {addr}: the metrics endpoint binds to loopback only (127.0.0.1 or ::1)"
            ),
        ));
    }
    let listener = TcpListener::bind(addr)
        .map_err(|e| io::Error::new(e.kind(), format!("--metrics {addr}: {e}")))?;
    listener.set_nonblocking(true)?;
    let snapshot = Snapshot::default();
    let shared = snapshot.clone();
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            while !super::stopped(&stop) {
                match listener.accept() {
                    Ok((mut conn, _)) => {
                        let _ = conn.set_nonblocking(false);
                        let _ = conn.set_read_timeout(Some(Duration::from_secs(1)));
                        let mut req = [0u8; 1024];
                        let n = conn.read(&mut req).unwrap_or(0);
                        let head = String::from_utf8_lossy(&req[..n]);
                        let (status, body) = if head.starts_with("GET /metrics") {
                            ("200 OK", shared.get())
                        } else {
                            ("404 Not Found", "try /metrics\n".to_owned())
                        };
                        let _ = write!(
                            conn,
                            "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        })?;
    Ok(snapshot)
}

/// Upper bounds of the queue sojourn histogram's buckets: ns, and the `le` label as
/// Prometheus's own clients write it (1 µs to 1 s).
pub const SOJOURN_BUCKETS: [(u64, &str); 7] = [
    (1_000, "1e-06"),
    (10_000, "1e-05"),
    (100_000, "0.0001"),
    (1_000_000, "0.001"),
    (10_000_000, "0.01"),
    (100_000_000, "0.1"),
    (1_000_000_000, "1.0"),
];

/// One metric family being written: its HELP and TYPE once, then its samples.
struct Family<'a> {
    out: &'a mut String,
}

impl Family<'_> {
    fn start<'a>(out: &'a mut String, name: &str, kind: &str, help: &str) -> Family<'a> {
        let _ = writeln!(
            out,
            "# HELP rocelab_{name} {help}\n# TYPE rocelab_{name} {kind}"
        );
        Family { out }
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect();
        let _ = writeln!(self.out, "rocelab_{name}{{{}}} {value}", labels.join(","));
    }
}

/// A label value as the exposition format quotes it.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The counters in the Prometheus text format (version 0.0.4), named by Prometheus's
/// practices: base units (seconds, bytes), a unit noun in every name, `_total` on
/// counters, one label name per dimension: `port`, `priority` (an ingress class, its
/// priority group and PFC priority), `queue` (an egress queue), `kind` (`xoff` or `xon`)
/// and `reason` (why a frame was dropped). `now` is the switch's time, `start_unix_secs`
/// when it started (`process_start_time_seconds`). docs/json.md lists every metric.
pub fn render(sw: &Switch, now: Nanos, start_unix_secs: f64) -> String {
    let mut out = String::new();
    let cfg = sw.config();
    let names: Vec<&str> = cfg.ports.iter().map(|p| p.name.as_str()).collect();
    let each = |f: &mut dyn FnMut(usize, &str, usize, &crate::switch::ClassCounters)| {
        for (p, port) in names.iter().enumerate() {
            for (i, c) in sw.counters(p).classes.iter().enumerate() {
                f(p, port, i, c);
            }
        }
    };
    type Field = fn(&crate::switch::ClassCounters) -> u64;
    let simple: [(&str, &str, &str, &str, Field); 6] = [
        (
            "received_frames_total",
            "counter",
            "priority",
            "Frames received, by ingress class.",
            |c| c.rx_frames,
        ),
        (
            "received_bytes_total",
            "counter",
            "priority",
            "Bytes received (FCS excluded), by ingress class.",
            |c| c.rx_bytes,
        ),
        (
            "sent_frames_total",
            "counter",
            "queue",
            "Frames sent, by egress queue.",
            |c| c.tx_frames,
        ),
        (
            "sent_bytes_total",
            "counter",
            "queue",
            "Bytes sent (FCS excluded), by egress queue.",
            |c| c.tx_bytes,
        ),
        (
            "ecn_marked_frames_total",
            "counter",
            "queue",
            "Frames the egress queue marked CE.",
            |c| c.ecn_marked,
        ),
        (
            "late_pause_frames_total",
            "counter",
            "priority",
            "Frames the lossless priority group held past its full headroom because they arrived before its pause left (the switch's thread ran late).",
            |c| c.late_pause_frames,
        ),
    ];
    for (name, kind, dim, help, field) in simple {
        let mut fam = Family::start(&mut out, name, kind, help);
        each(&mut |_, port, i, c| {
            fam.sample(name, &[("port", port), (dim, &i.to_string())], field(c))
        });
    }
    for (name, help, xoff, xon) in [
        (
            "pfc_frames_sent_total",
            "PFC frames the switch sent for this priority: kind xoff (pause and refresh) or xon (time 0).",
            (|c| c.tx_pause_frames - c.tx_xon_frames) as Field,
            (|c| c.tx_xon_frames) as Field,
        ),
        (
            "pfc_frames_received_total",
            "PFC frames received with this priority enabled: kind xoff (time > 0) or xon (time 0).",
            |c| c.rx_pause_frames - c.rx_xon_frames,
            |c| c.rx_xon_frames,
        ),
    ] {
        let mut fam = Family::start(&mut out, name, "counter", help);
        each(&mut |_, port, i, c| {
            let p = i.to_string();
            fam.sample(
                name,
                &[("port", port), ("priority", &p), ("kind", "xoff")],
                xoff(c),
            );
            fam.sample(
                name,
                &[("port", port), ("priority", &p), ("kind", "xon")],
                xon(c),
            );
        });
    }
    {
        let name = "dropped_frames_total";
        let mut fam = Family::start(
            &mut out,
            name,
            "counter",
            "Frames dropped, by reason: ingress_overflow (on the ingress port, under the queue its class maps to), wred, tail, watchdog, mtu (on the egress port).",
        );
        each(&mut |_, port, i, c| {
            let q = i.to_string();
            let ingress_q = cfg.tc_to_queue[i].to_string();
            fam.sample(
                name,
                &[
                    ("port", port),
                    ("queue", &ingress_q),
                    ("reason", "ingress_overflow"),
                ],
                c.dropped_ingress_overflow,
            );
            for (reason, n) in [
                ("wred", c.dropped_wred),
                ("tail", c.dropped_tail),
                ("watchdog", c.dropped_watchdog),
                ("mtu", c.dropped_mtu),
            ] {
                fam.sample(
                    name,
                    &[("port", port), ("queue", &q), ("reason", reason)],
                    n,
                );
            }
        });
    }
    {
        let name = "queue_depth_bytes";
        let mut fam = Family::start(&mut out, name, "gauge", "Egress queue depth now, bytes.");
        for (p, port) in names.iter().enumerate() {
            for q in 0..CLASSES {
                fam.sample(
                    name,
                    &[("port", port), ("queue", &q.to_string())],
                    sw.queue_bytes(p, q),
                );
            }
        }
    }
    for (name, help, dim, field) in [
        (
            "queue_watermark_bytes",
            "Deepest the egress queue has been, bytes.",
            "queue",
            (|c| c.queue_watermark_bytes) as Field,
        ),
        (
            "pg_shared_watermark_bytes",
            "Highest shared-pool use of the ingress priority group, bytes.",
            "priority",
            |c| c.pg_shared_watermark_bytes,
        ),
        (
            "pg_headroom_watermark_bytes",
            "Highest headroom use of the ingress priority group, bytes.",
            "priority",
            |c| c.pg_headroom_watermark_bytes,
        ),
    ] {
        let mut fam = Family::start(&mut out, name, "gauge", help);
        each(&mut |_, port, i, c| {
            fam.sample(name, &[("port", port), (dim, &i.to_string())], field(c))
        });
    }
    {
        let name = "pg_xoff";
        let mut fam = Family::start(
            &mut out,
            name,
            "gauge",
            "1 while the ingress priority group holds XOFF (the switch pauses its peer), else 0.",
        );
        for (p, port) in names.iter().enumerate() {
            for pg in 0..CLASSES {
                fam.sample(
                    name,
                    &[("port", port), ("priority", &pg.to_string())],
                    u8::from(sw.pg_state(p, pg).xoff),
                );
            }
        }
    }
    {
        let name = "pause_seconds_total";
        let mut fam = Family::start(
            &mut out,
            name,
            "counter",
            "Time the egress queue was held by PFC or PAUSE from the peer, seconds.",
        );
        for (p, port) in names.iter().enumerate() {
            for q in 0..CLASSES {
                fam.sample(
                    name,
                    &[("port", port), ("queue", &q.to_string())],
                    sw.paused_time(p, q, now).as_secs_f64(),
                );
            }
        }
    }
    for (name, help, field) in [
        (
            "watchdog_storms_total",
            "PFC storms the watchdog detected on the queue.",
            (|c| c.storms_detected) as Field,
        ),
        (
            "watchdog_restorations_total",
            "PFC storms the watchdog restored on the queue.",
            |c| c.storms_restored,
        ),
    ] {
        let mut fam = Family::start(&mut out, name, "counter", help);
        each(&mut |_, port, i, c| {
            fam.sample(name, &[("port", port), ("queue", &i.to_string())], field(c))
        });
    }
    {
        let name = "queue_sojourn_seconds";
        let _ = writeln!(
            out,
            "# HELP rocelab_{name} Time from a frame's arrival to the start of its transmission (HDR histogram, 2 significant digits).\n# TYPE rocelab_{name} histogram"
        );
        // Most queues carry nothing: they share one empty histogram rather than each
        // building its own, under the switch's lock.
        let empty = crate::switch::SojournHistogram::default().histogram();
        for (p, port) in names.iter().enumerate() {
            for (q, s) in sw.counters(p).sojourn_ns.iter().enumerate() {
                let built;
                let h = if s.is_empty() {
                    &empty
                } else {
                    built = s.histogram();
                    &built
                };
                let qs = q.to_string();
                for (ns, le) in SOJOURN_BUCKETS {
                    let n = h.count_between(0, ns);
                    let _ = writeln!(
                        out,
                        "rocelab_{name}_bucket{{port=\"{}\",queue=\"{qs}\",le=\"{le}\"}} {n}",
                        escape(port)
                    );
                }
                let _ = writeln!(
                    out,
                    "rocelab_{name}_bucket{{port=\"{}\",queue=\"{qs}\",le=\"+Inf\"}} {}",
                    escape(port),
                    h.len()
                );
                let sum: f64 = h
                    .iter_recorded()
                    .map(|v| v.value_iterated_to() as f64 * v.count_at_value() as f64)
                    .sum::<f64>()
                    / 1e9;
                let _ = writeln!(
                    out,
                    "rocelab_{name}_sum{{port=\"{}\",queue=\"{qs}\"}} {sum}",
                    escape(port)
                );
                let _ = writeln!(
                    out,
                    "rocelab_{name}_count{{port=\"{}\",queue=\"{qs}\"}} {}",
                    escape(port),
                    h.len()
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {start_unix_secs}"
    );
    out
}

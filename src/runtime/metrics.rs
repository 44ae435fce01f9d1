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

/// The counters in the Prometheus text format, one series per port and class.
pub fn render(sw: &Switch, now: Nanos) -> String {
    let mut out = String::new();
    let names: Vec<&str> = sw.config().ports.iter().map(|p| p.name.as_str()).collect();
    type Field = fn(&crate::switch::ClassCounters) -> u64;
    let counters: [(&str, &str, Field); 10] = [
        (
            "rx_frames_total",
            "Frames received, by ingress class.",
            |c| c.rx_frames,
        ),
        ("rx_bytes_total", "Bytes received, by ingress class.", |c| {
            c.rx_bytes
        }),
        ("tx_frames_total", "Frames sent, by egress queue.", |c| {
            c.tx_frames
        }),
        ("tx_bytes_total", "Bytes sent, by egress queue.", |c| {
            c.tx_bytes
        }),
        (
            "pfc_tx_total",
            "PFC pause frames sent (XOFF and refresh).",
            |c| c.tx_pause_frames,
        ),
        ("pfc_rx_total", "PFC pause frames received.", |c| {
            c.rx_pause_frames
        }),
        ("ecn_marked_total", "Frames marked CE.", |c| c.ecn_marked),
        ("dropped_total", "Frames dropped, every cause.", |c| {
            c.dropped()
        }),
        (
            "queue_watermark_bytes",
            "Highest egress queue depth.",
            |c| c.queue_watermark_bytes,
        ),
        (
            "pg_headroom_watermark_bytes",
            "Highest ingress headroom use.",
            |c| c.pg_headroom_watermark_bytes,
        ),
    ];
    for (name, help, field) in counters {
        let kind = if name.ends_with("_total") {
            "counter"
        } else {
            "gauge"
        };
        let _ = writeln!(
            out,
            "# HELP rocelab_{name} {help}\n# TYPE rocelab_{name} {kind}"
        );
        for (p, port) in names.iter().enumerate() {
            for (class, c) in sw.counters(p).classes.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "rocelab_{name}{{port=\"{port}\",class=\"{class}\"}} {}",
                    field(c)
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "# HELP rocelab_queue_bytes Egress queue depth now.\n# TYPE rocelab_queue_bytes gauge"
    );
    for (p, port) in names.iter().enumerate() {
        for q in 0..CLASSES {
            let _ = writeln!(
                out,
                "rocelab_queue_bytes{{port=\"{port}\",queue=\"{q}\"}} {}",
                sw.queue_bytes(p, q)
            );
        }
    }
    let _ = writeln!(
        out,
        "# HELP rocelab_uptime_seconds Time since the switch started.\n# TYPE rocelab_uptime_seconds gauge\nrocelab_uptime_seconds {}",
        now.0 as f64 / 1e9
    );
    out
}

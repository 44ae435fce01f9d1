//! Prometheus text exposition of the switch counters, served on a loopback address: the
//! core thread renders a snapshot every 250 ms, a small HTTP server serves the latest.
//!
//! One thread does it all without blocking: it reads every client's request head (a
//! client has [`READ_TIMEOUT`] for it; past [`MAX_PENDING`] heads still coming, the oldest
//! is let go), and writes each page as fast as its client takes it (a client has
//! [`WRITE_TIMEOUT`] for the page). Past [`MAX_WRITERS`] pages being written, a new scrape
//! takes the place of the client that has taken nothing for longest, if that was
//! [`STALLED`] ago or more: clients that never read make no progress and are the ones let
//! go, and a client that reads is never waiting behind them. Only when every page is
//! moving is a scrape answered 503. So local clients that send nothing, send slowly or
//! read nothing, however many, do not turn real scrapes away.

use crate::config::CLASSES;
use crate::io::KernelStats;
use crate::switch::{ClassCounters, Switch};
use crate::time::Nanos;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Pages written at once; past them a new scrape replaces a stalled one, or is answered
/// 503 when none is.
pub const MAX_WRITERS: usize = 64;
/// How long a page's client must have taken nothing for the page to be let go when a new
/// scrape needs its place.
pub const STALLED: Duration = Duration::from_millis(100);
/// Answered connections waiting for their client's close; past them, the oldest is let go.
const MAX_LINGERING: usize = 64;
/// Request heads read at once; one more lets the oldest go.
pub const MAX_PENDING: usize = 64;
/// How long a client has to send its whole request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a client has to take the whole page.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an answered connection is read from, waiting for its client to close.
const LINGER: Duration = Duration::from_secs(1);
/// The most read from an answered connection, in all.
const LINGER_BYTES: usize = 64 * 1024;
/// The longest request head read: request line and headers.
const MAX_REQUEST_BYTES: usize = 8192;

/// The latest rendered page, shared with the HTTP threads (`None` until the first
/// render, when a scrape is answered 503).
#[derive(Debug, Clone, Default)]
pub struct Snapshot(Arc<Mutex<Option<Arc<str>>>>);

impl Snapshot {
    /// Replaces the page.
    pub fn set(&self, text: String) {
        // Moved into its shared form before the lock is taken: a page of megabytes.
        let text: Arc<str> = text.into();
        if let Ok(mut s) = self.0.lock() {
            *s = Some(text);
        }
    }

    fn get(&self) -> Option<Arc<str>> {
        self.0.lock().ok().and_then(|s| s.clone())
    }
}

/// A `--metrics` value the endpoint cannot serve on.
#[derive(Debug, thiserror::Error)]
pub enum AddrError {
    /// It is no address and no host name that resolves.
    #[error("{text}: {cause} (give ADDR:PORT, e.g. 127.0.0.1:9100)")]
    Unresolved {
        /// The value given.
        text: String,
        /// Why it did not resolve.
        cause: io::Error,
    },
    /// None of its addresses is a loopback one.
    #[error("{0}: the metrics endpoint binds to a loopback address only (127.0.0.0/8 or ::1)")]
    NotLoopback(String),
}

/// `--metrics`'s value: an address, or a host name that resolves to a loopback one
/// (`localhost:9100`). Port 0 takes a free port (the bound address is printed).
pub fn parse_addr(text: &str) -> Result<SocketAddr, AddrError> {
    let addrs: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|cause| AddrError::Unresolved {
            text: text.to_owned(),
            cause,
        })?
        .collect();
    addrs
        .iter()
        .find(|a| a.ip().is_loopback())
        .copied()
        .ok_or_else(|| AddrError::NotLoopback(text.to_owned()))
}

/// Binds the metrics endpoint on `addr`, which must be a loopback address: done before
/// the run starts, so that an address in use stops it before any port is opened.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    if !addr.ip().is_loopback() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "--metrics {addr}: the metrics endpoint binds to a loopback address only (127.0.0.0/8 or ::1)"
            ),
        ));
    }
    let listener = TcpListener::bind(addr)
        .map_err(|e| io::Error::new(e.kind(), format!("--metrics {addr}: {e}")))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Serves `GET /metrics` (and `HEAD`) on `listener` (from [`bind`]) until `stop` is
/// raised; the page is what the returned snapshot was last set to.
pub fn serve(listener: Arc<TcpListener>, stop: Arc<AtomicBool>) -> io::Result<Snapshot> {
    let snapshot = Snapshot::default();
    let mut server = Server {
        listener,
        page: snapshot.clone(),
        reading: VecDeque::new(),
        writing: Vec::new(),
        lingering: VecDeque::new(),
    };
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            while !super::stopped(&stop) {
                server.step();
                let busy = !server.reading.is_empty()
                    || !server.writing.is_empty()
                    || !server.lingering.is_empty();
                std::thread::sleep(Duration::from_millis(if busy { 2 } else { 20 }));
            }
        })?;
    Ok(snapshot)
}

/// A connection whose request head is still coming.
struct Pending {
    conn: TcpStream,
    since: Instant,
    head: Vec<u8>,
}

/// A connection answered: read from until its client closes, so that closing it with
/// unread bytes does not reset it (the client could lose the reply).
struct Lingering {
    conn: TcpStream,
    until: Instant,
    read: usize,
}

impl Lingering {
    /// Reads what waits: whether to let the connection go (closed, failed, read enough, or
    /// past its time).
    fn done(&mut self) -> bool {
        let mut sink = [0u8; 4096];
        while self.read < LINGER_BYTES {
            match self.conn.read(&mut sink) {
                Ok(0) => return true,
                Ok(n) => self.read += n,
                Err(e) => {
                    return e.kind() != io::ErrorKind::WouldBlock || Instant::now() >= self.until;
                }
            }
        }
        true
    }
}

/// A page being written, as fast as its client takes it.
struct Writing {
    conn: TcpStream,
    /// The status line and headers.
    header: Vec<u8>,
    /// The page; not sent for a HEAD.
    page: Option<Arc<str>>,
    /// Bytes written, the header's first.
    sent: usize,
    since: Instant,
    /// When the client last took a byte, or the write began.
    progress: Instant,
}

/// Where a page's write stands.
enum Written {
    /// Whole.
    Done,
    /// The client has not taken the rest yet.
    Waiting,
    /// The connection failed or was closed.
    Failed,
}

impl Writing {
    /// Writes what the client's socket takes now.
    fn push(&mut self, now: Instant) -> Written {
        loop {
            let body = self.page.as_deref().map_or(&[][..], str::as_bytes);
            let rest = match self.sent.checked_sub(self.header.len()) {
                None => &self.header[self.sent..],
                Some(at) if at < body.len() => &body[at..],
                Some(_) => return Written::Done,
            };
            match self.conn.write(&rest[..rest.len().min(256 * 1024)]) {
                Ok(0) => return Written::Failed,
                Ok(n) => {
                    self.sent += n;
                    self.progress = now;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Written::Waiting,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Written::Failed,
            }
        }
    }
}

/// The server's state, on its own thread.
struct Server {
    listener: Arc<TcpListener>,
    page: Snapshot,
    /// Oldest first.
    reading: VecDeque<Pending>,
    /// Pages being written.
    writing: Vec<Writing>,
    /// Oldest first.
    lingering: VecDeque<Lingering>,
}

impl Server {
    /// Takes new connections, reads the request heads that came, answers the whole ones,
    /// and lets go of what is done or past its time.
    fn step(&mut self) {
        // A few at a time: a flood of connections waits in the listen backlog rather than
        // pushing out, in one step, a scrape whose head has not been read yet.
        for _ in 0..MAX_PENDING / 4 {
            let Ok((conn, _)) = self.listener.accept() else {
                break;
            };
            if conn.set_nonblocking(true).is_err() {
                continue;
            }
            if self.reading.len() >= MAX_PENDING {
                self.reading.pop_front();
            }
            self.reading.push_back(Pending {
                conn,
                since: Instant::now(),
                head: Vec::new(),
            });
        }
        let mut still = VecDeque::with_capacity(self.reading.len());
        while let Some(mut p) = self.reading.pop_front() {
            match read_some(&mut p) {
                Head::Whole(head) => self.answer(p.conn, &head),
                Head::Refused(reply) => self.reply(p.conn, reply, false),
                Head::Coming if p.since.elapsed() < READ_TIMEOUT => still.push_back(p),
                Head::Coming | Head::Gone => {}
            }
        }
        self.reading = still;
        let now = Instant::now();
        for mut w in std::mem::take(&mut self.writing) {
            match w.push(now) {
                Written::Done => self.linger(w.conn),
                Written::Waiting if now.duration_since(w.since) < WRITE_TIMEOUT => {
                    self.writing.push(w);
                }
                Written::Waiting | Written::Failed => {}
            }
        }
        self.lingering.retain_mut(|l| !l.done());
    }

    /// Answers a whole request head.
    fn answer(&mut self, conn: TcpStream, head: &str) {
        let (reply, head_only) = route(head);
        let page = match (reply, self.page.get()) {
            (Reply::Page, Some(page)) => page,
            _ => return self.reply(conn, reply, head_only),
        };
        let now = Instant::now();
        if self.writing.len() >= MAX_WRITERS {
            // The page whose client has taken nothing for longest makes room, if it has
            // waited long enough to be called stalled; otherwise every page is moving and
            // the scrape is told to come back.
            let stalled = self
                .writing
                .iter()
                .enumerate()
                .min_by_key(|(_, w)| w.progress)
                .filter(|(_, w)| now.duration_since(w.progress) >= STALLED)
                .map(|(i, _)| i);
            match stalled {
                Some(i) => drop(self.writing.swap_remove(i)),
                None => return self.reply(conn, Reply::Busy, false),
            }
        }
        let header = format!(
            "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            page.len()
        );
        self.writing.push(Writing {
            conn,
            header: header.into_bytes(),
            page: (!head_only).then_some(page),
            sent: 0,
            since: now,
            progress: now,
        });
    }

    /// Ends the reply on `conn` and waits for the client's close (at most
    /// [`MAX_LINGERING`] such connections: the oldest is let go).
    fn linger(&mut self, conn: TcpStream) {
        if conn.shutdown(std::net::Shutdown::Write).is_err() {
            return;
        }
        if self.lingering.len() >= MAX_LINGERING {
            self.lingering.pop_front();
        }
        self.lingering.push_back(Lingering {
            conn,
            until: Instant::now() + LINGER,
            read: 0,
        });
    }

    /// Writes a short reply (not the page) without blocking, and lingers.
    fn reply(&mut self, mut conn: TcpStream, reply: Reply, head_only: bool) {
        if respond(&mut conn, reply, head_only).is_ok() {
            self.linger(conn);
        }
    }
}

/// Where a request head stands.
enum Head {
    /// Whole: up to its blank line.
    Whole(String),
    /// Too long, or not HTTP: answered with this.
    Refused(Reply),
    /// Still coming.
    Coming,
    /// The client closed the connection, or it failed.
    Gone,
}

/// Reads what waits of a request head.
fn read_some(p: &mut Pending) -> Head {
    let mut chunk = [0u8; 1024];
    loop {
        match p.conn.read(&mut chunk) {
            Ok(0) => return Head::Gone,
            Ok(n) => p.head.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(_) => return Head::Gone,
        }
        if p.head.len() > MAX_REQUEST_BYTES {
            return Head::Refused(Reply::TooLarge);
        }
    }
    // The blank line that ends the head; a bare LF is taken for CRLF, as servers do.
    let end = (1..p.head.len()).find(|&i| {
        p.head[i] == b'\n' && (p.head[i - 1] == b'\n' || p.head[..i].ends_with(b"\n\r"))
    });
    match end {
        Some(end) => Head::Whole(String::from_utf8_lossy(&p.head[..end]).into_owned()),
        // A request line that cannot be HTTP is answered at once.
        None if p.head.len() >= 8 && !p.head.iter().all(u8::is_ascii) => Head::Refused(Reply::Bad),
        None => Head::Coming,
    }
}

/// What a request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    /// The page (200), or 503 before the first render.
    Page,
    /// 404: another path.
    NotFound,
    /// 405: a method other than GET and HEAD.
    Method,
    /// 400: not an HTTP request line.
    Bad,
    /// 431: a request head longer than [`MAX_REQUEST_BYTES`].
    TooLarge,
    /// 503: [`MAX_WRITERS`] pages being written already, none of them stalled.
    Busy,
}

/// The reply to a request head, and whether it is a HEAD (headers only).
fn route(head: &str) -> (Reply, bool) {
    let line = head.lines().next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return (Reply::Bad, false);
    };
    if !version.starts_with("HTTP/1.") {
        return (Reply::Bad, false);
    }
    let head_only = method == "HEAD";
    let path = target.split('?').next().unwrap_or("");
    if path != "/metrics" {
        return (Reply::NotFound, head_only);
    }
    match method {
        "GET" | "HEAD" => (Reply::Page, head_only),
        _ => (Reply::Method, false),
    }
}

/// Writes a short reply that is not the page (for [`Reply::Page`]: 503, nothing rendered yet).
fn respond(conn: &mut TcpStream, reply: Reply, head_only: bool) -> io::Result<()> {
    let (status, body, extra) = match reply {
        Reply::Page => (
            "503 Service Unavailable",
            "the first snapshot is not rendered yet; try again in a moment\n",
            "Retry-After: 1\r\n",
        ),
        Reply::NotFound => ("404 Not Found", "try /metrics\n", ""),
        Reply::Method => (
            "405 Method Not Allowed",
            "GET or HEAD /metrics\n",
            "Allow: GET, HEAD\r\n",
        ),
        Reply::Bad => ("400 Bad Request", "not an HTTP request\n", ""),
        Reply::TooLarge => (
            "431 Request Header Fields Too Large",
            "request head too long\n",
            "",
        ),
        Reply::Busy => (
            "503 Service Unavailable",
            "too many scrapes at once; try again\n",
            "Retry-After: 1\r\n",
        ),
    };
    // One write: the connection does not block, and a reply this short fits its buffer.
    let mut text = format!(
        "HTTP/1.0 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    );
    if !head_only {
        text.push_str(body);
    }
    conn.write_all(text.as_bytes())
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
/// and `reason` (why a frame was dropped). `kernel` holds each port's socket statistics
/// (a port past its end counts none), `now` is the switch's time, `start_unix_secs` when
/// it started (`process_start_time_seconds`). docs/json.md lists every metric.
pub fn render(sw: &Switch, kernel: &[KernelStats], now: Nanos, start_unix_secs: f64) -> String {
    let mut out = String::new();
    let cfg = sw.config();
    let names: Vec<&str> = cfg.ports.iter().map(|p| p.name.as_str()).collect();
    counter_families(&mut out, sw, &names);
    pfc_families(&mut out, sw, &names);
    drop_families(&mut out, sw, &names);
    buffer_families(&mut out, sw, &names, now);
    watchdog_families(&mut out, sw, &names);
    sojourn_family(&mut out, sw, &names);
    port_families(&mut out, sw, &names, kernel, now);
    let _ = writeln!(
        out,
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {start_unix_secs}"
    );
    out
}

/// A class counter read off a port's counters.
type Field = fn(&ClassCounters) -> u64;

/// Calls `f` with every port's index and name, and each class's index and counters.
fn each_class(sw: &Switch, names: &[&str], f: &mut dyn FnMut(usize, &str, usize, &ClassCounters)) {
    for (p, port) in names.iter().enumerate() {
        for (i, c) in sw.counters(p).classes.iter().enumerate() {
            f(p, port, i, c);
        }
    }
}

/// The per-class frame and byte counters: received by ingress class, sent and marked by
/// egress queue, held late past the headroom by ingress class.
fn counter_families(out: &mut String, sw: &Switch, names: &[&str]) {
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
        let mut fam = Family::start(out, name, kind, help);
        each_class(sw, names, &mut |_, port, i, c| {
            fam.sample(name, &[("port", port), (dim, &i.to_string())], field(c))
        });
    }
}

/// PFC frames sent and received, per priority and kind (xoff or xon).
fn pfc_families(out: &mut String, sw: &Switch, names: &[&str]) {
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
        let mut fam = Family::start(out, name, "counter", help);
        each_class(sw, names, &mut |_, port, i, c| {
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
}

/// Frames dropped at an egress queue (by reason) and on arrival.
fn drop_families(out: &mut String, sw: &Switch, names: &[&str]) {
    {
        let name = "dropped_frames_total";
        let mut fam = Family::start(
            out,
            name,
            "counter",
            "Frames the switch core dropped at an egress queue, by reason: wred, tail, watchdog, mtu. Ingress drops are rocelab_ingress_dropped_frames_total, drops before the core rocelab_port_dropped_frames_total.",
        );
        each_class(sw, names, &mut |_, port, i, c| {
            let q = i.to_string();
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
        let name = "ingress_dropped_frames_total";
        let mut fam = Family::start(
            out,
            name,
            "counter",
            "Frames dropped on arrival because their ingress priority group had no room (shared pool full, or headroom exhausted).",
        );
        each_class(sw, names, &mut |_, port, i, c| {
            fam.sample(
                name,
                &[("port", port), ("priority", &i.to_string())],
                c.dropped_ingress_overflow,
            )
        });
    }
}

/// The buffers now and at their deepest: queue depths, watermarks, XOFF states and
/// the time queues were paused.
fn buffer_families(out: &mut String, sw: &Switch, names: &[&str], now: Nanos) {
    {
        let name = "queue_depth_bytes";
        let mut fam = Family::start(out, name, "gauge", "Egress queue depth now, bytes.");
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
        let mut fam = Family::start(out, name, "gauge", help);
        each_class(sw, names, &mut |_, port, i, c| {
            fam.sample(name, &[("port", port), (dim, &i.to_string())], field(c))
        });
    }
    {
        let name = "pg_xoff";
        let mut fam = Family::start(
            out,
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
            out,
            name,
            "counter",
            "Time the egress queue was held by PFC from the peer, seconds (802.3x PAUSE, which holds every queue, is rocelab_link_pause_seconds_total).",
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
}

/// The PFC watchdog's storms, detected and restored.
fn watchdog_families(out: &mut String, sw: &Switch, names: &[&str]) {
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
        let mut fam = Family::start(out, name, "counter", help);
        each_class(sw, names, &mut |_, port, i, c| {
            fam.sample(name, &[("port", port), ("queue", &i.to_string())], field(c))
        });
    }
}

/// Each queue's sojourn time as a histogram.
fn sojourn_family(out: &mut String, sw: &Switch, names: &[&str]) {
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
}

/// The families counted per port rather than per class or queue: frames dropped before
/// the switch core (or refused by the kernel on the way out), frames the core let go
/// without queueing, and 802.3x PAUSE.
fn port_families(
    out: &mut String,
    sw: &Switch,
    names: &[&str],
    kernel: &[KernelStats],
    now: Nanos,
) {
    {
        let name = "port_dropped_frames_total";
        let mut fam = Family::start(
            out,
            name,
            "counter",
            "Frames dropped outside the switch core's queues, by reason: kernel_receive (the port's socket was full), truncated (larger than the port's MTU, cut short by the receive buffer), oversize (larger than the port's MTU allows), tx_refused (the kernel refused to send it, it went to a port that was down, or a port busy too long gave it up).",
        );
        for (p, port) in names.iter().enumerate() {
            let k = kernel.get(p).copied().unwrap_or_default();
            let c = sw.counters(p);
            for (reason, n) in [
                ("kernel_receive", k.drops),
                ("truncated", k.truncated),
                ("oversize", c.rx_oversize_frames),
                ("tx_refused", k.tx_refused),
            ] {
                fam.sample(name, &[("port", port), ("reason", reason)], n);
            }
        }
    }
    type PortField = fn(&crate::switch::PortCounters) -> u64;
    for (name, help, field) in [
        (
            "filtered_frames_total",
            "Frames not forwarded because their destination sits behind the port they came in on.",
            (|c| c.filtered_frames) as PortField,
        ),
        (
            "malformed_frames_total",
            "Frames that did not parse as Ethernet / IP; forwarded in the class of DSCP and PCP 0.",
            |c| c.rx_malformed_frames,
        ),
        (
            "link_pause_frames_received_total",
            "802.3x PAUSE frames received (they hold every queue of the port).",
            |c| c.rx_link_pause_frames,
        ),
    ] {
        let mut fam = Family::start(out, name, "counter", help);
        for (p, port) in names.iter().enumerate() {
            fam.sample(name, &[("port", port)], field(sw.counters(p)));
        }
    }
    let name = "link_pause_seconds_total";
    let mut fam = Family::start(
        out,
        name,
        "counter",
        "Time the port was held by 802.3x PAUSE from the peer, seconds.",
    );
    for (p, port) in names.iter().enumerate() {
        fam.sample(
            name,
            &[("port", port)],
            sw.link_paused_time(p, now).as_secs_f64(),
        );
    }
}

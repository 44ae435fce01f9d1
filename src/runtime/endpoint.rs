//! `rocelab endpoint`: one endpoint core and its application live on an interface, with
//! a peers file naming every rank's MAC, IP and QP numbers.

use super::ports::{Arrival, PortThreads};
use super::{Clock, CoreList, stopped};
use super::{PeersError, PortError, RuntimeError};
use crate::config::endpoint::EndpointConfig;
use crate::endpoint::app::{App, Application};
use crate::endpoint::{Endpoint, Peer};
use crate::io::{Backend, KernelStats};
use crate::time::Nanos;
use crate::wire::MacAddr;
use serde::Deserialize;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// One rank of the peers file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerSpec {
    /// 0 to N-1, each rank once; the ring runs in rank order.
    pub rank: usize,
    /// Its MAC address, written like `02:00:c6:12:00:01`.
    pub mac: MacAddr,
    /// Its IPv4 address.
    pub ip: Ipv4Addr,
    /// Its first QP number: the ring QP to the next rank is `qpn`, from the previous
    /// `qpn + 1`, and bulk flows use `qpn + 2` (sender) and `qpn + 3 + sender rank`
    /// (receiver).
    pub qpn: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeersFile {
    peer: Vec<PeerEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerEntry {
    rank: usize,
    mac: String,
    ip: Ipv4Addr,
    qpn: u32,
}

/// Parses a peers file: `[[peer]]` entries with `rank`, `mac`, `ip`, `qpn`, ranks 0..N
/// each once.
pub fn parse_peers(text: &str) -> Result<Vec<PeerSpec>, PeersError> {
    let file: PeersFile = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or_else(String::new, |s| {
            format!("{}: ", crate::config::location(text, s.start))
        });
        PeersError::Syntax(format!("{at}{}", e.message().trim_end()))
    })?;
    let mut peers = Vec::new();
    for (i, e) in file.peer.iter().enumerate() {
        let mac = e.mac.parse::<MacAddr>().map_err(|_| PeersError::Mac {
            index: i,
            value: e.mac.clone(),
        })?;
        if !(2..0x00ff_0000).contains(&e.qpn) {
            return Err(PeersError::Qpn {
                index: i,
                value: e.qpn,
            });
        }
        peers.push(PeerSpec {
            rank: e.rank,
            mac,
            ip: e.ip,
            qpn: e.qpn,
        });
    }
    peers.sort_by_key(|p| p.rank);
    for (i, p) in peers.iter().enumerate() {
        if p.rank != i {
            return Err(PeersError::Ranks {
                last: peers.len() - 1,
                missing: i,
            });
        }
    }
    if peers.len() < 2 {
        return Err(PeersError::TooFew);
    }
    Ok(peers)
}

fn peer(p: &PeerSpec, qpn: u32) -> Peer {
    Peer {
        mac: p.mac,
        ip: p.ip,
        qpn,
    }
}

/// The ring QPs of `rank`: (to the next rank, from the previous one).
pub fn ring_qps(ep: &mut Endpoint, peers: &[PeerSpec], rank: usize) -> (usize, usize) {
    let n = peers.len();
    let (me, next, prev) = (
        &peers[rank],
        &peers[(rank + 1) % n],
        &peers[(rank + n - 1) % n],
    );
    let to_next = ep.create_qp(me.qpn, peer(next, next.qpn + 1), 0);
    let from_prev = ep.create_qp(me.qpn + 1, peer(prev, prev.qpn), 0);
    (to_next, from_prev)
}

/// The QP for a bulk flow from `rank` to `to`.
pub fn flow_send_qp(ep: &mut Endpoint, peers: &[PeerSpec], rank: usize, to: usize) -> usize {
    let dst = &peers[to];
    ep.create_qp(peers[rank].qpn + 2, peer(dst, dst.qpn + 3 + rank as u32), 0)
}

/// The QPs that receive bulk flows from every other rank.
pub fn flow_receive_qps(ep: &mut Endpoint, peers: &[PeerSpec], rank: usize) {
    for (s, p) in peers.iter().enumerate() {
        if s != rank {
            ep.create_qp(peers[rank].qpn + 3 + s as u32, peer(p, p.qpn + 2), 0);
        }
    }
}

/// How far back a late thread sends what fell due while it slept.
const MAX_CATCH_UP: Nanos = Nanos(1_000_000);

/// How to run.
#[derive(Debug, Clone)]
pub struct EndpointOptions {
    /// The endpoint configuration (its link rate paces the NIC).
    pub cfg: EndpointConfig,
    /// The interface the endpoint sends and receives on, as a NIC port would.
    pub iface: String,
    /// `pnet` (low latency) or `mmap` (throughput, up to 1 ms of receive batching).
    pub backend: Backend,
    /// Cores to pin to.
    pub cores: CoreList,
    /// Spin instead of sleeping.
    pub busy_poll: bool,
    /// Give up after this long.
    pub limit: Option<Duration>,
    /// After the application is done, keep answering (ACKs for retransmissions) this long.
    pub linger: Duration,
    /// The instant the endpoint's clock reads 0 (default: when the run starts), so that
    /// several endpoints in one process share a clock.
    pub origin: Option<Instant>,
}

/// How the run ended.
pub struct EndpointOutcome {
    /// The endpoint with its counters and memory.
    pub endpoint: Endpoint,
    /// The application, with its results (an all-reduce's times, say).
    pub app: App,
    /// When the application finished, if it did.
    pub done_at: Option<Nanos>,
    /// The endpoint's clock when the run ended.
    pub end: Nanos,
    /// Kernel receive statistics.
    pub kernel: KernelStats,
    /// A port's fatal error, if that is what stopped it.
    pub error: Option<PortError>,
}

/// Runs `ep` with `app` until the application is done (and the linger time passed), the
/// limit, `stop`, or a port error. The application's clock starts at 0 now.
pub fn run(
    opts: &EndpointOptions,
    ep: Endpoint,
    app: App,
    stop: &Arc<AtomicBool>,
) -> Result<EndpointOutcome, RuntimeError> {
    run_sampled(opts, ep, app, stop, None)
}

/// The endpoint and its application, as a sampler sees them.
pub struct Live<'a> {
    /// The endpoint, its counters and QPs as of `now`.
    pub endpoint: &'a Endpoint,
    /// The application it runs (a sampler may set its start: see `App::set_start`).
    pub app: &'a mut App,
    /// The endpoint's clock.
    pub now: Nanos,
}

/// Something to call with the endpoint every `every`.
pub struct EndpointSampler<'a> {
    /// Wall-clock time from one call to the next, at least (a late call delays the next).
    pub every: Duration,
    /// What to call, with the time since the run began.
    pub call: &'a mut (dyn FnMut(Duration, &mut Live<'_>) + Send),
}

/// As [`run`], calling `sampler` with the endpoint as it runs.
pub fn run_sampled(
    opts: &EndpointOptions,
    mut ep: Endpoint,
    mut app: App,
    stop: &Arc<AtomicBool>,
    mut sampler: Option<EndpointSampler<'_>>,
) -> Result<EndpointOutcome, RuntimeError> {
    let mtu = opts.cfg.mtu as usize + 128;
    let _claim = claim_roce_port();
    let ports = PortThreads::start(
        std::slice::from_ref(&opts.iface),
        opts.backend,
        mtu,
        &opts.cores,
        stop,
    )?;
    opts.cores.pin(0);
    super::precise_timers();
    let clock = opts.origin.map_or_else(Clock::start, Clock::from_origin);
    let started = Instant::now();
    let end = opts.limit.map(|l| started + l);
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut last = clock.now();
    let mut done_at: Option<Nanos> = None;
    let mut next_sample = started;
    let mut error = None;
    let begin = last;
    app.start(begin, &mut ep);
    drive(&mut ep, &mut app, begin, &mut last, &mut out, &ports.pool);

    loop {
        // A port's error first: it also raises the stop flag.
        if let Ok(e) = ports.errors.try_recv() {
            error = Some(e);
            break;
        }
        if stopped(stop) || end.is_some_and(|e| Instant::now() >= e) {
            break;
        }
        let now = clock.now();
        if app.done() {
            let at = *done_at.get_or_insert(now);
            if now.0.saturating_sub(at.0) >= opts.linger.as_nanos() as u64 && ep.idle() {
                break;
            }
        }
        let mut wake = Instant::now() + Duration::from_millis(20);
        for t in [ep.poll_timeout(), app.deadline()].into_iter().flatten() {
            wake = wake.min(clock.instant(t));
        }
        if let Some(e) = end {
            wake = wake.min(e);
        }
        if sampler.is_some() {
            wake = wake.min(next_sample);
        }
        let first = match ports.wait(wake, opts.busy_poll) {
            Arrival::Batch(b) => Some(b),
            Arrival::Timeout => None,
            Arrival::Closed => break,
        };
        // The monotonic clock never reads less than `last` (the cores check it).
        let now = clock.now();
        // Sends and timers that fell due while the thread slept, at their own times, but
        // no further back than MAX_CATCH_UP: a long stall is lost time, not a burst (a
        // NIC does not send what it missed, and a burst would outrun a pause in flight).
        let floor = Nanos(now.0.saturating_sub(MAX_CATCH_UP.0)).max(last);
        for _ in 0..1_000_000 {
            let due = [ep.poll_timeout(), app.deadline()]
                .into_iter()
                .flatten()
                .min();
            let Some(t) = due.filter(|&t| t < now) else {
                break;
            };
            let t = t.max(floor);
            let t = t.max(last);
            let before = out.len();
            drive(&mut ep, &mut app, t, &mut last, &mut out, &ports.pool);
            let next = [ep.poll_timeout(), app.deadline()]
                .into_iter()
                .flatten()
                .min();
            if out.len() == before && next.is_some_and(|d| d <= t) {
                break;
            }
        }
        if let Some((_, batch)) = first {
            for frame in batch {
                ep.handle_frame(now, &frame);
                ports.pool.put(frame);
            }
            for _ in 0..64 {
                let Ok((_, batch)) = ports.rx.try_recv() else {
                    break;
                };
                for frame in batch {
                    ep.handle_frame(now, &frame);
                    ports.pool.put(frame);
                }
            }
        }
        drive(&mut ep, &mut app, now, &mut last, &mut out, &ports.pool);
        if !out.is_empty()
            // A NIC does not drop what its pacer released: wait for the transmit thread
            // (see the switch's loop for why this cannot hang).
            && let Err(e) = ports.tx[0].send(std::mem::take(&mut out))
        {
            for buf in e.into_inner() {
                ports.pool.put(buf);
            }
        }
        if let Some(s) = sampler.as_mut() {
            let now_i = Instant::now();
            if now_i >= next_sample {
                let mut live = Live {
                    endpoint: &ep,
                    app: &mut app,
                    now,
                };
                (s.call)(now_i - started, &mut live);
                next_sample = now_i + s.every;
            }
        }
    }
    let end = clock.now();
    let (kernel, late_error) = ports.finish();
    let kernel = kernel.into_iter().next().unwrap_or_default();
    let error = error.or(late_error);
    Ok(EndpointOutcome {
        endpoint: ep,
        app,
        done_at,
        end,
        kernel,
        error,
    })
}

/// Binds UDP 4791 in this namespace and never reads it, with the smallest receive buffer,
/// so that the kernel's own IP stack drops RoCE packets silently instead of answering
/// each with an ICMP port unreachable (a RoCE NIC consumes them before the host stack
/// sees them). Another endpoint in the namespace may hold it already: fine.
fn claim_roce_port() -> Option<std::net::UdpSocket> {
    let s = std::net::UdpSocket::bind(("0.0.0.0", 4791)).ok()?;
    let one: libc::c_int = 1;
    // SAFETY: setsockopt with an int the size given; the socket is open.
    unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&s),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    Some(s)
}

/// One step at time `t`: timers, the application's reactions, then every frame the link
/// and the pacers let go.
fn drive(
    ep: &mut Endpoint,
    app: &mut App,
    t: Nanos,
    last: &mut Nanos,
    out: &mut Vec<Vec<u8>>,
    pool: &crate::io::Pool,
) {
    if ep.poll_timeout().is_some_and(|d| d <= t) {
        ep.handle_timeout(t);
    }
    if app.deadline().is_some_and(|d| d <= t) {
        app.on_timeout(t, ep);
    }
    while let Some(c) = ep.poll_completion() {
        app.on_completion(t, ep, c);
    }
    while let Some(f) = ep.poll_transmit(t) {
        let mut buf = pool.get();
        buf.extend_from_slice(f);
        out.push(buf);
    }
    *last = t;
}

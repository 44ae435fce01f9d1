//! `rocelab lab`: a small lossless fabric in namespaces, in one process. The switch runs
//! on threads in the root namespace; each host is a thread that joins its namespace
//! before it opens its sockets (its port threads inherit the namespace), so the whole lab
//! lives and dies with this process. Namespaces and veths come from [`Netns`], removed on
//! every way out but SIGKILL, and then by the next run.

use super::netns::Netns;
use crate::config::SwitchConfig;
use crate::config::endpoint::EndpointConfig;
use crate::endpoint::app::{App, Application as _};
use crate::endpoint::flow::Flow;
use crate::endpoint::sweep::{AllReduceResult, RankResult, Sweep};
use crate::endpoint::{EndpointCounters, QpStatus};
use crate::io::{Backend, KernelStats};
use crate::runtime::endpoint::{self as live, EndpointOptions, EndpointSampler, PeerSpec};
use crate::runtime::switch::{Sampler, SwitchOptions};
use crate::runtime::{CoreList, PortError, RuntimeError, stopped};
use crate::series::{HostRecorder, Series, SwitchRecorder, Track};
use crate::switch::Switch;
use crate::time::Nanos;
use crate::wire::MacAddr;
use serde::Serialize;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What runs in the lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// A ring all-reduce sweep over every host.
    Ring,
    /// Every host but host 0 sends a bulk flow to host 0.
    Incast,
    /// The ring, with two more hosts pushing bulk flows into rank 0's port meanwhile.
    #[value(name = "ring+incast")]
    RingIncast,
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Workload::Ring => "ring",
            Workload::Incast => "incast",
            Workload::RingIncast => "ring+incast",
        })
    }
}

/// How to run the lab.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Ring all-reduce, incast, or both at once.
    pub workload: Workload,
    /// Hosts in the ring (or in the incast, receiver included).
    pub ranks: usize,
    /// The switch: ports are made here, one per host, at the endpoints' link rate.
    pub switch: SwitchConfig,
    /// Every endpoint (its `link_gbps` is every link's rate).
    pub endpoint: EndpointConfig,
    /// All-reduce sizes, bytes.
    pub sizes: Vec<u64>,
    /// Bytes each incast sender sends (the `incast` workload).
    pub incast_bytes: u64,
    /// Socket backend of the switch and the hosts: `pnet` (low latency) or `mmap`.
    pub backend: Backend,
    /// Seed of the all-reduce data.
    pub seed: u64,
    /// Give up after this long.
    pub limit: Duration,
    /// Wall-clock time between time-series rows.
    pub sample_every: Duration,
}

/// One host at the end.
#[derive(Debug, Clone, Serialize)]
pub struct HostOutcome {
    /// "r0", "b1", ...
    pub name: String,
    /// Its switch port index (host i is on port i).
    pub port: usize,
    /// Its MAC address, as text (`02:...`).
    pub mac: String,
    /// Its IPv4 address.
    pub ip: Ipv4Addr,
    /// What its endpoint counted.
    pub counters: EndpointCounters,
    /// Its QPs that sent data.
    pub qps: Vec<QpStatus>,
    /// Kernel receive statistics of its socket.
    pub kernel: KernelStats,
    /// Whether its work finished.
    pub done: bool,
    /// Its part of each all-reduce size, smallest first (empty if it is no rank).
    pub sweep: Vec<RankResult>,
    /// A port error, if one stopped it.
    pub error: Option<PortError>,
    /// When its socket was open, ns on the lab's clock (0: when the namespaces were up).
    pub socket_open_ns: Option<u64>,
}

/// What a host thread gives back.
type HostResult = Result<(HostOutcome, Vec<Track>), LabError>;

/// A lab that could not be built or run through.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// Building or removing namespaces and veths, or starting a thread.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A live switch or endpoint that could not start.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// A host's thread panicked.
    #[error("the thread of host {0} panicked")]
    HostPanicked(usize),
    /// The switch's thread panicked.
    #[error("the switch thread panicked")]
    SwitchPanicked,
    /// A switch port failed.
    #[error("switch: {0}")]
    Switch(PortError),
}

/// What the lab gives.
#[derive(Debug)]
pub struct LabOutcome {
    /// The switch and its counters.
    pub switch: Switch,
    /// Kernel receive statistics of the switch's ports.
    pub switch_kernel: Vec<KernelStats>,
    /// Every host, in port order.
    pub hosts: Vec<HostOutcome>,
    /// One row per all-reduce size over all ranks, as nccl-tests prints it.
    pub allreduce: Vec<AllReduceResult>,
    /// The switch's and the hosts' time series, sampled about every `sample_every`.
    pub series: Series,
    /// How long the traffic ran.
    pub elapsed: Duration,
    /// Stopped by Ctrl-C / SIGTERM or the limit before the work finished.
    pub interrupted: bool,
    /// The namespaces' prefix (everything was removed).
    pub prefix: String,
    /// When the hosts were to start sending, on the lab's clock (0: the namespaces were
    /// up, before the switch and the hosts opened their sockets).
    pub start_ns: u64,
}

fn mac(i: usize) -> MacAddr {
    MacAddr([0x02, 0x00, 0xc6, 0x12, 0x00, i as u8])
}

fn ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(198, 18, 0, i as u8 + 1)
}

/// Host names: ranks r0.., then background senders b0, b1.
fn host_names(opts: &LabOptions) -> Vec<String> {
    let mut names: Vec<String> = (0..opts.ranks).map(|i| format!("r{i}")).collect();
    if opts.workload == Workload::RingIncast {
        names.extend(["b0".to_owned(), "b1".to_owned()]);
    }
    names
}

/// How long after the last host's socket is open the hosts start sending: time for every
/// waiting host thread to wake and read the start.
const SOCKETS_OPEN_WITHIN: Duration = Duration::from_millis(2);

/// When the hosts start: each says its socket is open, then waits for the start time.
#[derive(Debug)]
struct StartGate {
    /// Hosts whose socket is open.
    built: AtomicUsize,
    /// The start, ns on the lab's clock; `u64::MAX` until it is known.
    start_ns: AtomicU64,
}

impl Default for StartGate {
    fn default() -> StartGate {
        StartGate {
            built: AtomicUsize::new(0),
            start_ns: AtomicU64::new(u64::MAX),
        }
    }
}

/// Runs the lab: builds it, runs the workload, removes everything, returns the results.
/// `progress` gets a line now and then; `stop` (Ctrl-C) ends it early.
pub fn run(
    opts: &LabOptions,
    stop: &Arc<AtomicBool>,
    progress: &mut dyn FnMut(&str),
) -> Result<LabOutcome, LabError> {
    let names = host_names(opts);
    let n = names.len();
    let mut net = Netns::new()?;
    let prefix = net.name("");
    let mtu = opts.switch.port_defaults.mtu.min(9000);
    let mut namespaces = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let ns = net.namespace(name)?;
        let mac = mac(i).to_string();
        net.veth(
            &format!("s{name}"),
            &ns,
            &format!("h{name}"),
            Some(&mac),
            Some(&format!("{}/24", ip(i))),
            mtu,
        )?;
        namespaces.push(ns);
    }
    let peers: Vec<PeerSpec> = (0..n)
        .map(|i| PeerSpec {
            rank: i,
            mac: mac(i),
            ip: ip(i),
            qpn: 0x100 * (i as u32 + 1),
        })
        .collect();

    let mut switch_cfg = opts.switch.clone();
    switch_cfg.ports = names
        .iter()
        .map(|name| {
            let mut p = switch_cfg.port_or_default(name);
            p.bits_per_sec = opts.endpoint.bits_per_sec();
            p
        })
        .collect();
    let t0 = Instant::now();
    let switch_stop = Arc::new(AtomicBool::new(false));
    let hosts_stop = Arc::new(AtomicBool::new(false));
    let sw_opts = SwitchOptions {
        config: switch_cfg.clone(),
        ifaces: names
            .iter()
            .map(|name| net.name(&format!("s{name}")))
            .collect(),
        backend: opts.backend,
        cores: CoreList::default(),
        busy_poll: false,
        duration: None,
        interval: None,
        metrics: None,
    };
    let every = opts.sample_every;
    // The switch's first sample comes as soon as its ports are open: the hosts start then.
    let switch_ready = Arc::new(AtomicBool::new(false));
    let switch_thread = {
        let stop = Arc::clone(&switch_stop);
        let rec_cfg = switch_cfg.clone();
        let ready = Arc::clone(&switch_ready);
        std::thread::Builder::new()
            .name("lab-switch".into())
            .spawn(move || {
                let mut rec = SwitchRecorder::new("sw", &rec_cfg);
                let mut call = |_: Duration, sw: &Switch| {
                    ready.store(true, Ordering::Relaxed);
                    rec.sample(since(t0), sw);
                };
                let sampler = Sampler {
                    every,
                    call: &mut call,
                };
                let out = crate::runtime::switch::run_sampled(
                    &sw_opts,
                    &stop,
                    &mut std::io::sink(),
                    Some(sampler),
                );
                out.map(|o| (o, rec))
            })?
    };
    // The switch's ports must be open before the hosts start talking; a switch that failed
    // to open them ends its thread, and its error is reported below.
    let waited = Instant::now();
    while !switch_ready.load(Ordering::Relaxed)
        && !switch_thread.is_finished()
        && waited.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let gate = Arc::new(StartGate::default());
    let progress_done: Arc<Vec<AtomicUsize>> =
        Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect());
    let mut threads = Vec::new();
    for (i, ns) in namespaces.iter().enumerate() {
        let ns = ns.clone();
        let peers = peers.clone();
        let opts = opts.clone();
        let iface = net.name(&format!("h{}", names[i]));
        let stop = Arc::clone(&hosts_stop);
        let done_count = Arc::clone(&progress_done);
        let gate = Arc::clone(&gate);
        threads.push(
            std::thread::Builder::new()
                .name(format!("lab-{}", names[i]))
                .spawn(move || -> HostResult {
                    super::netns::enter(&ns)?;
                    host(i, &iface, &peers, &opts, t0, &gate, &stop, &done_count)
                })?,
        );
    }
    // Every host builds its endpoint and its work (the all-reduce buffers of every size:
    // tens of ms) and opens its socket, then waits: they start together as soon as the
    // last socket is open.
    let waited = Instant::now();
    while gate.built.load(Ordering::Relaxed) < n
        && !threads.iter().any(|t| t.is_finished())
        && !stopped(stop)
        && waited.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let start_at = t0.elapsed() + SOCKETS_OPEN_WITHIN;
    gate.start_ns.store(
        u64::try_from(start_at.as_nanos()).unwrap_or(u64::MAX - 1),
        Ordering::Release,
    );

    // Wait for the work: the ranks (or the incast senders); background senders stop then.
    let primary: Vec<usize> = match opts.workload {
        Workload::Ring | Workload::RingIncast => (0..opts.ranks).collect(),
        Workload::Incast => (1..opts.ranks).collect(),
    };
    let mut interrupted = false;
    let deadline = Instant::now() + opts.limit;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        // Ranks are done when their sweeps are (they then linger, answering their peers);
        // incast senders when their threads end.
        let finished = match opts.workload {
            Workload::Incast => primary.iter().all(|&i| threads[i].is_finished()),
            _ => primary.iter().all(|&i| {
                threads[i].is_finished()
                    || progress_done[i].load(Ordering::Relaxed) >= opts.sizes.len()
            }),
        };
        if finished {
            break;
        }
        if stopped(stop) || Instant::now() >= deadline {
            interrupted = true;
            break;
        }
        let sizes_done = progress_done
            .iter()
            .take(opts.ranks)
            .map(|a| a.load(Ordering::Relaxed))
            .min()
            .unwrap_or(0);
        let line = match opts.workload {
            Workload::Incast => format!("incast running, {:.1} s", t0.elapsed().as_secs_f64()),
            _ => format!(
                "all-reduce: {} of {} sizes done on every rank{}, {:.1} s",
                sizes_done,
                opts.sizes.len(),
                opts.sizes
                    .get(sizes_done)
                    .map_or(String::new(), |s| format!(
                        " (now {})",
                        crate::bytes::human(*s)
                    )),
                t0.elapsed().as_secs_f64()
            ),
        };
        progress(&line);
    }
    let elapsed = t0.elapsed().saturating_sub(start_at);
    hosts_stop.store(true, Ordering::Relaxed);
    let mut hosts = Vec::new();
    let mut tracks = Vec::new();
    let mut first_error = None;
    for (i, t) in threads.into_iter().enumerate() {
        match t.join() {
            Ok(Ok((h, tr))) => {
                hosts.push(h);
                tracks.extend(tr);
            }
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(_) => {
                first_error.get_or_insert(LabError::HostPanicked(i));
            }
        }
    }
    switch_stop.store(true, Ordering::Relaxed);
    let (sw_out, rec) = switch_thread
        .join()
        .map_err(|_| LabError::SwitchPanicked)??;
    net.remove();
    if let Some(e) = first_error {
        return Err(e);
    }
    if let Some(e) = sw_out.error {
        return Err(LabError::Switch(e));
    }
    let allreduce = table(opts, &hosts);
    tracks.splice(0..0, rec.finish());
    let series = on_grid(tracks, every);
    Ok(LabOutcome {
        switch: sw_out.switch,
        switch_kernel: sw_out.kernel,
        hosts,
        allreduce,
        series,
        elapsed,
        interrupted,
        prefix,
        start_ns: u64::try_from(start_at.as_nanos()).unwrap_or(u64::MAX),
    })
}

/// One host's thread, inside its namespace.
#[allow(clippy::too_many_arguments)]
fn host(
    i: usize,
    iface: &str,
    peers: &[PeerSpec],
    opts: &LabOptions,
    t0: Instant,
    gate: &StartGate,
    stop: &Arc<AtomicBool>,
    done_count: &Arc<Vec<AtomicUsize>>,
) -> HostResult {
    let me = &peers[i];
    let mut ep = crate::endpoint::Endpoint::new(&opts.endpoint, me.mac, me.ip);
    // Every host's clock reads 0 at `t0`: the all-reduce times compare across ranks. The
    // start is set once every host's socket is open (in the sampler, below): not before.
    let start = Nanos(u64::MAX - 1);
    let ranks = &peers[..opts.ranks];
    let message = 65536;
    let (app, sending): (App, Vec<usize>) = match opts.workload {
        Workload::Ring | Workload::RingIncast if i < opts.ranks => {
            let (to_next, _) = live::ring_qps(&mut ep, ranks, i);
            if i == 0 && opts.workload == Workload::RingIncast {
                live::flow_receive_qps(&mut ep, peers, 0);
                Flow::prepare_receiver(&mut ep, message);
            }
            let sweep = Sweep::new(&mut ep, i, opts.ranks, &opts.sizes, opts.seed, to_next)
                .starting_at(start);
            (sweep.into(), vec![to_next])
        }
        Workload::Ring | Workload::RingIncast => {
            // A background sender (only ring+incast has hosts past the ranks): endless,
            // until the ring is done.
            let qp = live::flow_send_qp(&mut ep, peers, i, 0);
            (Flow::new(qp, None, message, start).into(), vec![qp])
        }
        Workload::Incast if i == 0 => {
            live::flow_receive_qps(&mut ep, peers, 0);
            Flow::prepare_receiver(&mut ep, message);
            (App::Receive, Vec::new())
        }
        Workload::Incast => {
            let qp = live::flow_send_qp(&mut ep, peers, i, 0);
            (
                Flow::new(qp, Some(opts.incast_bytes), message, start).into(),
                vec![qp],
            )
        }
    };
    let ep_opts = EndpointOptions {
        cfg: opts.endpoint.clone(),
        iface: iface.to_owned(),
        backend: opts.backend,
        cores: CoreList::default(),
        busy_poll: false,
        limit: Some(opts.limit),
        linger: Duration::from_millis(300),
        origin: Some(t0),
    };
    let name = if i < opts.ranks {
        format!("r{i}")
    } else {
        format!("b{}", i - opts.ranks)
    };
    let qps: Vec<(usize, u32)> = sending
        .iter()
        .map(|&q| (q, ep.qp_status(q, Nanos::ZERO).qpn))
        .collect();
    let mut rec = HostRecorder::new(&name, &qps, ep.data_priority());
    let mut socket_open_ns = None;
    let mut call = |_: Duration, l: &mut live::Live<'_>| {
        // The first sample comes once the host's socket is open: say so, and wait for the
        // start the lab gives once every host's is.
        if socket_open_ns.is_none() {
            socket_open_ns = Some(l.now.0);
            gate.built.fetch_add(1, Ordering::Release);
            let mut start_ns = gate.start_ns.load(Ordering::Acquire);
            while start_ns == u64::MAX && !stopped(stop) {
                std::thread::sleep(Duration::from_micros(200));
                start_ns = gate.start_ns.load(Ordering::Acquire);
            }
            l.app.set_start(Nanos(start_ns.min(u64::MAX - 1)));
        }
        rec.sample(l.now, l.endpoint);
        if let Some(s) = l.app.sweep() {
            done_count[i].store(s.finished(), Ordering::Relaxed);
        }
    };
    // A rank's sweep ends while its thread lingers: the sampler must see the last size.
    let sample_every = opts.sample_every.min(Duration::from_millis(5));
    let sampler = EndpointSampler {
        every: sample_every,
        call: &mut call,
    };
    // Every host stops when the lab says so; a rank also ends when its sweep is done.
    let out = live::run_sampled(&ep_opts, ep, app, stop, Some(sampler))?;
    let tracks = rec.finish();
    let sweep = out
        .app
        .sweep()
        .map_or_else(Vec::new, |s| s.results(&out.endpoint));
    let qps = sending
        .iter()
        .map(|&q| out.endpoint.qp_status(q, out.end))
        .collect();
    Ok((
        HostOutcome {
            name,
            port: i,
            mac: me.mac.to_string(),
            ip: me.ip,
            counters: out.endpoint.counters(),
            qps,
            kernel: out.kernel,
            done: out.app.done(),
            sweep,
            error: out.error,
            socket_open_ns,
        },
        tracks,
    ))
}

/// Time since `t0`, as the cores count it.
fn since(t0: Instant) -> Nanos {
    Nanos(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX))
}

/// Puts every track (switch first, then hosts) on one time grid of step `every`.
fn on_grid(tracks: Vec<Track>, every: Duration) -> Series {
    let end = tracks
        .iter()
        .filter_map(|t| t.samples.last().map(|s| s.0))
        .max()
        .unwrap_or_default();
    let step = u64::try_from(every.as_nanos()).unwrap_or(u64::MAX).max(1);
    let times = (0..=end.0 / step).map(|k| Nanos(k * step)).collect();
    Series::on_grid(times, tracks)
}

/// The all-reduce table over all ranks.
fn table(opts: &LabOptions, hosts: &[HostOutcome]) -> Vec<AllReduceResult> {
    if opts.workload == Workload::Incast {
        return Vec::new();
    }
    opts.sizes
        .iter()
        .enumerate()
        .map(|(k, &size)| {
            let parts = hosts.iter().filter(|h| h.port < opts.ranks).map(|h| {
                h.sweep
                    .get(k)
                    .copied()
                    .unwrap_or_else(|| RankResult::missing(size))
            });
            AllReduceResult::over_ranks(size, parts)
        })
        .collect()
}

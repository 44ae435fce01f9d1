//! `rocelab lab`: a small lossless fabric in namespaces, in one process, on two pinned
//! threads. The switch runs on one, with every switch port, in the root namespace; every
//! host runs on the other, which opens each host's socket inside that host's namespace (a
//! socket stays where it was opened) and then polls them all. The hosts' work (endpoints,
//! QPs, all-reduce buffers) is built before the namespaces, so traffic starts as soon as
//! the sockets are open. The whole lab lives and dies with this process. Namespaces and
//! veths come from [`Netns`], removed on every way out but SIGKILL, and then by the next
//! run.

use super::netns::{self, Netns};
use crate::config::SwitchConfig;
use crate::config::endpoint::EndpointConfig;
use crate::endpoint::Endpoint;
use crate::endpoint::app::{App, Application as _};
use crate::endpoint::flow::Flow;
use crate::endpoint::sweep::{AllReduceResult, Gather, RankResult, Sweep};
use crate::endpoint::{EndpointCounters, QpStatus};
use crate::io::{Backend, KernelStats};
use crate::runtime::endpoint::{self as live, EndpointSampler, PeerSpec, RunOptions};
use crate::runtime::ports::{Opened, Ports, ThreadStats};
use crate::runtime::switch::{Sampler, SwitchOptions};
use crate::runtime::{CoreList, PortError, RuntimeError, stopped};
use crate::series::{HostRecorder, Series, SwitchRecorder, Track};
use crate::switch::Switch;
use crate::time::Nanos;
use crate::wire::MacAddr;
use serde::Serialize;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What runs in the lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// A ring all-reduce sweep over every host.
    Ring,
    /// Every host but host 0 sends a bulk flow to host 0.
    Incast,
    /// The ring, with two more hosts pushing bulk flows into rank 0's port meanwhile.
    #[value(name = "ring-incast", alias = "ring+incast")]
    RingIncast,
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Workload::Ring => "ring",
            Workload::Incast => "incast",
            Workload::RingIncast => "ring-incast",
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
    /// Socket backend of the switch and the hosts: `pnet` or `mmap`.
    pub backend: Backend,
    /// Cores to pin to: the switch's thread to the first, the hosts' to the second (or
    /// the first, when there is one); empty: no pinning.
    pub cores: CoreList,
    /// Seed of the all-reduce data.
    pub seed: u64,
    /// Give up after this long.
    pub limit: Duration,
    /// Wall-clock time between time-series rows.
    pub sample_every: Duration,
    /// Real-time priority for the switch's and the hosts' threads
    /// ([`runtime::realtime`](crate::runtime::realtime)); `None`: normal.
    pub realtime: Option<u8>,
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
    /// How long its data priority was paused by PFC, in all, ns.
    pub paused_ns: u64,
}

/// What the hosts' thread gives back.
struct HostsDone {
    /// Every host.
    hosts: Vec<HostOutcome>,
    /// Their time series.
    tracks: Vec<Track>,
    /// When they started, on the lab's clock.
    start: Nanos,
    /// When the last of the hosts whose work the lab waits for (ranks, incast senders)
    /// finished it; `None` if one did not.
    work_end: Option<Nanos>,
    /// How the thread fared.
    thread: ThreadStats,
    /// What r0 received from each sender.
    into_r0: Vec<Inflow>,
}

type HostsResult = Result<HostsDone, LabError>;

/// A lab that could not be built or run through.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// Building or removing namespaces and veths, or starting a thread.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A live switch or endpoint that could not start.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The hosts' thread panicked.
    #[error("the hosts' thread panicked")]
    HostsPanicked,
    /// The switch's thread panicked.
    #[error("the switch thread panicked")]
    SwitchPanicked,
    /// A switch port failed.
    #[error("switch: {0}")]
    Switch(PortError),
    /// Ctrl-C or SIGTERM came while the lab was being prepared or built: no traffic ran,
    /// and whatever was made is removed.
    #[error("stopped (Ctrl-C or SIGTERM) before the traffic started; everything made was removed")]
    Stopped,
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
    /// How long the traffic ran: from the hosts' start to the end of the work they wait
    /// for, as they timed it (or to the stop, when it did not finish); the lingering, the
    /// threads' ends and the teardown after it are not counted.
    pub elapsed: Duration,
    /// Stopped by Ctrl-C / SIGTERM or the limit before the work finished.
    pub interrupted: bool,
    /// The namespaces' prefix (everything was removed).
    pub prefix: String,
    /// When the hosts were to start sending, on the lab's clock (0: the namespaces were
    /// up, before the switch and the hosts opened their sockets).
    pub start_ns: u64,
    /// How the switch's thread fared.
    pub switch_thread: ThreadStats,
    /// How the hosts' thread fared.
    pub hosts_thread: ThreadStats,
    /// What r0 received from each sender: while the largest all-reduce size ran (from its
    /// start on the first rank to its end on the last), or over the whole incast.
    pub into_r0: Vec<Inflow>,
}

/// Payload one host delivered to r0 over the lab's measured span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Inflow {
    /// The sending host ("r3", "b0", ...).
    pub from: String,
    /// Payload bytes r0 accepted from it.
    pub bytes: u64,
}

/// Payload an endpoint has accepted so far, per peer IP (its QPs summed).
fn received_per_peer(ep: &Endpoint, now: Nanos) -> Vec<(Ipv4Addr, u64)> {
    let mut per: Vec<(Ipv4Addr, u64)> = Vec::new();
    for q in 0..ep.qp_count() {
        let st = ep.qp_status(q, now);
        match per.iter_mut().find(|(ip, _)| *ip == st.peer_ip) {
            Some((_, b)) => *b += st.counters.data_bytes_received,
            None => per.push((st.peer_ip, st.counters.data_bytes_received)),
        }
    }
    per
}

/// Bytes per sender between two snapshots, senders that sent nothing left out, in host
/// order.
fn inflows(to: &[(Ipv4Addr, u64)], from: &[(Ipv4Addr, u64)], names: &[String]) -> Vec<Inflow> {
    names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let at = |snap: &[(Ipv4Addr, u64)]| {
                snap.iter()
                    .find(|(a, _)| *a == ip(i))
                    .map_or(0, |&(_, b)| b)
            };
            let bytes = at(to).saturating_sub(at(from));
            (bytes > 0).then(|| Inflow {
                from: name.clone(),
                bytes,
            })
        })
        .collect()
}

fn mac(i: usize) -> MacAddr {
    MacAddr([0x02, 0x00, 0xc6, 0x12, 0x00, i as u8])
}

fn ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(198, 18, 0, i as u8 + 1)
}

/// Host names: ranks r0.., then background senders b0, b1.
pub(crate) fn host_names(opts: &LabOptions) -> Vec<String> {
    let mut names: Vec<String> = (0..opts.ranks).map(|i| format!("r{i}")).collect();
    if opts.workload == Workload::RingIncast {
        names.extend(["b0".to_owned(), "b1".to_owned()]);
    }
    names
}

/// What the lab reports while it runs.
pub trait Progress {
    /// A line on how far the work is, now and then (about 20 a second).
    fn line(&mut self, _line: &str) {}
    /// An all-reduce size every rank has finished, as soon as the lab sees it (within
    /// about 50 ms), in order of size.
    fn size_done(&mut self, _result: &AllReduceResult) {}
}

impl Progress for () {}

/// Runs the lab: builds it, runs the workload, removes everything, returns the results.
/// `progress` hears how the work goes; `stop` (Ctrl-C) ends it early.
pub fn run(
    opts: &LabOptions,
    stop: &Arc<AtomicBool>,
    progress: &mut dyn Progress,
) -> Result<LabOutcome, LabError> {
    let names = host_names(opts);
    let n = names.len();
    let peers: Vec<PeerSpec> = (0..n)
        .map(|i| PeerSpec {
            rank: i,
            mac: mac(i),
            ip: ip(i),
            qpn: 0x100 * (i as u32 + 1),
        })
        .collect();
    // The work first (all-reduce buffers of every size: tens of ms, seconds for large
    // sizes), then the network. A stop meanwhile builds nothing.
    let mut work: Vec<Work> = Vec::with_capacity(n);
    for (i, name) in names.iter().enumerate() {
        if stopped(stop) {
            return Err(LabError::Stopped);
        }
        work.push(Work::new(i, name, &peers, opts));
    }
    if stopped(stop) {
        return Err(LabError::Stopped);
    }

    let mut switch_cfg = opts.switch.clone();
    switch_cfg.ports = names
        .iter()
        .map(|name| {
            let mut p = switch_cfg.port_or_default(name);
            p.bits_per_sec = opts.endpoint.bits_per_sec();
            p
        })
        .collect();
    let mut net = Netns::new()?;
    let prefix = net.name("");
    // A command that failed because of the stop is the stop.
    let (t0, socket_open, switch_ports, host_ports) =
        build_network(&mut net, &names, &switch_cfg, opts, stop)
            .map_err(|e| if stopped(stop) { LabError::Stopped } else { e })?;
    let switch_stop = Arc::new(AtomicBool::new(false));
    let hosts_stop = Arc::new(AtomicBool::new(false));
    let sw_opts = switch_options(
        opts,
        &switch_cfg,
        names
            .iter()
            .map(|name| net.name(&netns::switch_end_role(name)))
            .collect(),
    );
    let every = opts.sample_every;
    // The switch's first sample comes as soon as its ports are open: the hosts start then.
    let switch_ready = Arc::new(AtomicBool::new(false));
    let switch_thread = {
        let stop = Arc::clone(&switch_stop);
        let rec_cfg = switch_cfg.clone();
        let ready = Arc::clone(&switch_ready);
        let ports = switch_ports;
        std::thread::Builder::new()
            .name("lab-switch".into())
            .spawn(move || {
                let mut rec = SwitchRecorder::new("sw", &rec_cfg);
                let mut call = |_: Duration, sw: &Switch| {
                    ready.store(true, Ordering::Release);
                    rec.sample(since(t0), sw);
                };
                let sampler = Sampler {
                    every,
                    call: &mut call,
                };
                let out = crate::runtime::switch::run_sampled_on(
                    ports,
                    &sw_opts,
                    &stop,
                    &mut std::io::sink(),
                    Some(sampler),
                );
                out.map(|o| (o, rec))
            })?
    };
    let status = Arc::new(HostsStatus::new(n));
    let hosts_thread = {
        let opts = opts.clone();
        let stop = Arc::clone(&hosts_stop);
        let status = Arc::clone(&status);
        let ready = Arc::clone(&switch_ready);
        std::thread::Builder::new()
            .name("lab-hosts".into())
            .spawn(move || -> HostsResult {
                hosts(
                    work,
                    host_ports,
                    &opts,
                    t0,
                    socket_open,
                    &ready,
                    &status,
                    &stop,
                )
            })?
    };

    // Wait for the work: the ranks (or the incast senders); background senders stop then.
    let primary = primary_hosts(opts);
    let deadline = Instant::now() + opts.limit;
    let mut streamed = 0;
    let finished = || {
        primary.iter().all(|&i| match opts.workload {
            // Incast senders are done when their flows are; ranks when their sweeps are
            // (they then linger, answering their peers).
            Workload::Incast => status.done[i].load(Ordering::Relaxed),
            _ => status.sizes_done[i].load(Ordering::Relaxed) >= opts.sizes.len(),
        })
    };
    loop {
        std::thread::sleep(Duration::from_millis(50));
        streamed = status.stream_rows(streamed, progress);
        if hosts_thread.is_finished() || switch_thread.is_finished() {
            break;
        }
        if finished() {
            break;
        }
        if stopped(stop) || Instant::now() >= deadline {
            break;
        }
        let sizes_done = status
            .sizes_done
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
        progress.line(&line);
    }
    // Not finished is interrupted, however the loop ended: Ctrl-C, the lab's limit, or
    // the hosts' own limit (which stops their thread).
    let interrupted = !finished();
    let stopped_at = since(t0);
    hosts_stop.store(true, Ordering::Relaxed);
    let hosts_out = hosts_thread.join().map_err(|_| LabError::HostsPanicked);
    switch_stop.store(true, Ordering::Relaxed);
    let switch_out = switch_thread.join().map_err(|_| LabError::SwitchPanicked);
    net.remove();
    let HostsDone {
        hosts,
        mut tracks,
        start,
        work_end,
        thread: hosts_thread,
        into_r0,
    } = hosts_out??;
    let (sw_out, rec) = switch_out??;
    if let Some(e) = sw_out.error {
        return Err(LabError::Switch(e));
    }
    // How long the traffic ran: to the end of the work as the hosts timed it, or to the
    // stop; not the lingering, the joins and the teardown after it.
    let end = work_end.filter(|_| !interrupted).unwrap_or(stopped_at);
    let elapsed = Duration::from_nanos(end.0.saturating_sub(start.0));
    let allreduce = table(opts, &hosts);
    // The rows the loop above did not print: the last ones, and those that never finished.
    let streamed = status.stream_rows(streamed, progress);
    for r in allreduce.iter().skip(streamed) {
        progress.size_done(r);
    }
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
        start_ns: start.0,
        switch_thread: sw_out.threads.first().copied().unwrap_or_default(),
        hosts_thread,
        into_r0,
    })
}

/// The lab's switch: `switch_cfg` on `ifaces`, host i's on port i. Every host's MAC is
/// known from the start, as a fabric that has long since learned them from ARP knows them
/// (and as the twin's switch has them): before, the switch flooded RoCE data to every host
/// until the receiver's first frame taught it where the receiver was.
fn switch_options(
    opts: &LabOptions,
    switch_cfg: &SwitchConfig,
    ifaces: Vec<String>,
) -> SwitchOptions {
    SwitchOptions {
        config: switch_cfg.clone(),
        static_macs: (0..ifaces.len()).map(|i| (mac(i), i)).collect(),
        ifaces,
        backend: opts.backend,
        // One thread for the switch: the hosts' thread has the next core.
        cores: CoreList(opts.cores.0.iter().take(1).copied().collect()),
        busy_poll: false,
        duration: None,
        interval: None,
        metrics: None,
        // A host gone is a failed lab run.
        keep_going_when_a_port_is_down: false,
        realtime: opts.realtime,
    }
}

/// All-reduce runs before the timed sizes: one, of the smallest size or 64 KiB.
const WARM_UP: usize = 1;
const WARM_UP_BYTES: u64 = 65_536;

/// What the hosts' thread tells the lab as it runs.
#[derive(Debug)]
struct HostsStatus {
    /// All-reduce sizes each host has finished.
    sizes_done: Vec<AtomicUsize>,
    /// Whether each host's work is done.
    done: Vec<AtomicBool>,
    /// The all-reduce sizes every rank has finished, in order.
    rows: Mutex<Vec<AllReduceResult>>,
}

impl HostsStatus {
    fn new(n: usize) -> HostsStatus {
        HostsStatus {
            sizes_done: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            done: (0..n).map(|_| AtomicBool::new(false)).collect(),
            rows: Mutex::new(Vec::new()),
        }
    }

    /// Gives `progress` the finished sizes from number `from` on; returns how many there
    /// are now.
    fn stream_rows(&self, from: usize, progress: &mut dyn Progress) -> usize {
        let rows = self
            .rows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for r in rows.iter().skip(from) {
            progress.size_done(r);
        }
        rows.len().max(from)
    }
}

/// One host's endpoint and work, built before the network.
struct Work {
    name: String,
    ep: Endpoint,
    app: App,
    /// Its QPs that send data.
    sending: Vec<usize>,
}

impl Work {
    fn new(i: usize, name: &str, peers: &[PeerSpec], opts: &LabOptions) -> Work {
        let me = &peers[i];
        let mut ep = Endpoint::new(&opts.endpoint, me.mac, me.ip);
        // The start is set once every socket is open (see `hosts`): not before.
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
                // A warm-up run first, untimed, as nccl-tests does (`-w`): the first
                // all-reduce through freshly started threads, cold caches and a switch
                // that has not learnt the MACs yet is not what the fabric does. Small (at
                // most 64 KiB): it warms the path, not the buffers.
                let warm_up = opts.sizes.first().map(|&s| s.min(WARM_UP_BYTES));
                let sizes: Vec<u64> = warm_up
                    .into_iter()
                    .chain(opts.sizes.iter().copied())
                    .collect();
                let sweep = Sweep::new(&mut ep, i, opts.ranks, &sizes, opts.seed, to_next)
                    .starting_at(start);
                (sweep.into(), vec![to_next])
            }
            Workload::Ring | Workload::RingIncast => {
                // A background sender (only ring-incast has hosts past the ranks): endless,
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
        Work {
            name: name.to_owned(),
            ep,
            app,
            sending,
        }
    }
}

/// The hosts' ports, and the UDP port 4791 of each host's namespace, held so that its
/// kernel does not answer RoCE frames with ICMP port unreachable.
type HostPorts = (Ports, Vec<Option<std::net::UdpSocket>>);

/// Builds a namespace and a veth pair to the switch for every host, and opens each
/// pair's two sockets (the switch's end in this namespace, the host's in its own) on
/// threads of their own as soon as the pair is up, before the rest is configured: setting
/// up a packet socket's ring waits for a kernel grace period (about 8 ms), and these waits
/// overlap the configuring of the namespaces (tens of ms of `ip` per host); so does
/// mapping the two sets' frame buffers (tens of MB). Returns when the namespaces were up
/// (the lab's clock reads 0 then), when every socket was open after that (0 if before),
/// the switch's ports and the hosts'. A raised `stop` ends the building between two `ip`
/// commands with [`LabError::Stopped`] (`net` removes what was made).
fn build_network(
    net: &mut Netns,
    names: &[String],
    switch_cfg: &SwitchConfig,
    opts: &LabOptions,
    stop: &AtomicBool,
) -> Result<(Instant, Nanos, Ports, HostPorts), LabError> {
    let mtu = opts.switch.port_defaults.mtu.min(9000);
    let switch_frame = crate::runtime::switch::frame_mtu(switch_cfg);
    let host_frame = opts.endpoint.mtu as usize + 128;
    let backend = opts.backend;
    type HostSide = std::io::Result<(Opened, Option<std::net::UdpSocket>)>;
    std::thread::scope(|scope| {
        let switch_set = scope.spawn(move || Ports::for_frames(switch_frame));
        let host_set = scope.spawn(move || Ports::for_frames(host_frame));
        let mut openers = Vec::new();
        let mut namespaces = Vec::new();
        let go_on = || {
            if stopped(stop) {
                Err(LabError::Stopped)
            } else {
                Ok(())
            }
        };
        for (i, name) in names.iter().enumerate() {
            go_on()?;
            let ns = net.namespace(name)?;
            go_on()?;
            let mac = mac(i).to_string();
            net.veth_pair(
                &netns::switch_end_role(name),
                &ns,
                &netns::host_end_role(name),
                Some(&mac),
                mtu,
            )?;
            namespaces.push(ns.clone());
            let (switch_end, host_end) = (
                net.name(&netns::switch_end_role(name)),
                net.name(&netns::host_end_role(name)),
            );
            // This thread is in the root namespace, and so are the threads it starts.
            let switch_side = scope.spawn(move || Opened::open(backend, &switch_end, switch_frame));
            let host_side = scope.spawn(move || -> HostSide {
                super::netns::enter(&ns)?;
                Ok((
                    Opened::open(backend, &host_end, host_frame)?,
                    live::claim_roce_port(),
                ))
            });
            openers.push((switch_side, host_side));
        }
        for (i, (name, ns)) in names.iter().zip(&namespaces).enumerate() {
            go_on()?;
            net.configure(
                &netns::switch_end_role(name),
                ns,
                &netns::host_end_role(name),
                Some(&format!("{}/24", ip(i))),
            )?;
        }
        // The lab's clock reads 0 now: the namespaces are up.
        let t0 = Instant::now();
        let set = |t: std::thread::ScopedJoinHandle<'_, Ports>| {
            t.join()
                .map_err(|_| std::io::Error::other("mapping the frame buffers panicked"))
        };
        let (mut switch_ports, mut host_ports) = (set(switch_set)?, set(host_set)?);
        let mut claims = Vec::new();
        for (switch_side, host_side) in openers {
            switch_ports.adopt(Opened::join(switch_side)?);
            let (port, claim) = host_side
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("opening a port panicked")))?;
            host_ports.adopt(port);
            claims.push(claim);
        }
        Ok((t0, since(t0), switch_ports, (host_ports, claims)))
    })
}

/// The hosts' thread, given their sockets (open at `socket_open` on the lab's clock):
/// waits for the switch, starts every host now, and runs them all.
#[allow(clippy::too_many_arguments)]
fn hosts(
    work: Vec<Work>,
    (ports, _claims): HostPorts,
    opts: &LabOptions,
    t0: Instant,
    socket_open: Nanos,
    switch_ready: &AtomicBool,
    status: &HostsStatus,
    stop: &Arc<AtomicBool>,
) -> HostsResult {
    let waited = Instant::now();
    while !switch_ready.load(Ordering::Acquire)
        && !stopped(stop)
        && waited.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_micros(100));
    }
    opts.cores.pin(1);
    // Checked before the run (realtime_allowed): a thread that cannot runs as it is.
    let _ = crate::runtime::realtime(opts.realtime);
    let start = since(t0);
    let mut recorders = Vec::new();
    let mut hosts = Vec::new();
    let mut names = Vec::new();
    let mut sending = Vec::new();
    for w in work {
        let qps: Vec<(usize, u32)> = w
            .sending
            .iter()
            .map(|&q| (q, w.ep.qp_status(q, Nanos::ZERO).qpn))
            .collect();
        recorders.push(HostRecorder::new(&w.name, &qps, w.ep.data_priority()));
        let mut app = w.app;
        app.set_start(start);
        hosts.push((w.ep, app));
        names.push(w.name);
        sending.push(w.sending);
    }
    // What r0 received per QP when the largest size began on the first rank, and when it
    // ended on the last (the span of the twin's recorded run).
    let ranks = opts.ranks;
    let last_size = opts.sizes.len();
    let timed = opts.workload != Workload::Incast;
    let (mut window_start, mut window_end) = (None, None);
    // Sizes each rank finished, the warm-up included (read when r0 is sampled: the others'
    // from the round before).
    let mut finished = vec![0usize; ranks];
    let mut gather = Gather::new(ranks, WARM_UP);
    let mut call = |_: Duration, l: &mut live::Live<'_>| {
        if let (Some(s), Some(f)) = (l.app.sweep(), finished.get_mut(l.host)) {
            *f = s.finished();
        }
        if l.host == 0 && timed {
            let (first, last) = (
                finished.iter().copied().max().unwrap_or(0),
                finished.iter().copied().min().unwrap_or(0),
            );
            // The largest size began on the first rank to finish the one before it.
            if window_start.is_none() && first + 1 >= WARM_UP + last_size {
                window_start = Some(received_per_peer(l.endpoint, l.now));
            }
            if window_end.is_none() && last >= WARM_UP + last_size {
                window_end = Some(received_per_peer(l.endpoint, l.now));
            }
        }
        recorders[l.host].sample(l.now, l.endpoint);
        if let Some(s) = l.app.sweep() {
            let rows = gather.update(l.host, s, l.endpoint);
            if !rows.is_empty() {
                status
                    .rows
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .extend(rows);
            }
            // Sizes done, the warm-up not counted.
            status.sizes_done[l.host]
                .store(s.finished().saturating_sub(WARM_UP), Ordering::Relaxed);
        }
        status.done[l.host].store(l.app.done(), Ordering::Relaxed);
    };
    // A rank's sweep ends while it lingers: the sampler must see the last size.
    let sampler = EndpointSampler {
        every: opts.sample_every.min(Duration::from_millis(5)),
        call: &mut call,
    };
    let run = RunOptions {
        busy_poll: false,
        limit: Some(opts.limit),
        linger: Duration::from_millis(300),
        origin: Some(t0),
        // The switch's cable, as the twin has it.
        propagation: opts.switch.port_defaults.cable,
    };
    // Every host stops when the lab says so, or once all are done.
    let outs = live::run_hosts(&run, hosts, ports, stop, Some(sampler))?;
    let thread = outs.first().map(|o| o.thread).unwrap_or_default();
    let work_end = primary_hosts(opts)
        .into_iter()
        .map(|i| outs.get(i).and_then(|o| o.done_at))
        .collect::<Option<Vec<Nanos>>>()
        .and_then(|ends| ends.into_iter().max());
    // Incast: the whole run is the window.
    let r0_end = outs.first().map(|o| received_per_peer(&o.endpoint, o.end));
    let whole_run = r0_end.map_or_else(Vec::new, |to| inflows(&to, &[], &names));
    let window = match (timed, window_end) {
        (true, Some(to)) => inflows(&to, &window_start.unwrap_or_default(), &names),
        _ => Vec::new(),
    };
    // Empty for an incast, and when r0's sampler saw the largest size start and end at
    // once or never saw it end (its thread ran late on a loaded machine): the whole run
    // stands in for the span it missed.
    let into_r0 = if window.is_empty() { whole_run } else { window };
    let mut tracks = Vec::new();
    for r in recorders {
        tracks.extend(r.finish());
    }
    let hosts = outs
        .into_iter()
        .enumerate()
        .map(|(i, out)| {
            let sweep = out.app.sweep().map_or_else(Vec::new, |s| {
                s.results(&out.endpoint).into_iter().skip(WARM_UP).collect()
            });
            let qps = sending[i]
                .iter()
                .map(|&q| out.endpoint.qp_status(q, out.end))
                .collect();
            HostOutcome {
                name: names[i].clone(),
                port: i,
                mac: mac(i).to_string(),
                ip: ip(i),
                counters: out.endpoint.counters(),
                qps,
                kernel: out.kernel,
                done: out.app.done(),
                sweep,
                error: out.error,
                socket_open_ns: Some(socket_open.0),
                paused_ns: out
                    .endpoint
                    .paused_time(out.endpoint.data_priority(), out.end)
                    .0,
            }
        })
        .collect();
    Ok(HostsDone {
        hosts,
        tracks,
        start,
        work_end,
        thread,
        into_r0,
    })
}

/// The hosts whose work the lab waits for: the ranks, or the incast's senders (the
/// background senders of ring-incast run until the ring is done).
fn primary_hosts(opts: &LabOptions) -> Vec<usize> {
    match opts.workload {
        Workload::Ring | Workload::RingIncast => (0..opts.ranks).collect(),
        Workload::Incast => (1..opts.ranks).collect(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::netns::{host_end_role, lab_host_role, lab_link_role, switch_end_role};

    fn opts(workload: Workload, ranks: usize) -> LabOptions {
        LabOptions {
            workload,
            ranks,
            switch: SwitchConfig::preset("nexus-ai").unwrap(),
            endpoint: EndpointConfig::default(),
            sizes: vec![8192],
            incast_bytes: 1 << 20,
            backend: crate::io::Backend::Pnet,
            cores: CoreList::default(),
            seed: 1,
            limit: Duration::from_secs(5),
            sample_every: Duration::from_millis(1),
            realtime: None,
        }
    }

    /// The lab's switch flooded r1's first data frames to r0 out of every port (126
    /// frames to each of r1..r3 in an incast of 1 MB) until r0's MAC was learned. It knows
    /// every host's from the start: the first frame to r0 leaves by r0's port alone.
    #[test]
    fn the_labs_switch_knows_every_host_before_the_first_frame() {
        let o = opts(Workload::Incast, 4);
        let mut cfg = o.switch.clone();
        cfg.ports = host_names(&o)
            .iter()
            .map(|name| cfg.port_or_default(name))
            .collect();
        let ifaces = (0..4).map(|i| format!("x{i}")).collect();
        let mut sw = crate::runtime::switch::core_of(&switch_options(&o, &cfg, ifaces));
        // An Ethernet frame from r1 to r0 (an unknown EtherType: forwarded by MAC alone).
        let mut frame = vec![0u8; 60];
        frame[..6].copy_from_slice(&mac(0).0);
        frame[6..12].copy_from_slice(&mac(1).0);
        frame[12..14].copy_from_slice(&[0x88, 0xb5]);
        sw.handle_frame(Nanos::ZERO, 1, &frame);
        let mut out = Vec::new();
        let mut now = Nanos::ZERO;
        for _ in 0..100 {
            while let Some((port, _)) = sw.poll_transmit_owned(now) {
                out.push(port);
            }
            match sw.poll_timeout() {
                Some(t) => {
                    now = t.max(now);
                    sw.handle_timeout(now);
                }
                None => break,
            }
        }
        assert_eq!(out, [0], "sent on these ports");
    }

    /// What a killed lab leaves is found by its names (netns::remove_stale): every name
    /// the lab gives must be of the shapes recognised there.
    #[test]
    fn every_name_the_lab_gives_is_one_a_later_run_recognises() {
        for workload in [Workload::Ring, Workload::Incast, Workload::RingIncast] {
            for ranks in [2, 10, 64] {
                for host in host_names(&opts(workload, ranks)) {
                    assert!(lab_host_role(&host), "{host}");
                    assert!(lab_link_role(&switch_end_role(&host)), "{host}");
                    assert!(lab_link_role(&host_end_role(&host)), "{host}");
                }
            }
        }
    }
}

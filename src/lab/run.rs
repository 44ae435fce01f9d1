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
use crate::endpoint::app::allreduce::{AllReduceResult, RankResult};
use crate::endpoint::app::size_sweep::Gather;
use crate::endpoint::app::{App, Application as _};
use crate::endpoint::{EndpointCounters, QpStatus};
use crate::io::{Backend, KernelStats};
use crate::runtime::departures::Departures;
use crate::runtime::hosts::{EndpointSampler, Live, RunOptions, claim_roce_port, run_hosts};
use crate::runtime::lockstep::{Dilation, Lockstep, Member};
use crate::runtime::ports::{Opened, Ports, ThreadStats};
use crate::runtime::switch::{Sampler, SwitchOptions, SwitchOutcome};
use crate::runtime::{CoreList, PortError, RuntimeError, stopped};
use crate::series::{HostRecorder, Series, SwitchRecorder, Track};
use crate::sim::scenario::{AllReducePlan, FlowPlan, Scenario, Shape, Topology};
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
    /// What runs: one switch with a star of hosts, and their work, as `rocelab sim` reads
    /// a scenario ([`scenario`] builds the lab's own; [`live_check`] says whether a file's
    /// can run live). The hosts are built from it exactly as the simulator builds them,
    /// and the twin runs this very value.
    pub scenario: Scenario,
    /// Socket backend of the switch and the hosts: `pnet` or `mmap`.
    pub backend: Backend,
    /// Cores to pin to: the switch's thread to the first, the hosts' to the second (or
    /// the first, when there is one); empty: no pinning.
    pub cores: CoreList,
    /// Give up after this long.
    pub limit: Duration,
    /// Wall-clock time between time-series rows.
    pub sample_every: Duration,
    /// Real-time priority for the switch's and the hosts' threads
    /// ([`runtime::realtime`](crate::runtime::realtime)); `None`: normal.
    pub realtime: Option<u8>,
    /// How far ahead of the other the switch's and the hosts' threads may run their
    /// shared emulated clock ([`runtime::lockstep`](crate::runtime::lockstep)); `None`:
    /// each runs on the wall clock, and a stalled thread is overrun by the other.
    pub lookahead: Option<Nanos>,
}

/// The lab's default lookahead: a stall longer than this holds the other thread back.
pub const DEFAULT_LOOKAHEAD: Nanos = Nanos(200_000);

impl LabOptions {
    /// What kind of work runs, for the reports' words.
    pub fn workload(&self) -> Workload {
        match (&self.scenario.allreduce, self.scenario.flows.is_empty()) {
            (Some(_), true) => Workload::Ring,
            (Some(_), false) => Workload::RingIncast,
            (None, _) => Workload::Incast,
        }
    }

    /// The all-reduce's ranks (hosts, in ring order); empty without one.
    pub fn rank_hosts(&self) -> &[usize] {
        self.scenario.allreduce.as_ref().map_or(&[], |a| &a.ranks)
    }

    /// Ranks in the ring, or, without an all-reduce, every host.
    pub fn ranks(&self) -> usize {
        match &self.scenario.allreduce {
            Some(a) => a.ranks.len(),
            None => self.scenario.topology.hosts(),
        }
    }

    /// The timed all-reduce sizes, bytes per rank.
    pub fn sizes(&self) -> &[u64] {
        self.scenario.allreduce.as_ref().map_or(&[], |a| &a.sizes)
    }

    /// Untimed all-reduce runs before the timed sizes (0 or 1).
    pub fn warm_ups(&self) -> usize {
        self.scenario
            .allreduce
            .as_ref()
            .map_or(0, |a| usize::from(a.warm_up.is_some()))
    }

    /// The switch's configuration (its ports are made from the hosts).
    pub fn switch(&self) -> &SwitchConfig {
        &self.scenario.switch
    }

    /// Every endpoint's configuration, at the links' rate.
    pub fn endpoint(&self) -> EndpointConfig {
        let mut ep = self.scenario.endpoint.clone();
        ep.link_gbps = self.scenario.topology.bits_per_sec as f64 / 1e9;
        ep
    }

    /// The bytes of the first flow that has a size (an incast sender's), if any.
    pub fn flow_bytes(&self) -> Option<u64> {
        self.scenario.flows.iter().find_map(|f| f.bytes)
    }
}

/// The lab's own work: what runs on how many hosts.
#[derive(Debug, Clone)]
pub struct LabWork {
    /// Ring, incast or both.
    pub workload: Workload,
    /// Hosts in the ring (or in the incast, receiver included).
    pub ranks: usize,
    /// All-reduce sizes, bytes per rank.
    pub sizes: Vec<u64>,
    /// Bytes each incast sender sends.
    pub incast_bytes: u64,
}

/// The lab's own work as a scenario: `work.ranks` hosts on one switch configured as
/// `switch`, every link at `endpoint`'s rate with the configuration's cable; a ring
/// all-reduce sweep of the sizes back to back after a warm-up (as nccl-tests runs it), two
/// more hosts pushing endless 64 KiB WRITEs into host 0 meanwhile (ring-incast), or every
/// host but 0 sending its bytes to it (incast). `limit` bounds its virtual time.
pub fn scenario(
    work: &LabWork,
    switch: &SwitchConfig,
    endpoint: &EndpointConfig,
    seed: u64,
    limit: Duration,
) -> Scenario {
    let LabWork {
        workload,
        ranks,
        ref sizes,
        incast_bytes,
    } = *work;
    let background = if workload == Workload::RingIncast {
        2
    } else {
        0
    };
    let hosts = ranks + background;
    let flow = |from, bytes| FlowPlan {
        from,
        to: 0,
        start: Nanos::ZERO,
        bytes,
        message_bytes: MESSAGE_BYTES,
    };
    let flows: Vec<FlowPlan> = match workload {
        Workload::Ring => Vec::new(),
        Workload::Incast => (1..ranks)
            .map(|from| flow(from, Some(incast_bytes)))
            .collect(),
        Workload::RingIncast => (ranks..hosts).map(|from| flow(from, None)).collect(),
    };
    // A warm-up run first, untimed, as nccl-tests does (`-w`): the first all-reduce
    // through freshly started threads, cold caches and idle DCQCN state is not what the
    // fabric does. Small (at most 64 KiB): it warms the path, not the buffers.
    let allreduce = (workload != Workload::Incast).then(|| AllReducePlan {
        ranks: (0..ranks).collect(),
        sizes: sizes.to_vec(),
        series_bytes: sizes.last().copied().unwrap_or(0),
        start: Nanos::ZERO,
        warm_up: sizes.first().map(|&s| s.min(WARM_UP_BYTES)),
        back_to_back: true,
    });
    Scenario {
        name: format!("lab {workload}"),
        description: "the lab's fabric and workload".into(),
        digest: String::new(),
        seed,
        threads: 1,
        whole_frames: false,
        duration: Nanos(u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX)),
        measure_from: Nanos::ZERO,
        sample: Nanos::from_micros(100),
        topology: Topology {
            shape: Shape::Star { hosts },
            bits_per_sec: endpoint.bits_per_sec(),
            fabric_bits_per_sec: endpoint.bits_per_sec(),
            // The configuration's cable: what the switch's headroom is computed for.
            delay: switch.port_defaults.cable,
            loss: 0.0,
            switch_latency: Nanos::ZERO,
            load_balancing: None,
        },
        fabric: crate::sim::fabric::Fabric::Roce,
        switch: switch.clone(),
        switch_source: "the lab's switch configuration".into(),
        endpoint: endpoint.clone(),
        flows,
        allreduce,
        workloads: Vec::new(),
        jobs: Vec::new(),
        faults: Vec::new(),
        link_faults: Vec::new(),
        switch_load_balancing: Vec::new(),
        variant: None,
        variants: Vec::new(),
    }
}

/// The most hosts the lab builds namespaces for.
pub const MAX_LIVE_HOSTS: usize = 66;

/// Why the lab cannot build a scenario live.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the lab cannot run {} live", .reasons.join(", "))]
pub struct NotLive {
    /// What the scenario asks that the lab cannot build, in the order checked.
    pub reasons: Vec<String>,
}

/// Why `scenario` cannot run live, if it cannot: the lab builds one switch with a star of
/// hosts in namespaces, on two threads, and runs ring all-reduce and `[[flow]]`s on them.
pub fn live_check(scenario: &Scenario) -> Result<(), NotLive> {
    let mut no = Vec::new();
    let hosts = scenario.topology.hosts();
    match scenario.topology.shape {
        Shape::Star { .. } if hosts > MAX_LIVE_HOSTS => no.push(format!(
            "{hosts} hosts (the lab builds at most {MAX_LIVE_HOSTS} namespaces)"
        )),
        Shape::Star { .. } => {}
        _ => no.push("a topology other than one switch (kind = \"star\")".to_owned()),
    }
    if !matches!(scenario.fabric, crate::sim::fabric::Fabric::Roce) {
        no.push("a fabric other than RoCEv2 (fabric = \"roce\")".to_owned());
    }
    if scenario.allreduce.as_ref().is_some_and(|a| !a.back_to_back) {
        no.push(
            "an [allreduce] of fresh runs (the lab runs its sizes one after the other on one network: set back_to_back = true)"
                .to_owned(),
        );
    }
    if !scenario.workloads.is_empty() {
        no.push("[[workload]] entries".to_owned());
    }
    if !scenario.faults.is_empty() {
        no.push("[[fault]] entries".to_owned());
    }
    if scenario.topology.loss > 0.0 {
        no.push("link loss (topology.loss)".to_owned());
    }
    if scenario.topology.switch_latency > Nanos::ZERO {
        no.push("a switch latency (topology.switch_latency_ns)".to_owned());
    }
    if !scenario.variants.is_empty() {
        no.push("[[variant]] entries (run each as a scenario of its own)".to_owned());
    }
    let gbps = scenario.topology.bits_per_sec as f64 / 1e9;
    if !(0.001..=100.0).contains(&gbps) {
        no.push(format!(
            "links at {gbps} Gb/s (veth and threads emulate 0.001 to 100 Gb/s)"
        ));
    }
    if no.is_empty() {
        Ok(())
    } else {
        Err(NotLive { reasons: no })
    }
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
    /// Its QPs that went to the error state.
    pub qp_errors: Vec<crate::endpoint::QpFailure>,
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

/// Bytes per sender in `received` (senders that sent nothing left out), in host order.
fn inflows(received: &[(Ipv4Addr, u64)], names: &[String]) -> Vec<Inflow> {
    names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let bytes = received
                .iter()
                .find(|(a, _)| *a == ip(i))
                .map_or(0, |&(_, b)| b);
            (bytes > 0).then(|| Inflow {
                from: name.clone(),
                bytes,
            })
        })
        .collect()
}

/// Host `i`'s MAC address: the simulator's.
fn mac(i: usize) -> MacAddr {
    crate::sim::topology::host_mac(i)
}

/// Host `i`'s IPv4 address: the simulator's.
fn ip(i: usize) -> Ipv4Addr {
    crate::sim::topology::host_ip(i)
}

/// Host names, in host order: the all-reduce's ranks r0.. (by their place in the ring),
/// the other hosts b0, b1, ...; without an all-reduce, every host r0, r1, ...
pub(crate) fn host_names(opts: &LabOptions) -> Vec<String> {
    let hosts = opts.scenario.topology.hosts();
    let ranks = opts.rank_hosts();
    if ranks.is_empty() {
        return (0..hosts).map(|i| format!("r{i}")).collect();
    }
    let mut others = 0;
    (0..hosts)
        .map(|h| match ranks.iter().position(|&r| r == h) {
            Some(k) => format!("r{k}"),
            None => {
                others += 1;
                format!("b{}", others - 1)
            }
        })
        .collect()
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
    // The work first (all-reduce buffers of every size: tens of ms, seconds for large
    // sizes), then the network. A stop meanwhile builds nothing.
    if stopped(stop) {
        return Err(LabError::Stopped);
    }
    let work = Work::of(opts, &names);
    if stopped(stop) {
        return Err(LabError::Stopped);
    }
    let switch_cfg = switch_config(opts, &names);
    let mut net = Netns::new()?;
    let prefix = net.name("");
    // A command that failed because of the stop is the stop.
    let (t0, socket_open, mut switch_ports, mut host_ports) =
        build_network(&mut net, &names, &switch_cfg, opts, stop)
            .map_err(|e| if stopped(stop) { LabError::Stopped } else { e })?;
    // Port i of either set is one veth's two ends: in lockstep each frame is taken at its
    // departure on the one emulated clock, plus its emulated wire, whenever the other
    // thread gets to read it.
    for i in (0..n).filter(|_| opts.lookahead.is_some()) {
        let (up, down) = (Arc::new(Departures::new()), Arc::new(Departures::new()));
        switch_ports.carry_departures(i, Arc::clone(&down), Arc::clone(&up));
        host_ports.0.carry_departures(i, up, down);
    }
    let switch_stop = Arc::new(AtomicBool::new(false));
    let hosts_stop = Arc::new(AtomicBool::new(false));
    // The switch (0) and the hosts (1) on one emulated clock from t0.
    let lockstep = opts.lookahead.map(|l| Lockstep::new(2, l));
    let member = |me| {
        lockstep.as_ref().map(|l| Member {
            lockstep: Arc::clone(l),
            me,
            origin: t0,
        })
    };
    let (switch_member, hosts_member) = (member(0), member(1));
    let mut sw_opts = switch_options(
        opts,
        &switch_cfg,
        names
            .iter()
            .map(|name| net.name(&netns::switch_end_role(name)))
            .collect(),
    );
    sw_opts.lockstep = switch_member;
    let every = opts.sample_every;
    // The switch's first sample comes as soon as its ports are open: the hosts start then.
    let switch_ready = Arc::new(AtomicBool::new(false));
    let switch_thread = start_switch(
        switch_ports,
        sw_opts,
        t0,
        every,
        lockstep.as_ref().map(|l| Arc::clone(l.dilation())),
        Arc::clone(&switch_stop),
        Arc::clone(&switch_ready),
    )?;
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
                    hosts_member,
                    socket_open,
                    &ready,
                    &status,
                    &stop,
                )
            })?
    };

    let primary = primary_hosts(opts);
    let ended = || hosts_thread.is_finished() || switch_thread.is_finished();
    let streamed = wait_for_work(opts, t0, &status, &primary, ended, stop, progress);
    // Not finished is interrupted, however the loop ended: Ctrl-C, the lab's limit, or
    // the hosts' own limit (which stops their thread).
    let interrupted = !work_finished(opts, &primary, &status);
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

/// The lab's switch, on its own thread: sampled on the emulated clock from `t0`, as the
/// hosts are, raising `ready` at its first sample (its ports are open: the hosts start).
fn start_switch(
    ports: Ports,
    sw_opts: SwitchOptions,
    t0: Instant,
    every: Duration,
    dilation: Option<Arc<Dilation>>,
    stop: Arc<AtomicBool>,
    ready: Arc<AtomicBool>,
) -> std::io::Result<SwitchThread> {
    let rec_cfg = sw_opts.config.clone();
    std::thread::Builder::new()
        .name("lab-switch".into())
        .spawn(move || {
            let mut rec = SwitchRecorder::new("sw", &rec_cfg);
            // On the emulated clock, as the hosts' samples are.
            let mut call = |_: Duration, sw: &Switch| {
                ready.store(true, Ordering::Release);
                let lag = dilation.as_ref().map_or(Nanos::ZERO, |d| d.lag());
                rec.sample(Nanos(since(t0).0.saturating_sub(lag.0)), sw);
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
        })
}

/// The lab's switch thread: its outcome and its samples.
type SwitchThread = std::thread::JoinHandle<Result<(SwitchOutcome, SwitchRecorder), RuntimeError>>;

/// Whether the `primary` hosts' work is done: flow senders when their flows are, ranks
/// when their sweeps are (they then linger, answering their peers).
fn work_finished(opts: &LabOptions, primary: &[usize], status: &HostsStatus) -> bool {
    primary.iter().all(|&i| {
        if opts.rank_hosts().is_empty() {
            status.done[i].load(Ordering::Relaxed)
        } else {
            status.sizes_done[i].load(Ordering::Relaxed) >= opts.sizes().len()
        }
    })
}

/// Waits for the work of the `primary` hosts (the ranks, or the incast senders), telling
/// `progress` how it goes, until it is done, a thread `ended`, a stop or the lab's limit;
/// returns how many all-reduce rows it streamed.
fn wait_for_work(
    opts: &LabOptions,
    t0: Instant,
    status: &HostsStatus,
    primary: &[usize],
    ended: impl Fn() -> bool,
    stop: &AtomicBool,
    progress: &mut dyn Progress,
) -> usize {
    let deadline = Instant::now() + opts.limit;
    let mut streamed = 0;
    loop {
        std::thread::sleep(Duration::from_millis(50));
        streamed = status.stream_rows(streamed, progress);
        if ended() {
            break;
        }
        if work_finished(opts, primary, status) {
            break;
        }
        if stopped(stop) || Instant::now() >= deadline {
            break;
        }
        let sizes_done = primary
            .iter()
            .map(|&h| status.sizes_done[h].load(Ordering::Relaxed))
            .min()
            .unwrap_or(0);
        let line = match opts.workload() {
            Workload::Incast => format!("flows running, {:.1} s", t0.elapsed().as_secs_f64()),
            _ => format!(
                "all-reduce: {} of {} sizes done on every rank{}, {:.1} s",
                sizes_done,
                opts.sizes().len(),
                opts.sizes()
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
    streamed
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
        lockstep: None,
    }
}

/// The lab's warm-up all-reduce: of the smallest size, or 64 KiB if that is larger.
const WARM_UP_BYTES: u64 = 65_536;
/// The lab's flows' messages: 64 KiB WRITEs.
const MESSAGE_BYTES: usize = 65_536;

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
    /// Every host of the scenario, built as the simulator builds them (the same
    /// addresses, QPs, applications and start times), named `names`.
    fn of(opts: &LabOptions, names: &[String]) -> Vec<Work> {
        crate::sim::run::network(&opts.scenario)
            .into_hosts()
            .into_iter()
            .zip(names)
            .map(|(host, name)| {
                let mut ep = host.endpoint;
                // Frames leave the process: every ICRC is computed and checked.
                ep.set_icrc(true);
                let app = host.app.unwrap_or(App::Receive);
                let sending = app.sending_qp().into_iter().collect();
                Work {
                    name: name.clone(),
                    ep,
                    app,
                    sending,
                }
            })
            .collect()
    }
}

/// The lab's switch configuration: the twin's switch (one port per host at the links'
/// rate, the same RED seed), its ports named after the hosts.
fn switch_config(opts: &LabOptions, names: &[String]) -> SwitchConfig {
    let t = &opts.scenario.topology;
    let mut cfg = crate::sim::topology::star_switch(
        &opts.scenario.switch,
        &opts.endpoint(),
        names.len(),
        t.delay,
        opts.scenario.seed,
    );
    for (p, name) in cfg.ports.iter_mut().zip(names) {
        p.name.clone_from(name);
    }
    cfg
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
    let mtu = opts.switch().port_defaults.mtu.min(9000);
    let switch_frame = crate::runtime::switch::frame_mtu(switch_cfg);
    let host_frame = opts.endpoint().mtu as usize + 128;
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
                    claim_roce_port(),
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
    lockstep: Option<Member>,
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
        // The scenario's start times count from when every host may begin.
        let mut app = w.app;
        app.delay_start(start);
        hosts.push((w.ep, app));
        names.push(w.name);
        sending.push(w.sending);
    }
    // What r0 received per QP when the largest size began on the first rank, and when it
    // ended on the last (the span of the twin's recorded run).
    let rank_hosts = opts.rank_hosts().to_vec();
    let warm = opts.warm_ups();
    let mut gather = Gather::new(rank_hosts.len(), warm);
    let mut call = |_: Duration, l: &mut Live<'_>| {
        let rank = rank_hosts.iter().position(|&h| h == l.host);
        recorders[l.host].sample(l.now, l.endpoint);
        if let (Some(s), Some(rank)) = (l.app.size_sweep(), rank) {
            let rows = gather.update(rank, s, l.endpoint);
            if !rows.is_empty() {
                status
                    .rows
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .extend(rows);
            }
            // Sizes done, the warm-up not counted.
            status.sizes_done[l.host].store(s.finished().saturating_sub(warm), Ordering::Relaxed);
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
        propagation: opts.scenario.topology.delay,
        lockstep,
    };
    // Every host stops when the lab says so, or once all are done.
    let outs = run_hosts(&run, hosts, ports, stop, Some(sampler))?;
    let thread = outs.first().map(|o| o.thread).unwrap_or_default();
    let work_end = primary_hosts(opts)
        .into_iter()
        .map(|i| outs.get(i).and_then(|o| o.done_at))
        .collect::<Option<Vec<Nanos>>>()
        .and_then(|ends| ends.into_iter().max());
    // Over the whole run, as the twin's (one run, back to back) is measured.
    let into_r0 = outs.first().map_or_else(Vec::new, |o| {
        inflows(&received_per_peer(&o.endpoint, o.end), &names)
    });
    let mut tracks = Vec::new();
    for r in recorders {
        tracks.extend(r.finish());
    }
    let hosts = outs
        .into_iter()
        .enumerate()
        .map(|(i, out)| {
            let sweep = out.app.size_sweep().map_or_else(Vec::new, |s| {
                s.results(&out.endpoint).into_iter().skip(warm).collect()
            });
            let qps = sending[i]
                .iter()
                .map(|&q| out.endpoint.qp_status(q, out.end))
                .collect();
            HostOutcome {
                name: names[i].clone(),
                port: i,
                mac: out.endpoint.mac().to_string(),
                ip: out.endpoint.ip(),
                counters: out.endpoint.counters(),
                qps,
                kernel: out.kernel,
                done: out.app.done(),
                sweep,
                error: out.error,
                socket_open_ns: Some(socket_open.0),
                qp_errors: out.endpoint.qp_failures().to_vec(),
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

/// The hosts whose work the lab waits for: the all-reduce's ranks, or else the senders of
/// flows of a given size (flows without one, such as ring-incast's background senders,
/// run until that work is done).
fn primary_hosts(opts: &LabOptions) -> Vec<usize> {
    if opts.rank_hosts().is_empty() {
        let mut senders: Vec<usize> = opts
            .scenario
            .flows
            .iter()
            .filter(|f| f.bytes.is_some())
            .map(|f| f.from)
            .collect();
        senders.sort_unstable();
        senders.dedup();
        senders
    } else {
        opts.rank_hosts().to_vec()
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
    opts.sizes()
        .iter()
        .enumerate()
        .map(|(k, &size)| {
            let parts = opts.rank_hosts().iter().map(|&h| {
                hosts
                    .get(h)
                    .and_then(|h| h.sweep.get(k))
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
        let switch = SwitchConfig::preset("nexus-ai").unwrap();
        let endpoint = EndpointConfig::default();
        let limit = Duration::from_secs(5);
        LabOptions {
            scenario: scenario(
                &LabWork {
                    workload,
                    ranks,
                    sizes: vec![8192],
                    incast_bytes: 1 << 20,
                },
                &switch,
                &endpoint,
                1,
                limit,
            ),
            backend: crate::io::Backend::Pnet,
            cores: CoreList::default(),
            limit,
            sample_every: Duration::from_millis(1),
            realtime: None,
            lookahead: None,
        }
    }

    /// The live hosts are the simulator's: the same addresses, QPs (numbers and peers)
    /// and applications, so that the twin runs what the lab ran.
    #[test]
    fn the_live_hosts_are_the_ones_the_simulator_builds() {
        let o = opts(Workload::RingIncast, 4);
        let names = host_names(&o);
        assert_eq!(names, ["r0", "r1", "r2", "r3", "b0", "b1"]);
        let live = Work::of(&o, &names);
        let sim = crate::sim::run::network(&o.scenario);
        assert_eq!(live.len(), sim.hosts.len());
        for (h, w) in live.iter().enumerate() {
            let e = sim.endpoint(h);
            assert_eq!((w.ep.mac(), w.ep.ip()), (e.mac(), e.ip()), "{}", w.name);
            assert_eq!(w.ep.qp_count(), e.qp_count(), "{}", w.name);
            for q in 0..e.qp_count() {
                let (a, b) = (w.ep.qp_status(q, Nanos::ZERO), e.qp_status(q, Nanos::ZERO));
                assert_eq!(
                    (a.qpn, a.peer_ip, a.peer_qpn),
                    (b.qpn, b.peer_ip, b.peer_qpn)
                );
            }
        }
        // Ranks run the sweep (warm-up included); b0 and b1 each one flow into r0.
        assert_eq!(live[0].app.size_sweep().map(|s| s.len()), Some(2));
        assert!(live[4].app.flow().is_some() && live[5].app.flow().is_some());
        assert_eq!(live.iter().map(|w| w.sending.len()).sum::<usize>(), 6);
    }

    /// The lab's switch flooded r1's first data frames to r0 out of every port (126
    /// frames to each of r1..r3 in an incast of 1 MB) until r0's MAC was learned. It knows
    /// every host's from the start: the first frame to r0 leaves by r0's port alone.
    #[test]
    fn the_labs_switch_knows_every_host_before_the_first_frame() {
        let o = opts(Workload::Incast, 4);
        let cfg = switch_config(&o, &host_names(&o));
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

    /// The built-in `lab-congestion` scenario is the story's second part as a file: the
    /// same hosts, rate, cable, buffer, ECN, headroom, MTU, DCQCN steps and work.
    #[test]
    fn the_lab_congestion_file_is_the_storys_second_part() {
        use crate::config::emulation;
        let file = Scenario::load("lab-congestion").unwrap();
        let mut switch = SwitchConfig::preset("nexus-ai").unwrap();
        emulation::software_headroom(&mut switch, 1_000_000_000, 8.0);
        emulation::scale_buffer(&mut switch, 1_000_000_000);
        let mut endpoint = EndpointConfig {
            mtu: 4096,
            ..Default::default()
        };
        emulation::scale_dcqcn(&mut endpoint.dcqcn, 1.0);
        endpoint.link_gbps = 1.0;
        let work = LabWork {
            workload: Workload::RingIncast,
            ranks: 4,
            sizes: crate::endpoint::app::size_sweep::sizes(8192, 16 << 20, 2).unwrap(),
            incast_bytes: 1,
        };
        let story = scenario(&work, &switch, &endpoint, 1, Duration::from_secs(300));
        let (f, s) = (&file, &story);
        assert_eq!(f.topology.hosts(), s.topology.hosts());
        assert_eq!(f.topology.bits_per_sec, s.topology.bits_per_sec);
        assert_eq!(f.topology.delay, s.topology.delay);
        assert_eq!(f.switch.shared_bytes, s.switch.shared_bytes);
        assert_eq!(
            format!("{:?}", f.switch.queues[3].ecn),
            format!("{:?}", s.switch.queues[3].ecn)
        );
        assert_eq!(
            f.switch.pgs[3].headroom_bytes,
            s.switch.pgs[3].headroom_bytes
        );
        assert_eq!(f.endpoint.mtu, s.endpoint.mtu);
        assert_eq!(
            format!("{:?}", f.endpoint.dcqcn),
            format!("{:?}", s.endpoint.dcqcn)
        );
        let ends = |x: &Scenario| {
            x.flows
                .iter()
                .map(|f| (f.from, f.to, f.bytes, f.message_bytes))
                .collect::<Vec<_>>()
        };
        assert_eq!(ends(f), ends(s));
        let (a, b) = (f.allreduce.as_ref().unwrap(), s.allreduce.as_ref().unwrap());
        assert_eq!(
            (&a.ranks, &a.sizes, a.warm_up, a.back_to_back),
            (&b.ranks, &b.sizes, b.warm_up, b.back_to_back)
        );
    }

    /// A file the lab cannot build live is refused with every reason: its live hosts get
    /// a sweep only when the sizes run back to back (sim's `ring-incast` runs each on a
    /// fresh network, and its ranks would have waited for the limit with nothing to do).
    #[test]
    fn a_scenario_the_lab_cannot_run_live_is_refused_with_its_reasons() {
        assert_eq!(
            live_check(&Scenario::load("lab-congestion").unwrap()),
            Ok(())
        );
        let err = live_check(&Scenario::load("ring-incast").unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("set back_to_back = true"), "{err}");
        let err = live_check(&Scenario::load("web-search").unwrap())
            .unwrap_err()
            .to_string();
        for why in ["a topology other than one switch", "[[workload]] entries"] {
            assert!(err.contains(why), "{why}: {err}");
        }
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

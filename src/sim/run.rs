//! Running a scenario. Flows run for the scenario's duration on one network. An all-reduce
//! sweep runs each size on a fresh network (with the scenario's flows in the background),
//! as nccl-tests times each size on its own, until every rank is done. One run, the flows'
//! or the chosen all-reduce size's, is recorded as a time series.

use super::allreduce::{allreduce_rank, ring_allreduce, ring_size_sweep, size_sweep_rank};
use super::engine::{Stalled, Step};
use super::fct::{FlowFct, Path};
use super::recorder::Recorder;
use super::scenario::AllReducePlan;
use super::scenario::Scenario;
use super::topology::Network;
use crate::endpoint::QpStatus;
use crate::endpoint::app::Application as _;
use crate::endpoint::app::allreduce::{AllReduceResult, RankResult};
use crate::endpoint::app::flow::Flow;
use crate::series::Series;
use crate::time::Nanos;
use serde::Serialize;

/// One QP that sent data, at the end of the recorded run.
#[derive(Debug, Clone, Serialize)]
pub struct QpRow {
    /// The sending host's index.
    pub host: usize,
    /// The receiving host's index, found by the QP's peer IP; `None` if no host has it.
    pub peer_host: Option<usize>,
    /// Its state and counters.
    pub status: QpStatus,
    /// Its packets that arrived CE-marked (counted by the peer's QP).
    pub ce_marked: u64,
    /// Goodput over the measured span, Gb/s: payload the peer accepted (retransmitted
    /// duplicates do not count).
    #[serde(rename = "goodput_gbps")]
    pub gbps: f64,
    /// For a flow of a given size: when its last byte was acknowledged, from its start.
    pub completion_ns: Option<u64>,
}

/// One size of the all-reduce sweep, as nccl-tests prints it, with what the fabric counted
/// while it ran.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct AllReduceRow {
    /// The size's result over all ranks.
    #[serde(flatten)]
    pub result: AllReduceResult,
    /// What the fabric counted while it ran.
    #[serde(flatten)]
    pub fabric: FabricCounts,
    /// How long its ring steps took, over every rank: their spread is the jitter.
    pub steps: StepSpread,
}

/// The spread of an all-reduce's step times over every rank and step (see
/// [`RingAllReduce::step_times`](crate::endpoint::app::allreduce::RingAllReduce::step_times)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StepSpread {
    /// Steps that completed.
    pub count: usize,
    /// The shortest, median, 99th percentile (nearest rank) and longest, ns; 0 without
    /// steps.
    pub min_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Longest.
    pub max_ns: u64,
}

impl StepSpread {
    /// The spread of `times`, ns.
    pub fn of(mut times: Vec<u64>) -> StepSpread {
        times.sort_unstable();
        let at = |q: f64| {
            let rank = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len().max(1));
            times.get(rank - 1).copied().unwrap_or(0)
        };
        StepSpread {
            count: times.len(),
            min_ns: times.first().copied().unwrap_or(0),
            p50_ns: at(0.5),
            p99_ns: at(0.99),
            max_ns: times.last().copied().unwrap_or(0),
        }
    }
}

/// What a scenario run gives.
#[derive(Debug)]
pub struct Outcome {
    /// The recorded run's network, as it ended.
    pub net: Network,
    /// The recorded run's time series, one row per `sample` step.
    pub series: Series,
    /// Its sending QPs.
    pub qps: Vec<QpRow>,
    /// The start of the span flow rates are averaged over.
    pub measured_from: Nanos,
    /// The all-reduce sweep, smallest size first.
    pub allreduce: Vec<AllReduceRow>,
    /// Frames moved over links in all runs.
    pub frames: u64,
    /// The workload flows of the recorded run that arrived, by id, with their FCTs.
    pub flows: Vec<FlowFct>,
}

/// What a run reports while it goes: the command line's progress line and the nccl-tests
/// rows it prints as each size finishes; and whether it is to stop. By default nothing is
/// reported and nothing stops it.
pub trait Progress {
    /// The current run (`part` of `parts`: the sizes of a sweep, or 1) reached virtual
    /// time `now`; it ends at `end` at the latest. Called at every sample step.
    fn at(&mut self, _now: Nanos, _end: Nanos, _part: usize, _parts: usize) {}
    /// One size of the all-reduce sweep finished.
    fn size_done(&mut self, _row: &AllReduceRow) {}
    /// True to end the run now (Ctrl-C): asked after every sample step, so the run stops
    /// within one `sample` of virtual time, and [`run_with`] returns
    /// [`RunError::Stopped`].
    fn stopped(&self) -> bool {
        false
    }
}

/// No progress reports.
impl Progress for () {}

/// Why a scenario run gave no outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// A node made no progress: a bug.
    #[error(transparent)]
    Stalled(#[from] Stalled),
    /// [`Progress::stopped`] said to stop.
    #[error("stopped before the end (Ctrl-C or SIGTERM)")]
    Stopped,
}

/// Runs `scenario`.
pub fn run(scenario: &Scenario) -> Result<Outcome, RunError> {
    run_with(scenario, &mut ())
}

/// Runs `scenario`, reporting to `progress` as it goes.
pub fn run_with(scenario: &Scenario, progress: &mut dyn Progress) -> Result<Outcome, RunError> {
    match &scenario.allreduce {
        None => {
            let mut net = scenario.build(scenario.seed);
            let (series, qps, from) = run_flows(scenario, &mut net, progress)?;
            let frames = net.engine.stats().frames_delivered;
            let flows = flow_fcts(scenario, &net);
            Ok(Outcome {
                net,
                series,
                qps,
                measured_from: from,
                allreduce: Vec::new(),
                frames,
                flows,
            })
        }
        Some(plan) if plan.back_to_back => run_back_to_back(scenario, plan, progress),
        Some(plan) => {
            let mut rows = Vec::new();
            let mut recorded = None;
            let mut frames = 0;
            let parts = plan.sizes.len();
            for (part, &size) in plan.sizes.iter().enumerate() {
                let mut net = scenario.build(scenario.seed);
                let count = (size / 4) as usize;
                ring_allreduce(&mut net, &plan.ranks, count, scenario.seed, plan.start);
                let record = size == plan.series_bytes;
                let mut series = record.then(|| Recorder::new(&net, &scenario.active_hosts()));
                net.engine.start();
                net.engine.sample_every(scenario.sample);
                if let Some(s) = series.as_mut() {
                    s.sample(&net);
                }
                // The background flows run alone until the ranks start; count from there.
                let mut tick = |now: Nanos| {
                    progress.at(now, scenario.duration, part, parts);
                    !progress.stopped()
                };
                if plan.start > Nanos::ZERO {
                    run_until(&mut net, plan.start, series.as_mut(), &mut tick, |_| false)?;
                }
                let (before, sent_before) = (FabricCounts::of(&net), sent_bytes(&net));
                let end = run_until(
                    &mut net,
                    scenario.duration,
                    series.as_mut(),
                    &mut tick,
                    |net| {
                        plan.ranks
                            .iter()
                            .all(|&h| allreduce_rank(net, h).is_some_and(|r| r.done()))
                    },
                )?;
                let row = allreduce_row(&net, &plan.ranks, size, &before);
                progress.size_done(&row);
                rows.push(row);
                frames += net.engine.stats().frames_delivered;
                if let Some(series) = series {
                    let qps = qp_rows(&net, plan.start, &sent_before, end);
                    recorded = Some((net, series.finish(), qps));
                }
            }
            let (net, series, qps) = recorded.expect("series_bytes is one of the sizes");
            let flows = flow_fcts(scenario, &net);
            Ok(Outcome {
                net,
                series,
                qps,
                measured_from: plan.start,
                allreduce: rows,
                frames,
                flows,
            })
        }
    }
}

/// Runs an all-reduce sweep back to back on one network: the warm-up, then every size, one
/// after the other on each rank (a rank starts the next size when it is done with one),
/// the flows running throughout, as nccl-tests runs its sizes in one process. Each size's
/// fabric counts are what changed between the sample steps at which every rank had
/// finished the size before and this one. The whole run is recorded.
fn run_back_to_back(
    scenario: &Scenario,
    plan: &AllReducePlan,
    progress: &mut dyn Progress,
) -> Result<Outcome, RunError> {
    let mut net = network(scenario);
    let runs = plan.runs();
    let skip = runs.len() - plan.sizes.len();
    let mut series = Recorder::new(&net, &scenario.active_hosts());
    net.engine.start();
    net.engine.sample_every(scenario.sample);
    series.sample(&net);
    let finished = |net: &Network| {
        plan.ranks
            .iter()
            .map(|&h| size_sweep_rank(net, h).map_or(0, |s| s.finished()))
            .min()
            .unwrap_or(0)
    };
    // The fabric's counts when every rank had finished k runs, for k = 0, 1, ...
    let mut marks = vec![FabricCounts::of(&net)];
    let mut sent_before = Vec::new();
    let mut rows: Vec<AllReduceRow> = Vec::new();
    let end = loop {
        let step = net.engine.run(scenario.duration)?;
        series.sample(&net);
        progress.at(net.engine.now(), scenario.duration, 0, 1);
        if progress.stopped() {
            return Err(RunError::Stopped);
        }
        if sent_before.is_empty() && net.engine.now() >= plan.start {
            sent_before = sent_bytes(&net);
        }
        let done = finished(&net);
        while marks.len() <= done {
            marks.push(FabricCounts::of(&net));
            let k = marks.len() - 2;
            if k >= skip {
                let row = sweep_row(&net, plan, k, &marks[k], &marks[k + 1]);
                progress.size_done(&row);
                rows.push(row);
            }
        }
        if step != Step::Sampled || done >= runs.len() {
            break net.engine.now();
        }
    };
    // The sizes no rank finished everywhere: their parts as they stand.
    let last = FabricCounts::of(&net);
    for k in (skip + rows.len())..runs.len() {
        let before = marks.get(k).copied().unwrap_or(last);
        rows.push(sweep_row(&net, plan, k, &before, &last));
    }
    if sent_before.is_empty() {
        sent_before = sent_bytes(&net);
    }
    let qps = qp_rows(&net, plan.start, &sent_before, end);
    let frames = net.engine.stats().frames_delivered;
    let flows = flow_fcts(scenario, &net);
    Ok(Outcome {
        net,
        series: series.finish(),
        qps,
        measured_from: plan.start,
        allreduce: rows,
        frames,
        flows,
    })
}

/// The network of `scenario` with every host's work in place, as one run has it: its
/// flows, and its all-reduce sweep back to back (for a sweep of fresh runs, the sizes'
/// runs set up their own all-reduce). Drivers other than the simulator (the live lab) run
/// the hosts of this very network.
pub fn network(scenario: &Scenario) -> Network {
    let mut net = scenario.build(scenario.seed);
    if let Some(plan) = scenario.allreduce.as_ref().filter(|p| p.back_to_back) {
        ring_size_sweep(
            &mut net,
            &plan.ranks,
            &plan.runs(),
            scenario.seed,
            plan.start,
        );
    }
    net
}

/// Run `k` of a back-to-back sweep (the warm-up counted) over every rank, with what the
/// fabric counted between `before` and `after`.
fn sweep_row(
    net: &Network,
    plan: &AllReducePlan,
    k: usize,
    before: &FabricCounts,
    after: &FabricCounts,
) -> AllReduceRow {
    let size = plan.runs()[k];
    let runs = || {
        plan.ranks
            .iter()
            .filter_map(|&h| Some((h, size_sweep_rank(net, h)?.runs().nth(k)?.1)))
    };
    let parts = plan.ranks.iter().map(|&h| {
        size_sweep_rank(net, h)
            .and_then(|s| s.result(k, net.endpoint(h)))
            .unwrap_or_else(|| RankResult::missing(size))
    });
    let steps = StepSpread::of(runs().flat_map(|(_, r)| r.step_times()).collect());
    AllReduceRow {
        steps,
        result: AllReduceResult::over_ranks(size, parts),
        fabric: after.since(before),
    }
}

/// Runs the started `net` to `limit`, or until `done` holds after a step, sampling into
/// `series` at every step and telling `tick` the time, which says whether to go on.
/// Returns the time reached.
fn run_until(
    net: &mut Network,
    limit: Nanos,
    mut series: Option<&mut Recorder>,
    tick: &mut impl FnMut(Nanos) -> bool,
    mut done: impl FnMut(&Network) -> bool,
) -> Result<Nanos, RunError> {
    loop {
        let step = net.engine.run(limit)?;
        if let Some(s) = series.as_deref_mut() {
            s.sample(net);
        }
        if !tick(net.engine.now()) {
            return Err(RunError::Stopped);
        }
        if step != Step::Sampled || done(net) {
            return Ok(net.engine.now());
        }
    }
}

type FlowRun = (Series, Vec<QpRow>, Nanos);

fn run_flows(
    scenario: &Scenario,
    net: &mut Network,
    progress: &mut dyn Progress,
) -> Result<FlowRun, RunError> {
    let mut series = Recorder::new(net, &scenario.active_hosts());
    let from = scenario.measure_from;
    let mut before = Vec::new();
    let all_sized = scenario.flows.iter().all(|f| f.bytes.is_some());
    net.engine.start();
    net.engine.sample_every(scenario.sample);
    series.sample(net);
    if from == Nanos::ZERO {
        before = sent_bytes(net);
    }
    let end = loop {
        let step = net.engine.run(scenario.duration)?;
        series.sample(net);
        progress.at(net.engine.now(), scenario.duration, 0, 1);
        if progress.stopped() {
            return Err(RunError::Stopped);
        }
        if before.is_empty() && net.engine.now() >= from {
            before = sent_bytes(net);
        }
        if step != Step::Sampled || (all_sized && net.engine.apps_done()) {
            break net.engine.now();
        }
    };
    if before.is_empty() {
        before = sent_bytes(net);
    }
    let qps = qp_rows(net, from, &before, end);
    Ok((series.finish(), qps, from))
}

/// Payload bytes sent by each (host, QP), in host and QP order.
/// The QP at the other end of `status`'s, and its host.
fn peer_of(net: &Network, status: &QpStatus, now: Nanos) -> Option<(usize, QpStatus)> {
    let h = (0..net.hosts.len()).find(|&h| net.endpoint(h).ip() == status.peer_ip)?;
    let peer = net.endpoint(h);
    (0..peer.qp_count())
        .map(|q| peer.qp_status(q, now))
        .find(|p| p.qpn == status.peer_qpn)
        .map(|p| (h, p))
}

/// Per QP (hosts in order, their QPs in order): the payload bytes its peer has accepted
/// so far, that is, what it delivered (retransmitted duplicates do not count).
fn sent_bytes(net: &Network) -> Vec<u64> {
    let now = net.engine.now();
    (0..net.hosts.len())
        .flat_map(|h| {
            let ep = net.endpoint(h);
            (0..ep.qp_count()).map(move |q| {
                peer_of(net, &ep.qp_status(q, now), now)
                    .map_or(0, |(_, p)| p.counters.data_bytes_received)
            })
        })
        .collect()
}

/// Every workload flow that arrived in `net`'s run, by id, with its ideal FCT on its path.
pub fn flow_fcts(scenario: &Scenario, net: &Network) -> Vec<FlowFct> {
    let mut out: Vec<FlowFct> = (0..net.hosts.len())
        .filter_map(|h| net.host(h).app.as_ref()?.flows())
        .flat_map(|set| set.records().iter())
        .filter_map(|r| {
            let job = scenario.jobs.get(r.id)?;
            let path = Path {
                hops: scenario.topology.hops(job.from, job.to),
                bits_per_sec: scenario.topology.bits_per_sec,
                delay: scenario.topology.delay,
                mtu: scenario.endpoint.mtu as usize,
                message_bytes: super::scenario::WORKLOAD_MESSAGE_BYTES,
                framing: scenario.fabric.framing(),
                switch_latency: scenario.switch_latency(),
                cut_through_bits: scenario.cut_through_bits(),
            };
            Some(FlowFct {
                id: r.id,
                workload: job.workload,
                from: job.from,
                to: job.to,
                bytes: r.bytes,
                arrival: r.arrival,
                started: r.started,
                finished: r.finished,
                ideal: path.ideal_fct(r.bytes),
            })
        })
        .collect();
    out.sort_by_key(|f| f.id);
    out
}

fn qp_rows(net: &Network, from: Nanos, before: &[u64], end: Nanos) -> Vec<QpRow> {
    let span = end.0.saturating_sub(from.0).max(1) as f64;
    let mut rows = Vec::new();
    let mut k = 0;
    for host in 0..net.hosts.len() {
        let ep = net.endpoint(host);
        let app = net.host(host).app.as_ref();
        let flow: Option<&Flow> = app.and_then(|a| a.flow());
        // A workload's QPs each carry many flows: the FCT table reports those.
        let workload = app.is_some_and(|a| a.flows().is_some());
        for qp in 0..ep.qp_count() {
            let status = ep.qp_status(qp, end);
            let start = before.get(k).copied().unwrap_or(0);
            k += 1;
            if status.counters.data_packets_sent == 0 || workload {
                continue;
            }
            let peer = peer_of(net, &status, end);
            let peer_host = peer.map(|(h, _)| h);
            let ce_marked = peer.map_or(0, |(_, p)| p.counters.ce_received);
            let delivered = peer.map_or(0, |(_, p)| p.counters.data_bytes_received);
            let completion_ns =
                flow.and_then(|f| Some(f.finished()?.0.saturating_sub(f.start().0)));
            rows.push(QpRow {
                host,
                peer_host,
                status,
                ce_marked,
                gbps: delivered.saturating_sub(start) as f64 * 8.0 / span,
                completion_ns,
            });
        }
    }
    rows
}

/// What the endpoints and switches of a network counted, summed.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct FabricCounts {
    /// CNPs the endpoints sent.
    pub cnps_sent: u64,
    /// CNPs the endpoints received.
    pub cnps_received: u64,
    /// PFC and PAUSE frames the endpoints received that paused them.
    pub pauses_received: u64,
    /// Data packets sent again.
    pub retransmitted: u64,
    /// PFC frames the switches sent.
    pub pfc_sent: u64,
    /// Frames the switches marked CE.
    pub ecn_marked: u64,
    /// Frames the switches dropped.
    pub dropped: u64,
}

impl FabricCounts {
    /// What was counted from `before` to these counts.
    fn since(&self, before: &FabricCounts) -> FabricCounts {
        FabricCounts {
            cnps_sent: self.cnps_sent - before.cnps_sent,
            cnps_received: self.cnps_received - before.cnps_received,
            pauses_received: self.pauses_received - before.pauses_received,
            retransmitted: self.retransmitted - before.retransmitted,
            pfc_sent: self.pfc_sent - before.pfc_sent,
            ecn_marked: self.ecn_marked - before.ecn_marked,
            dropped: self.dropped - before.dropped,
        }
    }

    fn of(net: &Network) -> FabricCounts {
        let mut c = FabricCounts::default();
        for h in 0..net.hosts.len() {
            let e = net.endpoint(h).counters();
            c.cnps_sent += e.cnps_sent;
            c.cnps_received += e.cnps_received;
            c.pauses_received += e.pauses_received + e.link_pauses_received;
            c.retransmitted += e.retransmitted_packets;
        }
        for s in 0..net.switches.len() {
            let sw = net.switch(s);
            for p in 0..sw.port_count() {
                for k in &sw.counters(p).classes {
                    c.pfc_sent += k.tx_pause_frames;
                    c.ecn_marked += k.ecn_marked;
                    c.dropped += k.dropped();
                }
            }
        }
        c
    }
}

fn allreduce_row(net: &Network, ranks: &[usize], size: u64, before: &FabricCounts) -> AllReduceRow {
    let parts = ranks.iter().map(|&h| {
        allreduce_rank(net, h)
            .map_or_else(|| RankResult::missing(size), |r| r.result(net.endpoint(h)))
    });
    let now = FabricCounts::of(net);
    let steps = StepSpread::of(
        ranks
            .iter()
            .filter_map(|&h| allreduce_rank(net, h))
            .flat_map(|r| r.step_times())
            .collect(),
    );
    AllReduceRow {
        steps,
        result: AllReduceResult::over_ranks(size, parts),
        fabric: now.since(before),
    }
}

//! The lab's simulated twin: the lab's scenario (one switch, its configuration, the
//! links' rate, the endpoints' configuration and the work, warm-up and start times
//! included) run in virtual time by the simulator: the same value, not a second
//! description of it. Where the live numbers differ from the twin's, the live driver is the
//! suspect: a late thread turns into a fake queue, a CE mark or a pause.

use super::run::{LabOptions, LabOutcome};
use crate::endpoint::app::allreduce::AllReduceResult;
use crate::sim::run::{Outcome, RunError};
use crate::switch::Switch;
use serde::Serialize;
use std::sync::atomic::AtomicBool;

/// What the fabric counted over a whole run, live or simulated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FabricTotals {
    /// PFC frames the switch sent (XON included).
    pub pfc_sent: u64,
    /// Frames the switch marked CE.
    pub ce_marked: u64,
    /// CNPs the endpoints sent.
    pub cnps_sent: u64,
    /// Frames the switch dropped, all causes.
    pub dropped: u64,
    /// The deepest any egress queue got, bytes.
    pub queue_watermark_bytes: u64,
}

fn switch_totals(sw: &Switch) -> FabricTotals {
    let mut t = FabricTotals::default();
    for p in 0..sw.port_count() {
        for c in &sw.counters(p).classes {
            t.pfc_sent += c.tx_pause_frames;
            t.ce_marked += c.ecn_marked;
            t.dropped += c.dropped();
            t.queue_watermark_bytes = t.queue_watermark_bytes.max(c.queue_watermark_bytes);
        }
    }
    t
}

/// One all-reduce size, live and in the twin.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TwinRow {
    /// Bytes per rank.
    pub size: u64,
    /// The live result.
    pub live: AllReduceResult,
    /// The twin's.
    pub twin: AllReduceResult,
}

impl TwinRow {
    /// Live busbw over the twin's (1.0: the live fabric matched its twin); `None` when
    /// either did not finish.
    pub fn busbw_ratio(&self) -> Option<f64> {
        (self.live.time_ns.is_some() && self.twin.time_ns.is_some() && self.twin.busbw() > 0.0)
            .then(|| self.live.busbw() / self.twin.busbw())
    }
}

/// One sender's share of what r0 received, live and in the twin.
#[derive(Debug, Clone, Serialize)]
pub struct ShareRow {
    /// The sending host.
    pub from: String,
    /// Its share of r0's received payload in the live run, 0 to 1.
    pub live: f64,
    /// In the twin.
    pub twin: f64,
}

/// Each sender's share of the payload r0 received, live (over `live`'s measured span)
/// and in the twin's recorded run; empty unless r0 has at least two senders.
fn shares(opts: &LabOptions, live: &[super::run::Inflow], twin: &Outcome) -> Vec<ShareRow> {
    let names = super::run::host_names(opts);
    // The twin's goodput into host 0, per sending host.
    let mut twin_gbps = vec![0.0; names.len()];
    for q in twin.qps.iter().filter(|q| q.peer_host == Some(0)) {
        if let Some(g) = twin_gbps.get_mut(q.host) {
            *g += q.gbps;
        }
    }
    let twin_sum: f64 = twin_gbps.iter().sum();
    let live_sum = live.iter().map(|i| i.bytes).sum::<u64>() as f64;
    let senders = twin_gbps
        .iter()
        .filter(|&&g| g > 0.0)
        .count()
        .max(live.len());
    if senders < 2 || twin_sum <= 0.0 || live_sum <= 0.0 {
        return Vec::new();
    }
    names
        .iter()
        .enumerate()
        .filter_map(|(h, name)| {
            let l = live.iter().find(|i| &i.from == name).map_or(0, |i| i.bytes) as f64;
            let t = twin_gbps[h];
            (l > 0.0 || t > 0.0).then(|| ShareRow {
                from: name.clone(),
                live: l / live_sum,
                twin: t / twin_sum,
            })
        })
        .collect()
}

/// The lab and its twin side by side.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Per all-reduce size.
    pub allreduce: Vec<TwinRow>,
    /// The live fabric's totals.
    pub live: FabricTotals,
    /// The twin's totals (PFC, CE, CNPs and drops over every size; the watermark of the
    /// largest size's run).
    pub twin: FabricTotals,
    /// Each sender's share of what r0 received (while the largest size ran, or over the
    /// incast), live and twin; empty when r0 has one sender.
    pub into_r0: Vec<ShareRow>,
    /// Frames the simulator moved.
    pub twin_frames: u64,
}

/// Asks the simulator to stop when `stop` (Ctrl-C) is raised.
struct UntilStopped<'a>(&'a AtomicBool);

impl crate::sim::run::Progress for UntilStopped<'_> {
    fn stopped(&self) -> bool {
        crate::runtime::stopped(self.0)
    }
}

/// Runs the twin of `opts` (its scenario) in virtual time; it ends within one sample step
/// of `stop` being raised, with [`RunError::Stopped`].
pub fn run(opts: &LabOptions, stop: &AtomicBool) -> Result<Outcome, RunError> {
    crate::sim::run::run_with(&opts.scenario, &mut UntilStopped(stop))
}

/// Runs the twin of `opts` and compares it with the live `out`; `stop` ends it early, as
/// in [`run`].
pub fn compare(
    opts: &LabOptions,
    out: &LabOutcome,
    stop: &AtomicBool,
) -> Result<Comparison, RunError> {
    let twin = run(opts, stop)?;
    let allreduce = out
        .allreduce
        .iter()
        .zip(&twin.allreduce)
        .map(|(live, sim)| TwinRow {
            size: live.size,
            live: *live,
            twin: sim.result,
        })
        .collect();
    let mut live = switch_totals(&out.switch);
    live.cnps_sent = out.hosts.iter().map(|h| h.counters.cnps_sent).sum();
    // One run, as the lab's (live_check takes back-to-back sweeps only): its counts are
    // the whole run's.
    let mut sim = switch_totals(twin.net.switch(0));
    sim.cnps_sent = (0..twin.net.hosts.len())
        .map(|h| twin.net.endpoint(h).counters().cnps_sent)
        .sum();
    Ok(Comparison {
        allreduce,
        live,
        twin: sim,
        into_r0: shares(opts, &out.into_r0, &twin),
        twin_frames: twin.frames,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SwitchConfig;
    use crate::config::endpoint::EndpointConfig;
    use crate::lab::run::{LabWork, Workload, scenario};
    use crate::time::Nanos;
    use std::time::Duration;

    fn opts(workload: Workload) -> LabOptions {
        let endpoint = EndpointConfig {
            link_gbps: 1.0,
            ..Default::default()
        };
        let switch = SwitchConfig::preset("nexus-ai").unwrap();
        let limit = Duration::from_secs(5);
        LabOptions {
            scenario: scenario(
                &LabWork {
                    workload,
                    ranks: 4,
                    sizes: vec![8192, 65536],
                    incast_bytes: 1 << 20,
                },
                &switch,
                &endpoint,
                3,
                limit,
            ),
            backend: crate::io::Backend::Pnet,
            cores: crate::runtime::CoreList::default(),
            limit,
            sample_every: Duration::from_millis(1),
            realtime: None,
            lookahead: None,
        }
    }

    #[test]
    fn the_labs_scenario_has_its_hosts_links_and_work() {
        let s = opts(Workload::Ring).scenario;
        assert_eq!(s.topology.hosts(), 4);
        assert_eq!(s.topology.bits_per_sec, 1_000_000_000);
        let a = s.allreduce.as_ref().unwrap();
        assert_eq!((a.ranks.len(), a.sizes.as_slice()), (4, &[8192, 65536][..]));
        // As nccl-tests runs it: one untimed warm-up, then the sizes back to back.
        assert_eq!((a.warm_up, a.back_to_back), (Some(8192), true));
        assert!(s.flows.is_empty());
        // ring-incast: two more hosts, each an endless flow into rank 0.
        let s = opts(Workload::RingIncast).scenario;
        assert_eq!(s.topology.hosts(), 6);
        let ends: Vec<_> = s.flows.iter().map(|f| (f.from, f.to, f.bytes)).collect();
        assert_eq!(ends, [(4, 0, None), (5, 0, None)]);
        // incast: every other host sends its bytes to host 0; no all-reduce.
        let s = opts(Workload::Incast).scenario;
        assert!(s.allreduce.is_none());
        assert_eq!(s.flows.len(), 3);
        assert!(
            s.flows
                .iter()
                .all(|f| f.to == 0 && f.bytes == Some(1 << 20))
        );
    }

    /// Ctrl-C while the twin ran was not heard: it ran to the end and the lab went on to
    /// write its outputs and run its next part. The simulator asks after every sample step.
    #[test]
    fn a_raised_stop_ends_the_twin_within_a_sample_step() {
        struct StopAfter(usize, usize);
        impl crate::sim::run::Progress for StopAfter {
            fn at(&mut self, _: Nanos, _: Nanos, _: usize, _: usize) {
                self.0 += 1;
            }
            fn stopped(&self) -> bool {
                self.0 >= self.1
            }
        }
        // The sweep and the flows each stop at the third step they are asked at.
        for workload in [Workload::Ring, Workload::Incast] {
            let mut progress = StopAfter(0, 3);
            let out = crate::sim::run::run_with(&opts(workload).scenario, &mut progress);
            assert_eq!(out.err(), Some(RunError::Stopped), "{workload}");
            assert_eq!(progress.0, 3, "{workload}: steps after the stop");
        }
        // A stop raised before the start: the first step is the last.
        let stop = AtomicBool::new(true);
        let out = run(&opts(Workload::RingIncast), &stop);
        assert_eq!(out.err(), Some(RunError::Stopped));
    }

    #[test]
    fn the_twin_runs_and_finishes_every_size() {
        let out = crate::sim::run::run(&opts(Workload::Ring).scenario).unwrap();
        assert_eq!(out.allreduce.len(), 2);
        for row in &out.allreduce {
            assert!(row.result.time_ns.is_some());
            assert_eq!(row.result.wrong, Some(0));
        }
    }
}

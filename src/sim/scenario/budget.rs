//! What a scenario may cost before it runs: the frames it may move and the memory it may
//! hold, each an upper estimate checked against its limit (`max_frames`,
//! `memory_budget_mib`), so that a scenario too large is refused with the reason rather
//! than run for hours or out of memory.

use super::{AllReducePlan, FlowPlan, LARGEST_FRAME_OVERHEAD, Scenario, Topology, err};
use crate::config::ConfigError;
use crate::config::endpoint::EndpointConfig;
use crate::endpoint::app::size_sweep;
use crate::time::Nanos;

/// The most frames a scenario may move unless `max_frames` says otherwise: about 15 to
/// 60 minutes of one core.
pub const DEFAULT_MAX_FRAMES: u64 = 2_000_000_000;

/// The memory a scenario may need unless `memory_budget_mib` says otherwise, MiB.
pub const DEFAULT_MEMORY_BUDGET_MIB: u64 = 4096;

/// What the simulator holds per host and per switch port besides traffic: the endpoint
/// and its QPs, the port's queues, counters and eight sojourn histograms (measured: a
/// 512-host star takes about 150 MB).
const NODE_BYTES: u64 = 160 << 10;

/// What a workload's flow costs besides its traffic: its job, record and report row.
const JOB_BYTES: u64 = 512;

/// A wall-clock estimate in the unit people think of it in: "40 s", "12 minutes", "7.9 hours".
fn wall_time(secs: f64) -> String {
    match secs {
        s if s < 90.0 => format!("{:.0} s", s.max(1.0)),
        s if s < 5400.0 => format!("{:.0} minutes", s / 60.0),
        s => format!("{:.1} hours", s / 3600.0),
    }
}

/// Refuses `scenario` if it may move more frames than `max_frames` or hold more memory
/// than `memory_budget_mib` (each `None`: the default); `explicit` is its `duration_ms`,
/// if given.
pub(super) fn check(
    scenario: &Scenario,
    explicit: Option<Nanos>,
    max_frames: Option<u64>,
    memory_budget_mib: Option<u64>,
) -> Result<(), ConfigError> {
    let active = scenario.active_hosts();
    let allreduce = scenario.allreduce.as_ref();
    let max_frames = max_frames.unwrap_or(DEFAULT_MAX_FRAMES);
    if max_frames == 0 {
        return Err(err(
            "max_frames",
            "give at least 1 (a run that moves no frame shows nothing)",
        ));
    }
    let frames = frames_bound(
        &scenario.topology,
        &scenario.endpoint,
        explicit,
        allreduce,
        &scenario.flows,
        &active,
    );
    if frames > max_frames as f64 {
        let why = match (explicit, allreduce) {
            (Some(d), None) => {
                format!("every link busy for {} with full-size frames", d.human())
            }
            (Some(d), Some(_)) => format!(
                "every link busy for {} with full-size frames, for each all-reduce size",
                d.human()
            ),
            (None, _) => "the all-reduce sizes' and the flows' bytes, over the longest path".into(),
        };
        return Err(err(
            "max_frames",
            format!(
                "this scenario may move up to {frames:.2e} frames ({why}), over max_frames = \
                 {max_frames}: at 0.5 to 2 M frames a second that is up to {}; shorten the \
                 run, or raise max_frames",
                wall_time(frames / 0.5e6)
            ),
        ));
    }
    let budget_mib = memory_budget_mib.unwrap_or(DEFAULT_MEMORY_BUDGET_MIB);
    let need = memory_estimate(
        &scenario.topology,
        &scenario.flows,
        allreduce,
        scenario.duration,
        scenario.sample,
        &active,
    )
    .saturating_add((scenario.jobs.len() as u64).saturating_mul(JOB_BYTES));
    if need > budget_mib.saturating_mul(1 << 20) {
        return Err(err(
            "memory_budget_mib",
            format!(
                "this scenario needs about {} MiB (hosts, switch ports, all-reduce buffers, \
                 flows and time series), over the budget of {budget_mib} MiB: make \
                 it smaller, or raise memory_budget_mib if the machine has the memory",
                need >> 20
            ),
        ));
    }
    Ok(())
}

/// The most frames a run can move. With `duration_ms` given: every link that can carry
/// anything (a used host's, or between switches), both ways, busy for the whole duration with full-size data frames, and an ACK per data frame (for an
/// all-reduce sweep, for each size's run). Without it (an all-reduce whose limit is a
/// timeout, sized flows): their bytes, in full-size packets, over the longest path, with
/// an ACK each. An upper bound: a run that finishes early or leaves links idle moves
/// fewer.
fn frames_bound(
    topology: &Topology,
    endpoint: &EndpointConfig,
    duration: Option<Nanos>,
    allreduce: Option<&AllReducePlan>,
    flows: &[FlowPlan],
    active: &[bool],
) -> f64 {
    // The links that can carry anything: the used hosts' and those between switches.
    let used = active.iter().filter(|&&a| a).count();
    let longest = topology.longest_hops();
    let runs = allreduce.map_or(1, |a| if a.back_to_back { 1 } else { a.sizes.len() }) as f64;
    if let Some(d) = duration {
        let frame_bits =
            crate::link::wire_bits(endpoint.mtu as usize + LARGEST_FRAME_OVERHEAD) as f64;
        let secs = d.0 as f64 / 1e9;
        let link_bits = used as f64 * topology.bits_per_sec as f64
            + topology.fabric_links() as f64 * topology.fabric_bits_per_sec as f64;
        return 2.0 * link_bits * secs / frame_bits * 2.0 * runs;
    }
    // Each rank sends 2 (N - 1) / N of every size: at most twice it.
    let ranks_bytes: f64 = allreduce.map_or(0.0, |a| {
        a.ranks.len() as f64 * a.runs().iter().map(|&s| 2.0 * s as f64).sum::<f64>()
    });
    let flow_bytes: f64 = flows.iter().filter_map(|f| f.bytes).map(|b| b as f64).sum();
    let packets = (ranks_bytes + flow_bytes * runs) / f64::from(endpoint.mtu.max(1));
    packets * longest as f64 * 2.0
}

/// About how many bytes a run of the scenario holds at its peak: every host and switch
/// port, the all-reduce buffers of the largest size (data and staging, per rank), the
/// flows, and the time series (at most its row cap).
fn memory_estimate(
    topology: &Topology,
    flows: &[FlowPlan],
    allreduce: Option<&AllReducePlan>,
    duration: Nanos,
    sample: Nanos,
    active: &[bool],
) -> u64 {
    let hosts = topology.hosts() as u64;
    // Ports between switches (each link has two).
    let inner = 2 * topology.fabric_links() as u64;
    let ports = hosts + inner;
    // The time series records the used hosts, their ports and the ports between switches.
    let used = active.iter().filter(|&&a| a).count() as u64;
    let recorded_ports = used + inner;
    let nodes = (hosts + ports).saturating_mul(NODE_BYTES);
    let ranks_bytes = allreduce.map_or(0, |a| {
        // Data, staging and two send buffers of a chunk (see size_sweep::rank_buffer_bytes):
        // one size at a time, or every size at once back to back.
        let per_rank = if a.back_to_back {
            size_sweep::rank_buffer_bytes(&a.runs())
        } else {
            a.sizes.last().copied().unwrap_or(0).saturating_mul(3)
        };
        (a.ranks.len() as u64).saturating_mul(per_rank)
    });
    // A flow's data is one repeated byte, carried as its length (see wire::elide), and
    // its receiver keeps no bytes: a flow holds only its own state.
    let flow_bytes = JOB_BYTES.saturating_mul(flows.len() as u64);
    let rows = (duration.0 / sample.0.max(1)).min(crate::sim::recorder::MAX_ROWS as u64);
    let columns = recorded_ports * 9 + used * 3 + 2 * flows.len() as u64;
    let series = rows.saturating_mul(columns).saturating_mul(24);
    nodes
        .saturating_add(ranks_bytes)
        .saturating_add(flow_bytes)
        .saturating_add(series)
}

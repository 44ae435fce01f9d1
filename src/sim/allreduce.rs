//! Ring all-reduce on a built network: its ranks set up (one all-reduce, or a size sweep)
//! and found again, and running until the applications are done. (A scenario's
//! `[[workload]]` entries are in [`super::workloads`].)

use super::engine::{Stalled, Step};
use super::topology::Network;
use crate::endpoint::app::allreduce::RingAllReduce;
use crate::endpoint::app::size_sweep::SizeSweep;
use crate::time::Nanos;

/// Sets up ring all-reduce of `count` f32 per rank on the hosts `ranks`, in that ring
/// order, to start at `start`: one QP from each rank to the next.
pub fn ring_allreduce(net: &mut Network, ranks: &[usize], count: usize, seed: u64, start: Nanos) {
    let n = ranks.len();
    let next_qps: Vec<usize> = (0..n)
        .map(|r| net.connect_qp(ranks[r], ranks[(r + 1) % n]).0)
        .collect();
    for (r, qp) in next_qps.into_iter().enumerate() {
        let app = RingAllReduce::new(net.endpoint_mut(ranks[r]), r, n, count, seed, qp)
            .starting_at(start);
        net.host_mut(ranks[r]).app = Some(app.into());
    }
}

/// Sets up an nccl-tests-like sweep on the hosts `ranks`, in that ring order: every size
/// of `sizes` one after the other on the same QPs (one from each rank to the next), from
/// `start` on.
pub fn ring_size_sweep(net: &mut Network, ranks: &[usize], sizes: &[u64], seed: u64, start: Nanos) {
    let n = ranks.len();
    let next_qps: Vec<usize> = (0..n)
        .map(|r| net.connect_qp(ranks[r], ranks[(r + 1) % n]).0)
        .collect();
    for (r, qp) in next_qps.into_iter().enumerate() {
        let sweep =
            SizeSweep::new(net.endpoint_mut(ranks[r]), r, n, sizes, seed, qp).starting_at(start);
        net.host_mut(ranks[r]).app = Some(sweep.into());
    }
}

/// The sweep on host `host`, if that host runs one.
pub fn size_sweep_rank(net: &Network, host: usize) -> Option<&SizeSweep> {
    net.host(host).app.as_ref()?.size_sweep()
}

/// The all-reduce rank on host `host`, if that host runs one.
pub fn allreduce_rank(net: &Network, host: usize) -> Option<&RingAllReduce> {
    net.host(host).app.as_ref()?.allreduce()
}

/// Starts the applications and runs until they are all done, nothing is left to do, or
/// `limit`. Returns the time reached.
pub fn run_to_done(net: &mut Network, limit: Nanos) -> Result<Nanos, Stalled> {
    net.engine.start();
    while !net.engine.apps_done() {
        match net.engine.run(limit)? {
            Step::Sampled => {}
            Step::Idle | Step::Until => break,
        }
    }
    Ok(net.engine.now())
}

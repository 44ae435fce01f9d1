//! Workloads on a built network: ring all-reduce across all hosts, and running until the
//! applications are done.

use super::engine::{Stalled, Step};
use super::topology::Network;
use crate::endpoint::allreduce::RingAllReduce;
use crate::time::Nanos;

/// Sets up ring all-reduce of `count` f32 per rank over all hosts, in host order: one QP
/// from each rank to the next.
pub fn ring_allreduce(net: &mut Network, count: usize, seed: u64) {
    let ranks = net.hosts.len();
    let next_qps: Vec<usize> = (0..ranks)
        .map(|r| net.connect_qp(r, (r + 1) % ranks).0)
        .collect();
    for (r, qp) in next_qps.into_iter().enumerate() {
        let app = RingAllReduce::new(net.endpoint_mut(r), r, ranks, count, seed, qp);
        net.host_mut(r).app = Some(Box::new(app));
    }
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

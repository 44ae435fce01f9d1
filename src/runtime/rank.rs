//! One rank of a peers file live on its interface, with the work it was given: the
//! endpoint, its QPs to the other ranks, its application, and the run that drives them
//! (what `rocelab endpoint` runs once its flags are checked).

use super::hosts::{self, EndpointOptions, EndpointOutcome};
use super::peers::{PeerSpec, flow_receive_qps, flow_send_qp, ring_qps};
use super::{RuntimeError, stopped};
use crate::endpoint::Endpoint;
use crate::endpoint::app::App;
use crate::endpoint::app::allreduce::AllReduceResult;
use crate::endpoint::app::flow::Flow;
use crate::endpoint::app::size_sweep::{Gather, SizeSweep};
use crate::time::Nanos;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// What a rank does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// A rank of a ring all-reduce sweep over every peer.
    AllReduce {
        /// The sizes, bytes, in order.
        sizes: Vec<u64>,
        /// Seed of the data.
        seed: u64,
    },
    /// A bulk flow to another rank.
    Send {
        /// The receiving rank.
        to: usize,
        /// Bytes to send; `None` sends until the run ends.
        bytes: Option<u64>,
        /// Message size, bytes.
        message_bytes: usize,
    },
    /// Answering the peers' flows.
    Receive {
        /// Message size the senders use, bytes.
        message_bytes: usize,
    },
}

/// A live rank's options, checked.
#[derive(Debug, Clone)]
pub struct RankOptions {
    /// Every rank of the peers file.
    pub peers: Vec<PeerSpec>,
    /// This rank.
    pub rank: usize,
    /// What it does.
    pub work: Work,
    /// When the work starts, on the run's clock (`--start-at`).
    pub start: Nanos,
    /// The endpoint, its interface and how its thread runs.
    pub endpoint: EndpointOptions,
}

/// What a rank's run reports while it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// All-reduce sizes that finished since the last report, as this rank saw them.
    Finished(Vec<AllReduceResult>),
    /// Data packets received as duplicates of ones accepted before, so far: said each
    /// time another [`DUPLICATES_WORTH_A_WARNING`] came.
    Duplicates(u64),
}

/// Duplicates that a receiver warns about: a whole window's worth, more than a lost ACK's
/// retransmissions give, as a sender run again from PSN 0 gives.
pub const DUPLICATES_WORTH_A_WARNING: u64 = 64;

/// Builds rank `opts.rank`'s endpoint and application and runs them on its interface
/// until the work is done (and the linger is over), `stop` is raised, the limit passes or
/// the port fails; `progress` hears of the work as it goes. Building a large sweep's
/// buffers takes seconds: a raised `stop` cuts it short, and the run then ends at once.
pub fn run(
    opts: &RankOptions,
    stop: &Arc<AtomicBool>,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<EndpointOutcome, RuntimeError> {
    let me = &opts.peers[opts.rank];
    let mut ep = Endpoint::new(&opts.endpoint.cfg, me.mac, me.ip);
    let app = app(opts, &mut ep, stop);
    let options = &opts.endpoint;
    match opts.work {
        Work::AllReduce { .. } => {
            let mut gather = Gather::new(1, 0);
            let mut call = |_: Duration, l: &mut hosts::Live<'_>| {
                if let Some(sweep) = l.app.size_sweep() {
                    let finished = gather.update(0, sweep, l.endpoint);
                    if !finished.is_empty() {
                        progress(Progress::Finished(finished));
                    }
                }
            };
            let sampler = hosts::EndpointSampler {
                every: Duration::from_millis(20),
                call: &mut call,
            };
            hosts::run(options, ep, app, stop, Some(sampler))
        }
        // A sender run again against this receiver starts at PSN 0 again, which its QP
        // has passed: the responder discards all of it as duplicates and ACKs them (as an
        // RNIC does; real ones agree on starting PSNs when they connect, a static peers
        // file cannot), so the sender reports success. It is said as it happens.
        Work::Receive { .. } => {
            let mut warned = 0;
            let mut call = |_: Duration, l: &mut hosts::Live<'_>| {
                let c = l.endpoint.counters();
                if c.duplicates_received >= warned + DUPLICATES_WORTH_A_WARNING {
                    warned = c.duplicates_received;
                    progress(Progress::Duplicates(c.duplicates_received));
                }
            };
            let sampler = hosts::EndpointSampler {
                every: Duration::from_millis(100),
                call: &mut call,
            };
            hosts::run(options, ep, app, stop, Some(sampler))
        }
        Work::Send { .. } => hosts::run(options, ep, app, stop, None),
    }
}

/// The rank's application, its QPs set up on `ep`.
fn app(opts: &RankOptions, ep: &mut Endpoint, stop: &Arc<AtomicBool>) -> App {
    let (peers, rank) = (&opts.peers, opts.rank);
    match &opts.work {
        Work::AllReduce { sizes, seed } => {
            let (to_next, _) = ring_qps(ep, peers, rank);
            let mut give_up = || stopped(stop);
            match SizeSweep::new_unless(ep, rank, peers.len(), sizes, *seed, to_next, &mut give_up)
            {
                Some(sweep) => sweep.starting_at(opts.start).into(),
                // The run sees the stop and ends at once, an empty sweep unfinished.
                None => SizeSweep::new(ep, rank, peers.len(), &[], *seed, to_next).into(),
            }
        }
        Work::Send {
            to,
            bytes,
            message_bytes,
        } => {
            let qp = flow_send_qp(ep, peers, rank, *to);
            Flow::new(qp, *bytes, *message_bytes, opts.start).into()
        }
        Work::Receive { message_bytes } => {
            flow_receive_qps(ep, peers, rank);
            Flow::prepare_receiver(ep, *message_bytes);
            App::Receive
        }
    }
}

//! The applications that drive an endpoint, out of the NIC's own module: the
//! [`Application`] trait they implement, and [`App`], the typed enum of them that the
//! drivers hold (so a driver reads a size sweep's or a flow's results without
//! downcasting). Each application is a file here: [`allreduce`] (one ring all-reduce on
//! real `f32` data, and its results), [`size_sweep`] (an nccl-tests-like sweep of
//! all-reduce sizes), [`flow`] (a bulk flow to one peer) and [`flows`] (a workload's
//! flows to many peers).

pub mod allreduce;
pub mod flow;
pub mod flows;
pub mod size_sweep;

use super::{Completion, Endpoint};
use crate::time::Nanos;
use allreduce::RingAllReduce;
use flow::Flow;
use flows::FlowSet;
use size_sweep::SizeSweep;

/// Work that drives an endpoint: posts WRITEs and reacts to completions.
pub trait Application {
    /// Called once, when the run starts.
    fn start(&mut self, now: Nanos, ep: &mut Endpoint);
    /// Called for every completion of the endpoint.
    fn on_completion(&mut self, now: Nanos, ep: &mut Endpoint, completion: Completion);
    /// True when the work is over.
    fn done(&self) -> bool;
    /// When the application wants [`on_timeout`](Self::on_timeout), if ever.
    fn deadline(&self) -> Option<Nanos> {
        None
    }
    /// Called when `now` has reached [`deadline`](Self::deadline).
    fn on_timeout(&mut self, _now: Nanos, _ep: &mut Endpoint) {}
}

/// The work an endpoint runs.
#[derive(Debug)]
pub enum App {
    /// One ring all-reduce.
    AllReduce(RingAllReduce),
    /// A sweep of all-reduce sizes.
    SizeSweep(SizeSweep),
    /// A bulk flow to one peer.
    Flow(Flow),
    /// Many flows to many peers, arriving over time (a workload's sending side).
    Flows(FlowSet),
    /// Nothing to post: the endpoint only answers its peers (a flow's receiver).
    Receive,
    /// Any other application (tests, experiments).
    Custom(Box<dyn Application + Send>),
}

impl std::fmt::Debug for dyn Application + Send {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a custom application")
    }
}

impl From<RingAllReduce> for App {
    fn from(a: RingAllReduce) -> App {
        App::AllReduce(a)
    }
}

impl From<SizeSweep> for App {
    fn from(s: SizeSweep) -> App {
        App::SizeSweep(s)
    }
}

impl From<Flow> for App {
    fn from(f: Flow) -> App {
        App::Flow(f)
    }
}

impl From<FlowSet> for App {
    fn from(f: FlowSet) -> App {
        App::Flows(f)
    }
}

impl App {
    /// The flow set, if this is one.
    pub fn flows(&self) -> Option<&FlowSet> {
        match self {
            App::Flows(f) => Some(f),
            _ => None,
        }
    }

    /// The sweep, if this is one.
    pub fn size_sweep(&self) -> Option<&SizeSweep> {
        match self {
            App::SizeSweep(s) => Some(s),
            _ => None,
        }
    }

    /// The flow, if this is one.
    pub fn flow(&self) -> Option<&Flow> {
        match self {
            App::Flow(f) => Some(f),
            _ => None,
        }
    }

    /// The all-reduce, if this is one.
    pub fn allreduce(&self) -> Option<&RingAllReduce> {
        match self {
            App::AllReduce(a) => Some(a),
            _ => None,
        }
    }

    /// When work it wants done as soon as possible became due (an all-reduce's reduction
    /// and copy, done in slices), if there is any: part of its deadline, but not a time it
    /// must run at exactly.
    pub fn work_due(&self) -> Option<Nanos> {
        match self {
            App::AllReduce(a) => a.work_due(),
            App::SizeSweep(s) => s.work_due(),
            _ => None,
        }
    }

    /// The QP it sends its data on, if it is one application on one QP (an all-reduce, a
    /// sweep, a flow).
    pub fn sending_qp(&self) -> Option<usize> {
        match self {
            App::AllReduce(a) => Some(a.qp_next()),
            App::SizeSweep(s) => s.runs().next().map(|(_, r)| r.qp_next()),
            App::Flow(f) => Some(f.qp()),
            App::Flows(_) | App::Receive | App::Custom(_) => None,
        }
    }

    /// Moves its start `by` later (before the run starts): a driver whose clock reads 0
    /// before the work may begin (the lab's, while the hosts' sockets open) keeps the
    /// work's own start times, counted from when it may.
    pub fn delay_start(&mut self, by: Nanos) {
        match self {
            App::AllReduce(a) => a.set_start(a.start_at() + by),
            App::SizeSweep(s) => s.set_start(s.start_at() + by),
            App::Flow(f) => f.set_start(Flow::start(f) + by),
            App::Flows(_) | App::Receive | App::Custom(_) => {}
        }
    }

    /// Starts the work at `at` instead (before the run starts): a driver that builds the
    /// work first and learns the start time later (the lab starts every host together).
    pub fn set_start(&mut self, at: Nanos) {
        match self {
            App::AllReduce(a) => a.set_start(at),
            App::SizeSweep(s) => s.set_start(at),
            App::Flow(f) => f.set_start(at),
            App::Flows(_) | App::Receive | App::Custom(_) => {}
        }
    }

    fn inner(&mut self) -> Option<&mut dyn Application> {
        match self {
            App::AllReduce(a) => Some(a),
            App::SizeSweep(s) => Some(s),
            App::Flow(f) => Some(f),
            App::Flows(f) => Some(f),
            App::Receive => None,
            App::Custom(c) => Some(c.as_mut()),
        }
    }

    fn inner_ref(&self) -> Option<&dyn Application> {
        match self {
            App::AllReduce(a) => Some(a),
            App::SizeSweep(s) => Some(s),
            App::Flow(f) => Some(f),
            App::Flows(f) => Some(f),
            App::Receive => None,
            App::Custom(c) => Some(c.as_ref()),
        }
    }
}

impl Application for App {
    fn start(&mut self, now: Nanos, ep: &mut Endpoint) {
        if let Some(a) = self.inner() {
            a.start(now, ep);
        }
    }

    fn on_completion(&mut self, now: Nanos, ep: &mut Endpoint, completion: Completion) {
        if let Some(a) = self.inner() {
            a.on_completion(now, ep, completion);
        }
    }

    /// A receiver is never done: it answers until the run ends.
    fn done(&self) -> bool {
        self.inner_ref().is_some_and(|a| a.done())
    }

    fn deadline(&self) -> Option<Nanos> {
        self.inner_ref().and_then(|a| a.deadline())
    }

    fn on_timeout(&mut self, now: Nanos, ep: &mut Endpoint) {
        if let Some(a) = self.inner() {
            a.on_timeout(now, ep);
        }
    }
}

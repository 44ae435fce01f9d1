//! Many flows from one host, each to some peer, arriving over time: the sending side of
//! datacenter workloads (Poisson arrivals, all-to-all, incast bursts). A flow runs on an
//! RC QP to its peer, as a [`Flow`] of WRITE messages; the host has a limited pool of QPs
//! per peer (the driver connects them), so a flow that arrives while all of its peer's QPs
//! are busy waits for one, and its completion time counts the wait, as an application's
//! would.

use super::Application;
use super::flow::Flow;
use crate::endpoint::{Completion, Endpoint};
use crate::time::Nanos;
use std::collections::VecDeque;

/// One flow to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowJob {
    /// Its number among the driver's flows (reported back in [`FlowRecord::id`]).
    pub id: usize,
    /// The peer: an index into the QP pools given to [`FlowSet::new`].
    pub peer: usize,
    /// When it arrives.
    pub arrival: Nanos,
    /// Payload bytes.
    pub bytes: u64,
}

/// What became of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowRecord {
    /// The job's id.
    pub id: usize,
    /// When it arrived.
    pub arrival: Nanos,
    /// When it got a QP and its first WRITE was posted, if it did.
    pub started: Option<Nanos>,
    /// When its last byte was acknowledged, if it was.
    pub finished: Option<Nanos>,
    /// Payload bytes.
    pub bytes: u64,
}

#[derive(Debug)]
struct Running {
    flow: Flow,
    record: usize,
    peer: usize,
}

#[derive(Debug, Default)]
struct Peer {
    /// Its idle QPs.
    free: Vec<usize>,
    /// Flows waiting for a QP: (record, bytes), first come first served.
    waiting: VecDeque<(usize, u64)>,
    /// Its QPs not in the error state.
    qps: usize,
}

/// The application: see the module documentation.
#[derive(Debug)]
pub struct FlowSet {
    /// Jobs not arrived yet, the next one last.
    pending: Vec<FlowJob>,
    peers: Vec<Peer>,
    /// The flow on each QP of the endpoint, by QP index.
    running: Vec<Option<Running>>,
    records: Vec<FlowRecord>,
    message: crate::endpoint::WrData,
    /// Flows running, and flows waiting for a QP.
    active: usize,
    queued: usize,
}

impl FlowSet {
    /// Runs `jobs`; `qps[p]` are the endpoint's QPs to peer `p` (at least one each peer a
    /// job names); each flow is sent in WRITE messages of `message_bytes`.
    pub fn new(mut jobs: Vec<FlowJob>, qps: Vec<Vec<usize>>, message_bytes: usize) -> FlowSet {
        jobs.sort_by_key(|j| std::cmp::Reverse((j.arrival, j.id)));
        let most = qps.iter().flatten().copied().max().map_or(0, |q| q + 1);
        FlowSet {
            records: Vec::with_capacity(jobs.len()),
            pending: jobs,
            peers: qps
                .into_iter()
                .map(|mut free| {
                    // Taken from the back: the lowest QP first.
                    free.reverse();
                    Peer {
                        qps: free.len(),
                        free,
                        waiting: VecDeque::new(),
                    }
                })
                .collect(),
            running: (0..most).map(|_| None).collect(),
            message: super::flow::Flow::message(message_bytes.max(1)),
            active: 0,
            queued: 0,
        }
    }

    /// Every flow that has arrived, in arrival order, with what became of it.
    pub fn records(&self) -> &[FlowRecord] {
        &self.records
    }

    /// Flows that arrived and wait for a QP to their peer.
    pub fn waiting(&self) -> usize {
        self.queued
    }

    /// One of `peer`'s QPs went to the error state and is gone from its pool: when it
    /// was the last, the flows waiting for one never start.
    fn lose_qp(&mut self, peer: usize) {
        let p = &mut self.peers[peer];
        p.qps -= 1;
        if p.qps == 0 {
            self.queued -= p.waiting.len();
            p.waiting.clear();
        }
    }

    /// Takes the flows due at `now`.
    fn admit(&mut self, now: Nanos, ep: &mut Endpoint) {
        while self.pending.last().is_some_and(|j| j.arrival <= now) {
            let Some(job) = self.pending.pop() else { break };
            self.records.push(FlowRecord {
                id: job.id,
                arrival: job.arrival,
                started: None,
                finished: None,
                bytes: job.bytes,
            });
            let record = self.records.len() - 1;
            match self.peers.get_mut(job.peer).and_then(|p| p.free.pop()) {
                Some(qp) => self.run(now, ep, qp, job.peer, record, job.bytes),
                None => {
                    if let Some(p) = self.peers.get_mut(job.peer).filter(|p| p.qps > 0) {
                        p.waiting.push_back((record, job.bytes));
                        self.queued += 1;
                    }
                }
            }
        }
    }

    fn run(
        &mut self,
        now: Nanos,
        ep: &mut Endpoint,
        qp: usize,
        peer: usize,
        record: usize,
        bytes: u64,
    ) {
        let mut flow = Flow::with_message(qp, Some(bytes), self.message.clone(), now);
        Application::start(&mut flow, now, ep);
        self.records[record].started = Some(now);
        if let Some(slot) = self.running.get_mut(qp) {
            *slot = Some(Running { flow, record, peer });
            self.active += 1;
        }
    }
}

impl Application for FlowSet {
    fn start(&mut self, now: Nanos, ep: &mut Endpoint) {
        self.admit(now, ep);
    }

    fn on_completion(&mut self, now: Nanos, ep: &mut Endpoint, completion: Completion) {
        let (Completion::Sent { qp, .. } | Completion::Failed { qp, .. }) = completion else {
            return;
        };
        let Some(Some(running)) = self.running.get_mut(qp) else {
            return;
        };
        running.flow.on_completion(now, ep, completion);
        if !running.flow.done() {
            return;
        }
        let (record, peer) = (running.record, running.peer);
        let failed = running.flow.failed().is_some();
        self.running[qp] = None;
        self.active -= 1;
        if failed {
            self.lose_qp(peer);
            return;
        }
        self.records[record].finished = Some(now);
        // The QP goes to the next flow waiting for this peer, or back to the pool.
        match self.peers[peer].waiting.pop_front() {
            Some((record, bytes)) => {
                self.queued -= 1;
                self.run(now, ep, qp, peer, record, bytes);
            }
            None => self.peers[peer].free.push(qp),
        }
    }

    fn done(&self) -> bool {
        self.pending.is_empty() && self.active == 0 && self.queued == 0
    }

    fn deadline(&self) -> Option<Nanos> {
        self.pending.last().map(|j| j.arrival)
    }

    fn on_timeout(&mut self, now: Nanos, ep: &mut Endpoint) {
        self.admit(now, ep);
    }
}

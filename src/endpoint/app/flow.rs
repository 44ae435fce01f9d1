//! Bulk flows for incast and fairness scenarios: a host WRITEs messages to a peer as fast
//! as its QP (and DCQCN) allows, from a start time, for a number of bytes or until the run
//! ends.

use super::Application;
use crate::endpoint::{Completion, Endpoint, SendWr, WrData};
use crate::time::Nanos;

/// R_Key of the receive ring a flow writes into.
pub const FLOW_RKEY: u32 = 0xf10;
/// Virtual address of that ring: 64 message slots, written in turn.
pub const FLOW_VA: u64 = 0x4000_0000;
/// Messages in the receive ring.
const RING_SLOTS: u64 = 64;

/// One sending side of a flow.
#[derive(Debug)]
pub struct Flow {
    qp: usize,
    total: Option<u64>,
    message: WrData,
    start: Nanos,
    started: bool,
    posted: u64,
    completed: u64,
    in_flight: usize,
    max_in_flight: usize,
    index: u64,
    finished: Option<Nanos>,
    /// When its QP went to the error state, if it did: the flow is over, unfinished.
    failed: Option<Nanos>,
}

impl Flow {
    /// A flow on the sender's QP `qp` of `total` bytes (`None`: endless) in messages of
    /// `message_bytes`, starting at `start`. Call [`Flow::prepare_receiver`] on the peer.
    pub fn new(qp: usize, total: Option<u64>, message_bytes: usize, start: Nanos) -> Flow {
        Flow::with_message(qp, total, Flow::message(message_bytes), start)
    }

    /// The message a flow sends, `message_bytes` long, for [`Flow::with_message`]: one
    /// repeated byte, which nobody reads (a simulator carries it as its length).
    pub fn message(message_bytes: usize) -> WrData {
        WrData::Fill {
            byte: 0x5a,
            len: message_bytes,
        }
    }

    /// [`Flow::new`], its messages sharing `message` (many flows, one buffer).
    pub fn with_message(qp: usize, total: Option<u64>, message: WrData, start: Nanos) -> Flow {
        Flow {
            qp,
            total,
            message,
            start,
            started: false,
            posted: 0,
            completed: 0,
            in_flight: 0,
            max_in_flight: 512,
            index: 0,
            finished: None,
            failed: None,
        }
    }

    /// Registers the receive ring on the receiving endpoint, large enough for messages of
    /// `message_bytes` and for every flow prepared before (flows into one host may use
    /// different message sizes; each slot takes the largest). The ring keeps no bytes:
    /// nothing reads a flow's data (it is one repeated byte), so the receiver checks and
    /// acknowledges every WRITE as into memory and holds none, whatever the message size.
    pub fn prepare_receiver(ep: &mut Endpoint, message_bytes: usize) {
        let needed = message_bytes.saturating_mul(RING_SLOTS as usize);
        if ep.region_len(FLOW_RKEY).is_none_or(|len| len < needed) {
            ep.register_discarding(FLOW_RKEY, FLOW_VA, needed);
        }
    }

    /// The QP it sends on.
    pub fn qp(&self) -> usize {
        self.qp
    }

    /// Starts at `at` (before the run starts).
    pub fn set_start(&mut self, at: Nanos) {
        self.start = at;
    }

    /// Bytes acknowledged so far.
    pub fn completed_bytes(&self) -> u64 {
        self.completed
    }

    /// When the flow starts.
    pub fn start(&self) -> Nanos {
        self.start
    }

    /// When the last byte was acknowledged.
    pub fn finished(&self) -> Option<Nanos> {
        self.finished
    }

    /// When its QP went to the error state, if it did.
    pub fn failed(&self) -> Option<Nanos> {
        self.failed
    }

    fn fill(&mut self, ep: &mut Endpoint) {
        let size = self.message.len() as u64;
        while self.in_flight < self.max_in_flight && self.total.is_none_or(|t| self.posted < t) {
            let len = self.total.map_or(size, |t| size.min(t - self.posted)) as usize;
            let data = self.message.prefix(len);
            ep.post_write(
                self.qp,
                SendWr {
                    id: self.index,
                    data,
                    remote_va: FLOW_VA + (self.index % RING_SLOTS) * size,
                    rkey: FLOW_RKEY,
                    imm: None,
                },
            );
            self.index += 1;
            self.posted += len as u64;
            self.in_flight += 1;
        }
    }
}

impl Application for Flow {
    fn start(&mut self, now: Nanos, ep: &mut Endpoint) {
        if now >= self.start {
            self.started = true;
            self.fill(ep);
        }
    }

    fn on_completion(&mut self, now: Nanos, ep: &mut Endpoint, completion: Completion) {
        if let Completion::Failed { qp, .. } = completion
            && qp == self.qp
        {
            self.in_flight = self.in_flight.saturating_sub(1);
            self.failed.get_or_insert(now);
            return;
        }
        if let Completion::Sent { qp, wr_id } = completion {
            if qp != self.qp {
                return;
            }
            let size = self.message.len() as u64;
            let len = self.total.map_or(size, |t| size.min(t - wr_id * size));
            self.completed += len;
            self.in_flight -= 1;
            if self.total.is_some_and(|t| self.completed >= t) {
                self.finished = Some(now);
            }
            self.fill(ep);
        }
    }

    fn done(&self) -> bool {
        self.failed.is_some() || self.total.is_some_and(|t| self.completed >= t)
    }

    fn deadline(&self) -> Option<Nanos> {
        (!self.started).then_some(self.start)
    }

    fn on_timeout(&mut self, now: Nanos, ep: &mut Endpoint) {
        self.start(now, ep);
    }
}

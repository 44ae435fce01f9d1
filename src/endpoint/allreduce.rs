//! Ring all-reduce on real data, as NCCL runs it over RDMA: N ranks, each with a buffer of
//! f32 filled from a seed; a reduce-scatter of N − 1 steps (each rank sends one chunk of
//! size/N to the next rank, which adds it to its own), then an all-gather of N − 1 steps
//! (the reduced chunks travel on round the ring). Every transfer is an RDMA WRITE with
//! Immediate: the immediate data names the step, and its arrival lets the receiver take the
//! next one. Every rank then checks its buffer against the closed-form sum.

use super::app::Application;
use super::{Completion, Endpoint, SendWr};
use crate::time::Nanos;

/// R_Key of each rank's data buffer.
pub const DATA_RKEY: u32 = 0x0d47a;
/// R_Key of each rank's staging buffer (one slot per reduce-scatter step).
pub const STAGE_RKEY: u32 = 0x57a6e;
/// Virtual address of the data buffer.
pub const DATA_VA: u64 = 0x1000_0000;
/// Virtual address of the staging buffer.
pub const STAGE_VA: u64 = 0x8000_0000;

fn data_rkey(tag: u32) -> u32 {
    DATA_RKEY + (tag << 20)
}

fn stage_rkey(tag: u32) -> u32 {
    STAGE_RKEY + (tag << 20)
}

fn data_va(tag: u32) -> u64 {
    DATA_VA + (u64::from(tag) << 36)
}

fn stage_va(tag: u32) -> u64 {
    STAGE_VA + (u64::from(tag) << 36)
}

/// The value rank `rank` starts with at element `i`: a small integer, so that any order of
/// summation is exact in f32 and the result can be checked bit for bit.
pub fn initial_value(seed: u64, rank: usize, i: usize) -> f32 {
    let x = seed
        .wrapping_add((rank as u64).wrapping_mul(7919))
        .wrapping_add((i as u64).wrapping_mul(104_729));
    (x % 17) as f32 - 8.0
}

/// The sum over all ranks at element `i`.
pub fn expected_sum(seed: u64, ranks: usize, i: usize) -> f32 {
    (0..ranks).map(|r| initial_value(seed, r, i)).sum()
}

/// One rank of a ring all-reduce.
#[derive(Debug)]
pub struct RingAllReduce {
    rank: usize,
    ranks: usize,
    count: usize,
    chunk: usize,
    seed: u64,
    qp_next: usize,
    /// Tells this run's keys, addresses and messages from other runs' on the same QPs.
    tag: u32,
    received: usize,
    sends_done: usize,
    /// Reused to copy a staged chunk out of the endpoint.
    scratch: Vec<u8>,
    /// Send buffers of earlier steps, reused once the endpoint is done with them.
    spares: Vec<std::sync::Arc<[u8]>>,
    start_at: Nanos,
    started: Option<Nanos>,
    finished: Option<Nanos>,
}

impl RingAllReduce {
    /// Sets up rank `rank` of `ranks` on `ep` with `count` f32 elements: registers its
    /// data buffer (filled from `seed`) and staging buffer. `qp_next` is the endpoint's QP
    /// to the next rank.
    pub fn new(
        ep: &mut Endpoint,
        rank: usize,
        ranks: usize,
        count: usize,
        seed: u64,
        qp_next: usize,
    ) -> RingAllReduce {
        RingAllReduce::tagged(ep, rank, ranks, count, seed, qp_next, 0)
    }

    /// As [`RingAllReduce::new`], for run `tag` of several on the same QPs: its buffers get
    /// their own keys and addresses, and its messages carry the tag in the immediate data
    /// (high 16 bits) and the work request id (high 32 bits).
    pub fn tagged(
        ep: &mut Endpoint,
        rank: usize,
        ranks: usize,
        count: usize,
        seed: u64,
        qp_next: usize,
        tag: u16,
    ) -> RingAllReduce {
        let chunk = count.div_ceil(ranks.max(1));
        let tag = u32::from(tag);
        ep.register(data_rkey(tag), data_va(tag), count * 4);
        ep.register(
            stage_rkey(tag),
            stage_va(tag),
            ranks.saturating_sub(1).max(1) * chunk * 4,
        );
        if let Some(data) = ep.region_mut(data_rkey(tag)) {
            for (i, v) in data.chunks_exact_mut(4).enumerate() {
                v.copy_from_slice(&initial_value(seed, rank, i).to_le_bytes());
            }
        }
        RingAllReduce {
            rank,
            ranks,
            count,
            chunk,
            seed,
            qp_next,
            tag,
            received: 0,
            sends_done: 0,
            scratch: Vec::new(),
            spares: Vec::new(),
            start_at: Nanos::ZERO,
            started: None,
            finished: None,
        }
    }

    /// Starts the all-reduce at `at` instead of when the run starts.
    pub fn starting_at(mut self, at: Nanos) -> RingAllReduce {
        self.start_at = at;
        self
    }

    /// Starts at `at` (before the run starts).
    pub fn set_start(&mut self, at: Nanos) {
        self.start_at = at;
    }

    fn begin(&mut self, now: Nanos, ep: &mut Endpoint) {
        self.started = Some(now);
        if self.ranks <= 1 {
            self.finished = Some(now);
            return;
        }
        self.post_step(ep, 0);
    }

    fn steps(&self) -> usize {
        2 * (self.ranks - 1)
    }

    /// Element range of chunk `c`.
    fn range(&self, c: usize) -> std::ops::Range<usize> {
        let start = (c * self.chunk).min(self.count);
        start..((c + 1) * self.chunk).min(self.count)
    }

    /// The chunk this rank sends at step `s`.
    fn chunk_sent(&self, s: usize) -> usize {
        let n = self.ranks;
        if s < n - 1 {
            (self.rank + n - s % n) % n // reduce-scatter: r − s
        } else {
            (self.rank + 1 + n - (s - (n - 1)) % n) % n // all-gather: r + 1 − g
        }
    }

    fn post_step(&mut self, ep: &mut Endpoint, s: usize) {
        let c = self.chunk_sent(s);
        let range = self.range(c);
        let tag = self.tag;
        let data = ep.region(data_rkey(tag)).unwrap_or_default();
        let bytes = self.send_buffer(&data[range.start * 4..range.end * 4]);
        let (rkey, va) = if s < self.ranks - 1 {
            (stage_rkey(tag), stage_va(tag) + (s * self.chunk * 4) as u64)
        } else {
            (data_rkey(tag), data_va(tag) + (range.start * 4) as u64)
        };
        ep.post_write(
            self.qp_next,
            SendWr {
                id: (u64::from(tag) << 32) | s as u64,
                data: bytes,
                remote_va: va,
                rkey,
                imm: Some((tag << 16) | s as u32),
            },
        );
    }

    /// A copy of `src` to send: in a buffer of an earlier step the endpoint no longer
    /// holds, when there is one (no allocation, and no fresh pages to fault in, per step).
    fn send_buffer(&mut self, src: &[u8]) -> std::sync::Arc<[u8]> {
        use std::sync::Arc;
        for spare in &mut self.spares {
            if spare.len() == src.len()
                && let Some(buf) = Arc::get_mut(spare)
            {
                buf.copy_from_slice(src);
                return Arc::clone(spare);
            }
        }
        let fresh: Arc<[u8]> = src.into();
        if self.spares.len() < 3 {
            self.spares.push(Arc::clone(&fresh));
        }
        fresh
    }

    /// Reduce-scatter step `s` arrived: add the staged chunk into this rank's data.
    fn reduce(&mut self, ep: &mut Endpoint, s: usize) {
        let n = self.ranks;
        let c = (self.rank + 2 * n - s - 1) % n; // r − s − 1
        let range = self.range(c);
        let at = s * self.chunk * 4;
        // The staged bytes are copied out first: both buffers live in the endpoint.
        let mut stage = std::mem::take(&mut self.scratch);
        stage.clear();
        stage.extend_from_slice(
            ep.region(stage_rkey(self.tag))
                .unwrap_or_default()
                .get(at..at + range.len() * 4)
                .unwrap_or_default(),
        );
        if let Some(data) = ep
            .region_mut(data_rkey(self.tag))
            .and_then(|d| d.get_mut(range.start * 4..range.end * 4))
        {
            for (d, a) in data.chunks_exact_mut(4).zip(stage.chunks_exact(4)) {
                let sum = f32::from_le_bytes([d[0], d[1], d[2], d[3]])
                    + f32::from_le_bytes([a[0], a[1], a[2], a[3]]);
                d.copy_from_slice(&sum.to_le_bytes());
            }
        }
        self.scratch = stage;
    }

    /// When the run started and ended on this rank.
    pub fn elapsed(&self) -> Option<(Nanos, Nanos)> {
        Some((self.started?, self.finished?))
    }

    /// Elements of this rank's buffer that differ from the closed-form sum.
    pub fn result(&self, ep: &Endpoint) -> super::sweep::RankResult {
        super::sweep::RankResult {
            size: self.count as u64 * 4,
            span_ns: self.elapsed().map(|(a, b)| (a.0, b.0)),
            // An unfinished buffer is not checked: it is incomplete, not wrong.
            wrong: if self.elapsed().is_some() {
                self.wrong(ep) as u64
            } else {
                0
            },
        }
    }

    /// Elements of this rank's buffer that differ from the closed-form sum (all of them
    /// when the buffer is gone).
    pub fn wrong(&self, ep: &Endpoint) -> usize {
        let data = ep.region(data_rkey(self.tag)).unwrap_or_default();
        data.chunks_exact(4)
            .enumerate()
            .filter(|(i, b)| {
                f32::from_le_bytes([b[0], b[1], b[2], b[3]]).to_bits()
                    != expected_sum(self.seed, self.ranks, *i).to_bits()
            })
            .count()
            + self.count.saturating_sub(data.len() / 4)
    }
}

impl Application for RingAllReduce {
    fn start(&mut self, now: Nanos, ep: &mut Endpoint) {
        if now >= self.start_at {
            self.begin(now, ep);
        }
    }

    fn deadline(&self) -> Option<Nanos> {
        self.started.is_none().then_some(self.start_at)
    }

    fn on_timeout(&mut self, now: Nanos, ep: &mut Endpoint) {
        if self.started.is_none() && now >= self.start_at {
            self.begin(now, ep);
        }
    }

    fn on_completion(&mut self, now: Nanos, ep: &mut Endpoint, completion: Completion) {
        match completion {
            Completion::Sent { wr_id, .. } => {
                if wr_id >> 32 != u64::from(self.tag) {
                    return;
                }
                self.sends_done += 1;
            }
            Completion::Received { imm, .. } => {
                if imm >> 16 != self.tag {
                    return;
                }
                let s = (imm & 0xffff) as usize;
                if s < self.ranks - 1 {
                    self.reduce(ep, s);
                }
                self.received += 1;
                if s + 1 < self.steps() {
                    self.post_step(ep, s + 1);
                }
            }
        }
        if self.finished.is_none() && self.done() {
            self.finished = Some(now);
            // Every send completed: the endpoint holds none of them any more.
            self.spares = Vec::new();
            self.scratch = Vec::new();
        }
    }

    fn done(&self) -> bool {
        self.ranks <= 1 || (self.received == self.steps() && self.sends_done == self.steps())
    }
}

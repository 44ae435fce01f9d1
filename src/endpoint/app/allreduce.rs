//! Ring all-reduce on real data, as NCCL runs it over RDMA: N ranks, each with a buffer of
//! f32 filled from a seed; a reduce-scatter of N − 1 steps (each rank sends one chunk of
//! size/N to the next rank, which adds it to its own), then an all-gather of N − 1 steps
//! (the reduced chunks travel on round the ring). A chunk travels in pieces of 256 KiB,
//! each an RDMA WRITE with Immediate whose immediate data names the run, the step and the
//! piece; a rank reduces each piece as it arrives and passes it on at once, so the steps
//! overlap as NCCL's pipelined slices do. Every rank then checks its buffer against the
//! closed-form sum. Its results: one rank's part ([`RankResult`]), and the run over all
//! ranks with nccl-tests' bandwidths ([`AllReduceResult`]).

use super::Application;
use crate::endpoint::{Completion, Endpoint, SendWr};
use crate::time::Nanos;
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Arc;

/// Bytes of a chunk one call reduces and copies before it returns: a driver that runs
/// several endpoints on one thread then serves the others between slices, as a GPU's
/// reduction kernel would not hold up the NIC. The rest is due at once
/// ([`Application::deadline`]), so in virtual time the chunk still takes no time.
const SLICE_BYTES: usize = 32 * 1024;

/// The pipeline's unit: a chunk travels as messages of this many bytes (the last one
/// shorter), each a WRITE with Immediate of its own, and a rank passes each piece on as
/// soon as it has it (reduced), as NCCL pipelines a step in slices: the next rank starts
/// before the whole chunk has arrived.
const PIECE_BYTES: usize = 256 * 1024;
/// Most pieces per chunk (12 bits of the immediate data): larger chunks get larger pieces.
const MAX_PIECES: usize = 1 << 12;
/// Send buffers kept for reuse: about what a QP's window holds in flight, plus one.
const MAX_SPARES: usize = 24;

/// The immediate data of piece `piece` of step `step` of run `tag`: 7, 13 and 12 bits
/// (sizes, ranks up to 4096, pieces).
fn imm_of(tag: u32, step: usize, piece: usize) -> u32 {
    (tag << 25) | ((step as u32 & 0x1fff) << 12) | (piece as u32 & 0xfff)
}

/// The run an immediate data names.
pub(crate) fn tag_of_imm(imm: u32) -> usize {
    (imm >> 25) as usize
}

/// The work request id of piece `piece` of step `step` of run `tag`.
fn wr_id_of(tag: u32, step: usize, piece: usize) -> u64 {
    (u64::from(tag) << 32) | ((step as u64) << 12) | piece as u64
}

/// The run a work request id names.
pub(crate) fn tag_of_wr_id(id: u64) -> usize {
    (id >> 32) as usize
}

/// One piece's work on this rank: add the staged data of a reduce-scatter step into the
/// data buffer, and copy the piece it sends next into a send buffer, slice by slice.
#[derive(Debug)]
struct Work {
    /// The reduce-scatter step whose staging slot to add in, if any.
    reduce: Option<usize>,
    /// The step to send once the piece is done, if any.
    send: Option<usize>,
    /// Which piece of the chunk.
    piece: usize,
    /// Whether it finishes a received piece (the first sends do not).
    received: bool,
    /// When it became due.
    since: Nanos,
    /// Bytes of the chunk done so far.
    done: usize,
    /// The buffer being filled for `send`.
    buf: Option<Arc<[u8]>>,
}

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

/// Elements of `data` (little-endian f32s, element 0 first) that differ bit for bit from
/// [`expected_sum`]. A live rank checks each size as it finishes, on the thread that runs
/// the fabric's endpoints, so this must be quick: while no element's seed arithmetic wraps
/// (any seed below about 2^63 for buffers up to 1 GiB), the sum repeats every 17 elements
/// (`initial_value` is taken modulo 17, and 17 elements on its argument has grown by
/// 17 × 104 729), and 17 precomputed values stand for the whole buffer.
pub fn count_wrong(data: &[u8], seed: u64, ranks: usize) -> usize {
    let elements = data.len() / 4;
    let no_wrap = (ranks.max(1) as u64 - 1)
        .checked_mul(7919)
        .zip((elements.max(1) as u64 - 1).checked_mul(104_729))
        .and_then(|(a, b)| a.checked_add(b))
        .and_then(|span| seed.checked_add(span))
        .is_some();
    let bits = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    if !no_wrap {
        return data
            .chunks_exact(4)
            .enumerate()
            .filter(|&(i, b)| bits(b) != expected_sum(seed, ranks, i).to_bits())
            .count();
    }
    const PERIOD: usize = 17;
    let expected: [u32; PERIOD] = std::array::from_fn(|i| expected_sum(seed, ranks, i).to_bits());
    data.chunks(4 * PERIOD)
        .map(|period| {
            period
                .chunks_exact(4)
                .zip(&expected)
                .filter(|&(b, &e)| bits(b) != e)
                .count()
        })
        .sum()
}

/// Adds the little-endian f32s of `src` into those of `dst`, element by element (as many
/// as both hold). Where the machine is little-endian and both are 4-byte aligned (the
/// regions' allocations and chunk offsets are), as f32 slices the compiler vectorises;
/// otherwise element by element from bytes.
fn add_f32_le(dst: &mut [u8], src: &[u8]) {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: every bit pattern is a valid f32 and u8 has no invalid values; align_to
        // only hands out the aligned middle, and the prefixes are checked to be empty.
        let (dp, d, _) = unsafe { dst.align_to_mut::<f32>() };
        // SAFETY: as above.
        let (sp, s, _) = unsafe { src.align_to::<f32>() };
        if dp.is_empty() && sp.is_empty() {
            for (d, s) in d.iter_mut().zip(s) {
                *d += *s;
            }
            return;
        }
    }
    for (d, a) in dst.chunks_exact_mut(4).zip(src.chunks_exact(4)) {
        let sum = f32::from_le_bytes([d[0], d[1], d[2], d[3]])
            + f32::from_le_bytes([a[0], a[1], a[2], a[3]]);
        d.copy_from_slice(&sum.to_le_bytes());
    }
}

/// A zeroed buffer of `len` bytes, written through (so its pages are mapped).
fn mapped_buffer(len: usize) -> Arc<[u8]> {
    std::iter::repeat_n(0u8, len).collect()
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
    /// Bytes of a piece (see [`PIECE_BYTES`]).
    piece: usize,
    /// Pieces received and sends completed so far, and how many there are in all.
    received: usize,
    sends_done: usize,
    to_receive: usize,
    to_send: usize,
    /// Steps whose data arrived (or the first send) with their reduction and copy still
    /// to do, oldest first.
    work: VecDeque<Work>,
    /// Send buffers of earlier steps, reused once the endpoint is done with them.
    spares: Vec<Arc<[u8]>>,
    start_at: Nanos,
    started: Option<Nanos>,
    finished: Option<Nanos>,
    /// A QP of this rank went to the error state: the run is over, unfinished.
    failed: bool,
    /// Per step: pieces still to arrive, and when its last one did.
    step_left: Vec<usize>,
    step_done: Vec<Option<Nanos>>,
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

    /// As [`RingAllReduce::new`], for run `tag` (below 128) of several on the same QPs: its
    /// buffers get their own keys and addresses, and its messages carry the tag in the
    /// immediate data (high 7 bits) and the work request id (high 32 bits). At most 4096
    /// ranks.
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
        // The immediate data has 7 bits for the run (a sweep has at most 65 with its
        // warm-up) and 13 for the step (4096 ranks).
        debug_assert!(tag < 128 && ranks <= 4096, "run {tag} of {ranks} ranks");
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
        let piece = PIECE_BYTES
            .max((chunk * 4).div_ceil(MAX_PIECES))
            .next_multiple_of(4);
        let mut run = RingAllReduce {
            rank,
            ranks,
            count,
            chunk,
            seed,
            qp_next,
            tag,
            piece,
            received: 0,
            sends_done: 0,
            to_receive: 0,
            to_send: 0,
            work: VecDeque::new(),
            spares: Vec::new(),
            start_at: Nanos::ZERO,
            started: None,
            finished: None,
            failed: false,
            step_left: Vec::new(),
            step_done: Vec::new(),
        };
        let prev = (rank + ranks.max(1) - 1) % ranks.max(1);
        for s in 0..run.steps_or_zero() {
            run.to_send += run.pieces(run.chunk_sent_by(rank, s));
            let pieces = run.pieces(run.chunk_sent_by(prev, s));
            run.to_receive += pieces;
            run.step_left.push(pieces);
        }
        run.step_done = vec![None; run.step_left.len()];
        // Send buffers with their pages mapped now, as many as a window holds in flight:
        // a first touch of fresh pages in the middle of a run costs milliseconds of idle
        // link.
        let first = run.pieces(0).min(MAX_SPARES);
        let len = piece.min(chunk * 4);
        run.spares = (0..first).map(|_| mapped_buffer(len)).collect();
        run
    }

    /// Starts the all-reduce at `at` instead of when the run starts.
    pub fn starting_at(mut self, at: Nanos) -> RingAllReduce {
        self.start_at = at;
        self
    }

    /// When it starts.
    pub fn start_at(&self) -> Nanos {
        self.start_at
    }

    /// The QP to the next rank.
    pub fn qp_next(&self) -> usize {
        self.qp_next
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
        for piece in 0..self.pieces(self.chunk_sent(0)) {
            self.work.push_back(Work {
                reduce: None,
                send: Some(0),
                piece,
                received: false,
                since: now,
                done: 0,
                buf: None,
            });
        }
        self.run_work(now, ep);
    }

    /// When queued work is due (it is due as soon as it is queued), if there is any.
    pub fn work_due(&self) -> Option<Nanos> {
        self.work.front().map(|w| w.since)
    }

    /// Does up to 32 KiB (`SLICE_BYTES`) of the queued work at `now`; posts each step's
    /// send as its chunk is complete.
    pub fn run_work(&mut self, now: Nanos, ep: &mut Endpoint) {
        let mut budget = SLICE_BYTES;
        while budget > 0 {
            let Some(w) = self.work.front() else { break };
            let (reduce, send) = (w.reduce, w.send);
            // The piece it works on: of the chunk sent next (which is the one just reduced
            // or received), or for the last step none.
            let chunk = match (send, reduce) {
                (Some(t), _) => Some(self.chunk_sent(t)),
                (None, Some(r)) => Some((self.rank + 2 * self.ranks - r - 1) % self.ranks),
                (None, None) => None,
            };
            let bytes = chunk.map_or(0..0, |c| self.piece_bytes(c, w.piece));
            let total = bytes.len();
            let base = bytes.start;
            let from = w.done;
            let to = total.min(from + budget);
            if let Some(r) = reduce {
                self.reduce_slice(ep, r, base + from..base + to);
            }
            if send.is_some() {
                let mut buf = match self.work.front_mut().and_then(|w| w.buf.take()) {
                    Some(b) => b,
                    None => self.send_buffer(total),
                };
                let copied = match (
                    Arc::get_mut(&mut buf),
                    ep.region(data_rkey(self.tag))
                        .and_then(|d| d.get(base + from..base + to)),
                ) {
                    (Some(dst), Some(src)) => {
                        dst[from..to].copy_from_slice(src);
                        true
                    }
                    _ => false,
                };
                // The buffer is this step's alone and the chunk lies in the data buffer.
                debug_assert!(copied, "step {send:?}: send buffer shared or piece missing");
                if let Some(w) = self.work.front_mut() {
                    w.buf = Some(buf);
                }
            }
            budget -= (to - from).max(1).min(budget);
            if let Some(w) = self.work.front_mut() {
                w.done = to;
            }
            if to < total {
                continue;
            }
            // The piece is complete: send it on, count it.
            let Some(w) = self.work.pop_front() else {
                break;
            };
            if let (Some(t), Some(buf)) = (w.send, w.buf) {
                if self.spares.len() < MAX_SPARES {
                    self.spares.push(Arc::clone(&buf));
                }
                self.post(ep, t, w.piece, buf);
            }
            if w.received {
                self.received += 1;
            }
        }
        if self.finished.is_none() && self.done() {
            self.finished = Some(now);
            // Every send completed: the endpoint holds none of them any more.
            self.spares = Vec::new();
        }
    }

    fn steps(&self) -> usize {
        2 * (self.ranks - 1)
    }

    /// How long each of its 2(N − 1) steps took at this rank: from the end of the step
    /// before (the first: from its start) to the arrival of the step's last piece, ns, for
    /// the steps that completed. The steps overlap (a piece goes on as soon as it is
    /// reduced), so these are the intervals between step completions, which a slow link
    /// or a pause stretches.
    pub fn step_times(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.step_done.len());
        let mut last = self.started;
        for done in &self.step_done {
            let (Some(from), Some(to)) = (last, *done) else {
                break;
            };
            out.push(to.saturating_sub(from).0);
            last = Some(to.max(from));
        }
        out
    }

    /// Steps, 0 for a single rank.
    fn steps_or_zero(&self) -> usize {
        2 * self.ranks.saturating_sub(1)
    }

    /// Pieces chunk `c` travels in (one, if it is empty).
    fn pieces(&self, c: usize) -> usize {
        (self.range(c).len() * 4).div_ceil(self.piece).max(1)
    }

    /// Bytes of piece `k` of chunk `c`, as offsets in the data buffer.
    fn piece_bytes(&self, c: usize, k: usize) -> std::ops::Range<usize> {
        let r = self.range(c);
        let start = (r.start * 4 + k * self.piece).min(r.end * 4);
        start..(start + self.piece).min(r.end * 4)
    }

    /// Element range of chunk `c`.
    fn range(&self, c: usize) -> std::ops::Range<usize> {
        let start = (c * self.chunk).min(self.count);
        start..((c + 1) * self.chunk).min(self.count)
    }

    /// The chunk this rank sends at step `s`.
    fn chunk_sent(&self, s: usize) -> usize {
        self.chunk_sent_by(self.rank, s)
    }

    /// The chunk rank `r` sends at step `s`.
    fn chunk_sent_by(&self, r: usize, s: usize) -> usize {
        let n = self.ranks;
        if s < n - 1 {
            (r + n - s % n) % n // reduce-scatter: r − s
        } else {
            (r + 1 + n - (s - (n - 1)) % n) % n // all-gather: r + 1 − g
        }
    }

    /// Posts the WRITE of piece `k` of step `s` (`bytes`) to the next rank.
    fn post(&mut self, ep: &mut Endpoint, s: usize, k: usize, bytes: Arc<[u8]>) {
        let c = self.chunk_sent(s);
        let at = self.piece_bytes(c, k).start;
        let offset = at - self.range(c).start * 4;
        let tag = self.tag;
        let (rkey, va) = if s < self.ranks - 1 {
            (
                stage_rkey(tag),
                stage_va(tag) + (s * self.chunk * 4 + offset) as u64,
            )
        } else {
            (data_rkey(tag), data_va(tag) + at as u64)
        };
        ep.post_write(
            self.qp_next,
            SendWr {
                id: wr_id_of(tag, s, k),
                data: bytes.into(),
                remote_va: va,
                rkey,
                imm: Some(imm_of(tag, s, k)),
            },
        );
    }

    /// A buffer of `len` bytes to fill and send: one of an earlier step the endpoint no
    /// longer holds, when there is one (no allocation, and no fresh pages, per step).
    fn send_buffer(&mut self, len: usize) -> Arc<[u8]> {
        match self
            .spares
            .iter_mut()
            .position(|b| b.len() == len && Arc::get_mut(b).is_some())
        {
            // Taken out of the spares: the only reference, so it can be written.
            Some(i) => self.spares.swap_remove(i),
            None => mapped_buffer(len),
        }
    }

    /// Reduce-scatter step `s`: adds bytes `range` of its staging slot (offsets within
    /// the data buffer's chunk, as bytes of the data buffer) into the data buffer.
    fn reduce_slice(&mut self, ep: &mut Endpoint, s: usize, range: std::ops::Range<usize>) {
        let n = self.ranks;
        let c = (self.rank + 2 * n - s - 1) % n; // r − s − 1
        let chunk_start = self.range(c).start * 4;
        let at = s * self.chunk * 4 + (range.start - chunk_start);
        let len = range.len();
        let Some((data, stage)) = ep.region_pair(data_rkey(self.tag), stage_rkey(self.tag)) else {
            return;
        };
        let (Some(data), Some(stage)) = (data.get_mut(range), stage.get(at..at + len)) else {
            return;
        };
        add_f32_le(data, stage);
    }

    /// When the run started and ended on this rank.
    pub fn elapsed(&self) -> Option<(Nanos, Nanos)> {
        Some((self.started?, self.finished?))
    }

    /// Elements of this rank's buffer that differ from the closed-form sum.
    pub fn result(&self, ep: &Endpoint) -> RankResult {
        RankResult {
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
        let data = &data[..data.len().min(self.count * 4)];
        count_wrong(data, self.seed, self.ranks) + self.count.saturating_sub(data.len() / 4)
    }
}

impl Application for RingAllReduce {
    fn start(&mut self, now: Nanos, ep: &mut Endpoint) {
        if now >= self.start_at {
            self.begin(now, ep);
        }
    }

    fn deadline(&self) -> Option<Nanos> {
        let start = self.started.is_none().then_some(self.start_at);
        crate::time::earliest(start, self.work_due())
    }

    fn on_timeout(&mut self, now: Nanos, ep: &mut Endpoint) {
        if self.started.is_none() && now >= self.start_at {
            self.begin(now, ep);
        } else if self.work_due().is_some_and(|t| t <= now) {
            self.run_work(now, ep);
        }
    }

    fn on_completion(&mut self, now: Nanos, ep: &mut Endpoint, completion: Completion) {
        match completion {
            Completion::Sent { wr_id, .. } => {
                if tag_of_wr_id(wr_id) != self.tag as usize {
                    return;
                }
                self.sends_done += 1;
            }
            Completion::Failed { wr_id, .. } => {
                if tag_of_wr_id(wr_id) == self.tag as usize {
                    self.failed = true;
                }
                return;
            }
            Completion::Received { imm, .. } => {
                if tag_of_imm(imm) != self.tag as usize {
                    return;
                }
                let (s, piece) = (((imm >> 12) & 0x1fff) as usize, (imm & 0xfff) as usize);
                if let Some(left) = self.step_left.get_mut(s) {
                    *left = left.saturating_sub(1);
                    if *left == 0 {
                        self.step_done[s] = Some(now);
                    }
                }
                self.work.push_back(Work {
                    reduce: (s < self.ranks - 1).then_some(s),
                    send: (s + 1 < self.steps()).then_some(s + 1),
                    piece,
                    received: true,
                    since: now,
                    done: 0,
                    buf: None,
                });
            }
        }
        // The first slice now; the rest as the deadline comes (at once).
        self.run_work(now, ep);
    }

    fn done(&self) -> bool {
        self.failed
            || self.ranks <= 1
            || (self.received == self.to_receive && self.sends_done == self.to_send)
    }
}

/// One all-reduce size over all ranks, as nccl-tests reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AllReduceResult {
    /// Bytes per rank.
    pub size: u64,
    /// Ranks in the ring.
    pub ranks: usize,
    /// From the first rank's start to the last rank's end; `None` when a rank did not
    /// finish.
    pub time_ns: Option<u64>,
    /// Elements, over all ranks, that differ from the closed-form sum; `None` when a rank
    /// did not finish (its buffer was never complete, so there is nothing to check).
    pub wrong: Option<u64>,
}

/// One rank's part of a size: when it ran, and its wrong elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RankResult {
    /// The all-reduce size, bytes per rank.
    pub size: u64,
    /// Start and end, ns, if it finished.
    pub span_ns: Option<(u64, u64)>,
    /// Elements that differ from the closed-form sum (checked only when it finished).
    pub wrong: u64,
}

impl RankResult {
    /// Size `size` as a rank that never reported it: unfinished, nothing checked.
    pub fn missing(size: u64) -> RankResult {
        RankResult {
            size,
            span_ns: None,
            wrong: 0,
        }
    }
}

impl AllReduceResult {
    /// The result of `size` from every rank's part.
    pub fn over_ranks(size: u64, parts: impl IntoIterator<Item = RankResult>) -> AllReduceResult {
        let mut ranks = 0;
        let mut wrong = 0;
        let mut span = Some((u64::MAX, 0));
        for p in parts {
            ranks += 1;
            wrong += p.wrong;
            span = match (span, p.span_ns) {
                (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
                _ => None,
            };
        }
        let time_ns = span.filter(|_| ranks > 0).map(|(a, b)| b.saturating_sub(a));
        AllReduceResult {
            size,
            ranks,
            time_ns,
            wrong: time_ns.map(|_| wrong),
        }
    }

    /// f32 elements per rank.
    pub fn count(&self) -> u64 {
        self.size / 4
    }

    /// nccl-tests' algorithm bandwidth, size / time, in GB/s (10^9 bytes); 0 when it did
    /// not finish.
    pub fn algbw(&self) -> f64 {
        self.time_ns
            .map_or(0.0, |t| self.size as f64 / t.max(1) as f64)
    }

    /// nccl-tests' bus bandwidth for all-reduce: algbw × 2(N − 1)/N, GB/s.
    pub fn busbw(&self) -> f64 {
        let n = self.ranks.max(1) as f64;
        self.algbw() * 2.0 * (n - 1.0) / n
    }
}

impl Serialize for AllReduceResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("AllReduceResult", 6)?;
        st.serialize_field("size", &self.size)?;
        st.serialize_field("count", &self.count())?;
        st.serialize_field("time_ns", &self.time_ns)?;
        // A size that did not finish has no bandwidth: null, as its time (not 0, which
        // reads as a measured stall).
        let done = self.time_ns.is_some();
        st.serialize_field("algbw_gbytes_per_s", &done.then(|| self.algbw()))?;
        st.serialize_field("busbw_gbytes_per_s", &done.then(|| self.busbw()))?;
        st.serialize_field("wrong", &self.wrong)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-element check, as the definition reads.
    fn wrong_by_definition(data: &[u8], seed: u64, ranks: usize) -> usize {
        data.chunks_exact(4)
            .enumerate()
            .filter(|&(i, b)| {
                u32::from_le_bytes([b[0], b[1], b[2], b[3]])
                    != expected_sum(seed, ranks, i).to_bits()
            })
            .count()
    }

    #[test]
    fn the_quick_check_counts_what_the_definition_counts() {
        // Seeds where nothing wraps, and near u64::MAX where the seed arithmetic does (the
        // check then goes element by element).
        for seed in [0, 1, 42, 1 << 40, u64::MAX - 1_000_000, u64::MAX] {
            for ranks in [1, 2, 4, 7] {
                let n = 1000;
                let mut data: Vec<u8> = (0..n)
                    .flat_map(|i| expected_sum(seed, ranks, i).to_le_bytes())
                    .collect();
                assert_eq!(count_wrong(&data, seed, ranks), 0, "seed {seed}");
                // Damage a few elements (500 twice, which undoes it), and one only in its last byte.
                for i in [0, 16, 17, 500, 500, 999] {
                    data[4 * i] ^= 0x40;
                }
                data[4 * 300 + 3] ^= 0x01;
                assert_eq!(
                    count_wrong(&data, seed, ranks),
                    wrong_by_definition(&data, seed, ranks),
                    "seed {seed}, {ranks} ranks"
                );
                assert_eq!(count_wrong(&data, seed, ranks), 5);
            }
        }
        assert_eq!(count_wrong(&[], 7, 4), 0);
    }

    #[test]
    fn bandwidths_are_nccl_tests_formulas() {
        let part = |a, b| RankResult {
            size: 1 << 20,
            span_ns: Some((a, b)),
            wrong: 0,
        };
        // 4 ranks, 1 MiB, from 100 ns to 1 048 676 ns: 1 048 576 ns, 1 byte/ns = 1 GB/s.
        let r = AllReduceResult::over_ranks(
            1 << 20,
            [
                part(100, 500),
                part(200, 1_048_676),
                part(150, 900),
                part(300, 400),
            ],
        );
        assert_eq!(r.time_ns, Some(1 << 20));
        assert_eq!(r.algbw(), 1.0);
        assert_eq!(r.busbw(), 1.5);
        let mut parts = vec![part(0, 10); 3];
        parts.push(RankResult::missing(1 << 20));
        let r = AllReduceResult::over_ranks(1 << 20, parts);
        // Sizes that never ran show nothing as wrong: nothing was checked.
        assert_eq!((r.time_ns, r.wrong, r.algbw()), (None, None, 0.0));
        // In JSON, no bandwidth either: it was 0 beside a null time.
        let json = serde_json::to_value(r).unwrap();
        for key in [
            "time_ns",
            "algbw_gbytes_per_s",
            "busbw_gbytes_per_s",
            "wrong",
        ] {
            assert!(json[key].is_null(), "{key}: {json}");
        }
    }
}

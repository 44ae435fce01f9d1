//! An nccl-tests-like sweep of ring all-reduce sizes: the sizes (`-b`, `-e`, `-f`), the
//! application that runs them one after the other on one rank, and the gathering of each
//! size's results from every rank as they finish (each size's result is the all-reduce's
//! own, [`AllReduceResult`]).

use super::Application;
use super::allreduce::{AllReduceResult, RankResult, RingAllReduce};
use crate::endpoint::{Completion, Endpoint};
use crate::time::Nanos;

/// The most sizes a sweep may have.
pub const MAX_SIZES: usize = 64;
/// The largest all-reduce size, in bytes per rank.
pub const MAX_SIZE_BYTES: u64 = 1 << 30;

/// A size sweep that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeSweepError {
    /// A size that is not a whole number of f32 elements, or out of range.
    #[error("size {0} B: give a multiple of 4 bytes from 4 B to 1 GiB")]
    Size(u64),
    /// The largest size is below the smallest.
    #[error("the largest size {max} B is below the smallest {min} B")]
    Order {
        /// The smallest size asked for, bytes.
        min: u64,
        /// The largest size asked for, bytes.
        max: u64,
    },
    /// A factor that would not grow the size.
    #[error("factor {0}: give 2 or more")]
    Factor(u64),
}

/// The sizes of an nccl-tests sweep: `min`, `min·factor`, … while at most `max`. `min` is a
/// multiple of 4 (f32 elements), every size from 4 B to 1 GiB; the factor is at least 2, so
/// there are at most 29 sizes and the product never overflows.
pub fn sizes(min: u64, max: u64, factor: u64) -> Result<Vec<u64>, SizeSweepError> {
    if min < 4 || !min.is_multiple_of(4) || min > MAX_SIZE_BYTES {
        return Err(SizeSweepError::Size(min));
    }
    if max < min {
        return Err(SizeSweepError::Order { min, max });
    }
    if max > MAX_SIZE_BYTES {
        return Err(SizeSweepError::Size(max));
    }
    if factor < 2 {
        return Err(SizeSweepError::Factor(factor));
    }
    let mut out = vec![min];
    while let Some(next) = out.last().and_then(|s| s.checked_mul(factor)) {
        if next > max {
            break;
        }
        out.push(next);
    }
    debug_assert!(out.len() <= MAX_SIZES);
    Ok(out)
}

/// Bytes one rank of a sweep holds, at most: every size's data buffer, its staging buffer
/// (up to the size again) and two send buffers of a chunk (up to half the size each, with
/// two ranks), all at once (a rank may receive data for a size it has not started yet).
pub fn rank_buffer_bytes(sizes: &[u64]) -> u64 {
    sizes
        .iter()
        .fold(0u64, |sum, s| sum.saturating_add(s.saturating_mul(3)))
}

/// Every rank's part of each size, gathered as the ranks finish them, for printing each
/// size's result as soon as the last rank is done with it (as nccl-tests prints a row per
/// size). Each size's data is checked once, when its rank has finished it.
#[derive(Debug, Clone)]
pub struct Gather {
    /// Per rank, its parts of the sizes it has finished, in order.
    parts: Vec<Vec<RankResult>>,
    /// Sizes before the timed ones (warm-up runs), neither gathered nor given.
    skip: usize,
    /// Sizes already given out.
    given: usize,
}

impl Gather {
    /// Gathers `ranks` ranks' sweeps, whose first `skip` sizes are not timed.
    pub fn new(ranks: usize, skip: usize) -> Gather {
        Gather {
            parts: vec![Vec::new(); ranks],
            skip,
            given: 0,
        }
    }

    /// Takes what `rank` (on `ep`, running `sweep`) has finished since the last call, and
    /// returns the sizes that every rank has now finished, each once, in order.
    pub fn update(
        &mut self,
        rank: usize,
        sweep: &SizeSweep,
        ep: &Endpoint,
    ) -> Vec<AllReduceResult> {
        let Some(parts) = self.parts.get_mut(rank) else {
            return Vec::new();
        };
        while self.skip + parts.len() < sweep.finished() {
            match sweep.result(self.skip + parts.len(), ep) {
                Some(part) => parts.push(part),
                None => break,
            }
        }
        let everywhere = self.parts.iter().map(Vec::len).min().unwrap_or(0);
        let out = (self.given..everywhere)
            .map(|k| {
                let size = self.parts[0][k].size;
                AllReduceResult::over_ranks(size, self.parts.iter().map(|p| p[k]))
            })
            .collect();
        self.given = self.given.max(everywhere);
        out
    }
}

/// An nccl-tests-like sweep on one rank: one ring all-reduce per size, run one after the
/// other on the same QPs, each tagged with its index. A rank starts size k + 1 when it is
/// done with size k; data for a size it has not started yet is still reduced and passed
/// on, so ranks that drift apart never deadlock and never mix sizes up.
#[derive(Debug)]
pub struct SizeSweep {
    runs: Vec<RingAllReduce>,
    sizes: Vec<u64>,
    current: usize,
    start_at: Nanos,
    started: bool,
}

impl SizeSweep {
    /// Rank `rank` of `ranks` on `ep`, sizes in bytes (each a multiple of 4), `qp_next` the
    /// QP to the next rank.
    pub fn new(
        ep: &mut Endpoint,
        rank: usize,
        ranks: usize,
        sizes: &[u64],
        seed: u64,
        qp_next: usize,
    ) -> SizeSweep {
        SizeSweep::new_unless(ep, rank, ranks, sizes, seed, qp_next, &mut || false)
            .expect("never given up")
    }

    /// As [`SizeSweep::new`], but gives up (`None`) when `give_up` says so: it is asked
    /// before each size's buffers are built, which for large sizes takes a while.
    pub fn new_unless(
        ep: &mut Endpoint,
        rank: usize,
        ranks: usize,
        sizes: &[u64],
        seed: u64,
        qp_next: usize,
        give_up: &mut dyn FnMut() -> bool,
    ) -> Option<SizeSweep> {
        let mut runs = Vec::with_capacity(sizes.len());
        // The largest size last: its buffers take as long as all the others together.
        for (i, &size) in sizes.iter().enumerate() {
            if give_up() {
                return None;
            }
            runs.push(RingAllReduce::tagged(
                ep,
                rank,
                ranks,
                (size / 4) as usize,
                seed,
                qp_next,
                i as u16,
            ));
        }
        Some(SizeSweep {
            runs,
            sizes: sizes.to_vec(),
            current: 0,
            start_at: Nanos::ZERO,
            started: false,
        })
    }

    /// Starts at `at` instead of when the run starts.
    pub fn starting_at(mut self, at: Nanos) -> SizeSweep {
        self.start_at = at;
        self
    }

    /// When it starts.
    pub fn start_at(&self) -> Nanos {
        self.start_at
    }

    /// Starts at `at` (before the run starts).
    pub fn set_start(&mut self, at: Nanos) {
        self.start_at = at;
    }

    /// How many sizes are done on this rank.
    pub fn finished(&self) -> usize {
        self.current
    }

    /// How many sizes there are.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// True when there is no size at all.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// When queued work of any size became due, if there is any.
    pub fn work_due(&self) -> Option<Nanos> {
        self.runs.iter().filter_map(RingAllReduce::work_due).min()
    }

    /// This rank's part of every size.
    pub fn results(&self, ep: &Endpoint) -> Vec<RankResult> {
        self.runs.iter().map(|r| r.result(ep)).collect()
    }

    /// This rank's part of size number `k`, if there is one.
    pub fn result(&self, k: usize, ep: &Endpoint) -> Option<RankResult> {
        self.runs.get(k).map(|r| r.result(ep))
    }

    /// Each size with its run.
    pub fn runs(&self) -> impl Iterator<Item = (u64, &RingAllReduce)> {
        self.sizes.iter().copied().zip(&self.runs)
    }

    fn advance(&mut self, now: Nanos, ep: &mut Endpoint) {
        while self.current < self.runs.len() && self.runs[self.current].done() {
            self.current += 1;
            if let Some(next) = self.runs.get_mut(self.current) {
                next.start(now, ep);
            }
        }
    }
}

impl Application for SizeSweep {
    fn start(&mut self, now: Nanos, ep: &mut Endpoint) {
        if now >= self.start_at && !self.started {
            self.started = true;
            if let Some(first) = self.runs.first_mut() {
                first.start(now, ep);
            }
            self.advance(now, ep);
        }
    }

    fn on_completion(&mut self, now: Nanos, ep: &mut Endpoint, completion: Completion) {
        let tag = match completion {
            Completion::Sent { wr_id, .. } | Completion::Failed { wr_id, .. } => {
                super::allreduce::tag_of_wr_id(wr_id)
            }
            Completion::Received { imm, .. } => super::allreduce::tag_of_imm(imm),
        };
        if let Some(run) = self.runs.get_mut(tag) {
            run.on_completion(now, ep, completion);
        }
        if self.started {
            self.advance(now, ep);
        }
    }

    fn done(&self) -> bool {
        self.started && self.current >= self.runs.len()
    }

    fn deadline(&self) -> Option<Nanos> {
        let start = (!self.started).then_some(self.start_at);
        crate::time::earliest(start, self.work_due())
    }

    fn on_timeout(&mut self, now: Nanos, ep: &mut Endpoint) {
        // Work of any size (data of a size not started yet is still reduced and passed on).
        for run in &mut self.runs {
            if run.work_due().is_some_and(|t| t <= now) {
                run.run_work(now, ep);
            }
        }
        self.start(now, ep);
        if self.started {
            self.advance(now, ep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_nccl_tests() {
        assert_eq!(sizes(8192, 65536, 2).unwrap(), [8192, 16384, 32768, 65536]);
        assert_eq!(sizes(8, 100, 3).unwrap(), [8, 24, 72]);
        assert_eq!(sizes(4, 4, 2).unwrap(), [4]);
        // Like nccl-tests, the largest size need not be one of the sizes.
        assert_eq!(sizes(8, 1000, 10).unwrap(), [8, 80, 800]);
        // A factor of 2^62 once wrapped to 0 and looped until memory ran out.
        assert_eq!(sizes(4, 1 << 30, 1 << 62).unwrap(), [4]);
        assert_eq!(sizes(4, 1 << 30, u64::MAX).unwrap(), [4]);
        assert_eq!(sizes(4, 1 << 30, 2).unwrap().len(), 29);
    }

    #[test]
    fn bad_sweeps_are_refused() {
        assert_eq!(sizes(6, 64, 2), Err(SizeSweepError::Size(6)));
        assert_eq!(sizes(0, 64, 2), Err(SizeSweepError::Size(0)));
        assert_eq!(sizes(8, 2 << 30, 2), Err(SizeSweepError::Size(2 << 30)));
        assert_eq!(
            sizes(64, 8, 2),
            Err(SizeSweepError::Order { min: 64, max: 8 })
        );
        assert_eq!(sizes(8, 64, 1), Err(SizeSweepError::Factor(1)));
    }
}

//! Expected values of the conformance procedures, from the configuration and the buffer
//! rules of docs/qos.md alone: a lone priority group on an otherwise empty switch, charged
//! frame by frame (reserve, then shared up to the XOFF threshold, then headroom), with the
//! dynamic threshold alpha × free shared pool (alpha in steps of 1/65536, rounded down).
//! Nothing here runs the switch.

use crate::config::{QueueLimit, SwitchConfig, XoffRule};

/// alpha × `free`, with alpha in steps of 2^-16 and the product rounded down, as
/// docs/qos.md states the dynamic threshold.
pub fn alpha_of(alpha: f64, free: u64) -> u64 {
    let fixed = (alpha * 65536.0).round() as u128;
    u64::try_from((u128::from(free) * fixed) >> 16).unwrap_or(u64::MAX)
}

/// The most frames a bench procedure sends to fill a buffer (about 1 GB of 1 KiB frames):
/// a larger buffer is beyond the bench, and its checks are skipped, not run for hours.
pub const MAX_FILL_FRAMES: u64 = 1_000_000;

/// A lossless PG filling with frames of one size while its egress is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fill {
    /// The frame (counted from 1) whose arrival reaches the XOFF point.
    pub trigger_frames: u64,
    /// Shared bytes of the PG after it.
    pub shared_bytes: u64,
    /// Headroom bytes after it (the part of the trigger frame above the threshold).
    pub headroom_bytes: u64,
    /// Shared bytes of the PG before it: what it keeps when the trigger frame's part above
    /// the threshold does not fit the headroom, and the frame is dropped.
    pub shared_before_bytes: u64,
    /// The PG's reserve.
    pub reserve_bytes: u64,
}

/// The XOFF threshold of lossless PG `pg` with `shared_used` bytes of the pool taken.
fn xoff_threshold(cfg: &SwitchConfig, pg: usize, shared_used: u64) -> u64 {
    match cfg.pgs[pg].xoff {
        XoffRule::Static { xoff_bytes, .. } => xoff_bytes,
        XoffRule::Dynamic { alpha, .. } => {
            alpha_of(alpha, cfg.shared_bytes.saturating_sub(shared_used))
        }
    }
}

/// The XON threshold at `shared_used`.
fn xon_threshold(cfg: &SwitchConfig, pg: usize, shared_used: u64) -> u64 {
    match cfg.pgs[pg].xoff {
        XoffRule::Static { xon_bytes, .. } => xon_bytes,
        XoffRule::Dynamic {
            xon_offset_bytes, ..
        } => xoff_threshold(cfg, pg, shared_used).saturating_sub(xon_offset_bytes),
    }
}

/// Where lossless PG `pg`, alone in the buffer and receiving frames of `len` bytes, sends
/// XOFF. After n frames the PG holds c = n × len − reserve beyond its reserve; the shared
/// part is min(c, the threshold before the frame, the pool), and XOFF comes with the first
/// frame that spills into headroom or brings the shared part to the threshold. `None`
/// when no number of frames up to [`MAX_FILL_FRAMES`] would.
pub fn fill(cfg: &SwitchConfig, pg: usize, len: u64) -> Option<Fill> {
    let reserve = cfg.pgs[pg].reserve_bytes;
    let limit = ((reserve + cfg.shared_bytes) / len.max(1) + 2).min(MAX_FILL_FRAMES);
    let mut before = 0u64; // shared bytes before frame n
    for n in 1..=limit {
        let c = (n * len).saturating_sub(reserve);
        if c == 0 {
            continue;
        }
        let cap = xoff_threshold(cfg, pg, before).min(cfg.shared_bytes);
        let shared = c.min(cap.max(before));
        let headroom = c - shared;
        if headroom > 0 || shared >= xoff_threshold(cfg, pg, shared) {
            return Some(Fill {
                trigger_frames: n,
                shared_bytes: shared,
                headroom_bytes: headroom,
                shared_before_bytes: before,
                reserve_bytes: reserve,
            });
        }
        before = shared;
    }
    None
}

impl Fill {
    /// The trigger frame that brings the PG exactly to its XOFF point, after
    /// `trigger_frames − 1` frames of `len` bytes: its length, and the bytes of it that
    /// still spill into headroom. A frame of `len` may overshoot the threshold by up to a
    /// frame, and the switch, which decides once the frame is in, holds that overshoot in
    /// headroom although it arrived before the decision; the IEEE delay model starts when
    /// the threshold is reached. RoCE test frames grow in 4-byte steps from 62 bytes, so
    /// at most 3 bytes (or, when less than 62 would reach the threshold, 61) still spill.
    pub fn exact_trigger(&self, cfg: &SwitchConfig, pg: usize, len: u64) -> (u64, u64) {
        if self.headroom_bytes == 0 {
            return (len, 0);
        }
        // What the trigger frame can take below the threshold (the reserve's rest and
        // shared space up to it): the shared part ends at the threshold itself.
        let room = len - self.headroom_bytes;
        let step = super::bench::roce_len_at_most(room as usize) as u64;
        let last = if step < room { step + 4 } else { step }.clamp(62, len);
        let spill = last.saturating_sub(room);
        if spill == 0 && self.shared_bytes < xoff_threshold(cfg, pg, self.shared_bytes) {
            // Reaching the threshold exactly does not trigger (not a rule rocelab has).
            return (len, self.headroom_bytes);
        }
        (last, spill)
    }

    /// Frames the PG holds before the first ingress drop, with headroom `headroom` bytes:
    /// after XOFF the threshold stays at or below the shared part, so every later frame
    /// goes to headroom while it fits whole.
    pub fn frames_that_fit(&self, headroom: u64, len: u64) -> u64 {
        match headroom.checked_sub(self.headroom_bytes) {
            Some(room) => self.trigger_frames + room / len.max(1),
            None => self.trigger_frames - 1,
        }
    }

    /// The departure (counted from 1) that brings the PG, filled to exactly its trigger
    /// frame, back to XON once its egress opens: departing bytes empty the headroom first,
    /// then the shared part; XON needs headroom 0 and shared use at or below the XON
    /// threshold. With a headroom of `headroom_size` bytes too small for the trigger
    /// frame's spill, that frame was dropped and the PG starts from the shared part before
    /// it.
    pub fn xon_departure(
        &self,
        cfg: &SwitchConfig,
        pg: usize,
        len: u64,
        headroom_size: u64,
    ) -> u64 {
        let (shared0, headroom0) = if headroom_size < self.headroom_bytes {
            (self.shared_before_bytes, 0)
        } else {
            (self.shared_bytes, self.headroom_bytes)
        };
        for k in 1..=self.trigger_frames {
            let gone = k * len;
            let headroom = headroom0.saturating_sub(gone);
            let shared = shared0.saturating_sub(gone.saturating_sub(headroom0));
            if headroom == 0 && shared <= xon_threshold(cfg, pg, shared) {
                return k;
            }
        }
        self.trigger_frames
    }
}

/// Frames of `len` bytes a lossy class (PG `pg`, egress queue `queue`) holds, alone in the
/// buffer, before its first drop: the next frame is tail-dropped when the queue's depth
/// plus it would pass the lossy queue limit (reserve + static limit or alpha × free
/// pool), or dropped at ingress when the pool cannot take its shared part. `None` beyond
/// [`MAX_FILL_FRAMES`].
pub fn lossy_frames_that_fit(cfg: &SwitchConfig, pg: usize, len: u64) -> Option<u64> {
    let reserve = cfg.pgs[pg].reserve_bytes;
    let limit_at = |used: u64| {
        cfg.queue_reserve_bytes
            .saturating_add(match cfg.queue_limit {
                QueueLimit::Static(b) => b,
                QueueLimit::Dynamic(alpha) => {
                    alpha_of(alpha, cfg.shared_bytes.saturating_sub(used))
                }
            })
    };
    let most = ((reserve + cfg.shared_bytes) / len.max(1) + 1).min(MAX_FILL_FRAMES);
    for n in 0..most {
        let depth = n * len;
        let used = depth.saturating_sub(reserve);
        let next_used = (depth + len).saturating_sub(reserve);
        if depth + len > limit_at(used) || next_used > cfg.shared_bytes {
            return Some(n);
        }
    }
    None
}

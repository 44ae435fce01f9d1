//! The shared-buffer MMU: ingress priority-group accounting (guaranteed reserve, shared pool,
//! headroom), the XOFF / XON decisions of lossless groups, and the limits of lossy egress
//! queues.
//!
//! A frame's bytes are charged to its ingress PG in order: the PG's reserve, then the
//! shared pool up to the PG's XOFF threshold, then (lossless PGs only) the PG's headroom.
//! A frame that does not fit whole is dropped (ingress overflow) and charges nothing.
//! Departing bytes are returned in the opposite order, headroom first, then shared, then
//! reserve, as an MMU's PG counters do: the PG's total stays exact, and a PG that spilled
//! into headroom empties it before anything else. Thresholds are static bytes or dynamic:
//! alpha × the free shared pool, evaluated as each frame arrives (Choudhury and Hahne's
//! dynamic threshold, Broadcom "dynamic_th").

use crate::config::{CLASSES, PgConfig, QueueLimit, SwitchConfig, XoffRule};

/// Occupancy and PFC state of one ingress priority group. Its watermarks are the
/// ingress port's counters' ([`ClassCounters`](super::ClassCounters)).
#[derive(Debug, Clone, Copy, Default)]
pub struct PgState {
    /// Reserve bytes in use.
    pub reserve: u64,
    /// Shared bytes in use.
    pub shared: u64,
    /// Headroom bytes in use.
    pub headroom: u64,
    /// Bytes held past the headroom because they arrived before the PG's pause could
    /// leave ([`Mmu::charge_late`]): a live switch's thread that ran late.
    pub late: u64,
    /// XOFF has been sent and not yet lifted by XON.
    pub xoff: bool,
}

/// The buffer of the whole switch. In C's layout, the pool's use and the PGs' first: every
/// frame reads them.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct Mmu {
    shared_size: u64,
    shared_used: u64,
    /// Per port, per PG.
    pgs: Vec<[Pg; CLASSES]>,
    queue_reserve: u64,
    queue_alpha_fixed: u64,
    queue_limit: QueueLimit,
    /// Dynamic alphas in 1/65536ths, so the per-frame limits are integer arithmetic.
    pg_alpha_fixed: [u64; CLASSES],
    pg_cfg: [PgConfig; CLASSES],
}

/// A PG's state, its headroom's size and its peak: what a frame charged to it reads and
/// writes, on one cache line (a switch's ports are more than its cache holds).
#[derive(Debug, Clone)]
#[repr(align(64))]
struct Pg {
    state: PgState,
    headroom_size: u64,
    /// The most shared buffer it used since a time-series recorder last read it (a
    /// `Cell`: reading starts the next interval, through the read-only probe).
    peak: std::cell::Cell<u64>,
}

/// Alphas are kept as multiples of 2^-16.
const ALPHA_SHIFT: u32 = 16;

/// Alpha in 1/65536ths (validated alphas are 1/128 to 8, so 512 to 524 288; the float
/// to integer cast saturates for anything else).
fn fixed(alpha: f64) -> u64 {
    (alpha * f64::from(1u32 << ALPHA_SHIFT)).round() as u64
}

impl Mmu {
    /// An empty buffer for the ports of `cfg`.
    pub fn new(cfg: &SwitchConfig) -> Mmu {
        let pgs = cfg
            .ports
            .iter()
            .map(|port| {
                std::array::from_fn(|pg| Pg {
                    state: PgState::default(),
                    peak: std::cell::Cell::new(0),
                    headroom_size: if cfg.pgs[pg].lossless {
                        cfg.headroom_bytes(pg, port)
                    } else {
                        0
                    },
                })
            })
            .collect();
        Mmu {
            shared_size: cfg.shared_bytes,
            shared_used: 0,
            pg_cfg: cfg.pgs,
            pgs,
            queue_limit: cfg.queue_limit,
            queue_reserve: cfg.queue_reserve_bytes,
            pg_alpha_fixed: cfg.pgs.map(|pg| match pg.xoff {
                XoffRule::Dynamic { alpha, .. } => fixed(alpha),
                XoffRule::Static { .. } => 0,
            }),
            queue_alpha_fixed: match cfg.queue_limit {
                QueueLimit::Dynamic(alpha) => fixed(alpha),
                QueueLimit::Static(_) => 0,
            },
        }
    }

    fn free_shared(&self) -> u64 {
        self.shared_size - self.shared_used
    }

    /// alpha × the free shared pool, with alpha in 1/65536ths. The product of two u64
    /// fits a u128; a result beyond u64 saturates instead of being truncated.
    #[inline]
    fn dynamic_limit(&self, alpha_fixed: u64) -> u64 {
        let limit = (u128::from(self.free_shared()) * u128::from(alpha_fixed)) >> ALPHA_SHIFT;
        u64::try_from(limit).unwrap_or(u64::MAX)
    }

    /// The shared-pool bytes PG `pg` may hold now before XOFF.
    #[inline]
    pub fn xoff_threshold(&self, pg: usize) -> u64 {
        match self.pg_cfg[pg].xoff {
            XoffRule::Static { xoff_bytes, .. } => xoff_bytes,
            XoffRule::Dynamic { .. } => self.dynamic_limit(self.pg_alpha_fixed[pg]),
        }
    }

    /// The shared use at or below which a paused PG sends XON.
    pub fn xon_threshold(&self, pg: usize) -> u64 {
        match self.pg_cfg[pg].xoff {
            XoffRule::Static { xon_bytes, .. } => xon_bytes,
            XoffRule::Dynamic {
                xon_offset_bytes, ..
            } => self.xoff_threshold(pg).saturating_sub(xon_offset_bytes),
        }
    }

    /// The headroom of `pg` on `port`.
    pub fn headroom_size(&self, port: usize, pg: usize) -> u64 {
        self.pgs[port][pg].headroom_size
    }

    /// The state of one PG.
    pub fn pg(&self, port: usize, pg: usize) -> &PgState {
        &self.pgs[port][pg].state
    }

    /// The most shared buffer PG `pg` of `port` used since a recorder last read it.
    pub fn pg_peak(&self, port: usize, pg: usize) -> &std::cell::Cell<u64> {
        &self.pgs[port][pg].peak
    }

    /// Shared pool in use, bytes.
    pub fn shared_used(&self) -> u64 {
        self.shared_used
    }

    /// Charges `len` bytes to `pg` of `port`; `false` when they do not fit (the frame is
    /// dropped and nothing is charged).
    #[inline]
    pub fn charge(&mut self, port: usize, pg: usize, len: u32) -> bool {
        let cfg = self.pg_cfg[pg];
        // Lossy PGs take shared space as long as the pool has it; their limits are the
        // egress queues'.
        let threshold = if cfg.lossless {
            self.xoff_threshold(pg)
        } else {
            u64::MAX
        };
        let free = self.free_shared();
        let headroom_size = self.pgs[port][pg].headroom_size;
        let state = &mut self.pgs[port][pg].state;
        let mut rest = u64::from(len);
        let reserve = rest.min(cfg.reserve_bytes.saturating_sub(state.reserve));
        rest -= reserve;
        let shared = rest.min(threshold.saturating_sub(state.shared)).min(free);
        rest -= shared;
        let headroom = rest;
        if headroom > 0
            && (!cfg.lossless || state.headroom.saturating_add(headroom) > headroom_size)
        {
            return false;
        }
        state.reserve += reserve;
        state.shared += shared;
        state.headroom += headroom;
        self.shared_used += shared;
        true
    }

    /// Holds `len` bytes of a lossless `pg` of `port` past its full headroom: bytes that
    /// arrived before the PG's pause could leave. A real switch's peer would still have
    /// them (it would have seen the pause in time); a live switch whose thread ran late
    /// let the peer send them, and keeps them rather than dropping frames the network it
    /// emulates would never have received.
    pub fn charge_late(&mut self, port: usize, pg: usize, len: u32) {
        self.pgs[port][pg].state.late += u64::from(len);
    }

    /// Returns `len` departing bytes of `pg` on `port`: late bytes first, then headroom,
    /// then shared, then reserve.
    #[inline]
    pub fn release(&mut self, port: usize, pg: usize, len: u32) {
        let state = &mut self.pgs[port][pg].state;
        let mut rest = u64::from(len);
        let late = rest.min(state.late);
        state.late -= late;
        rest -= late;
        let headroom = rest.min(state.headroom);
        state.headroom -= headroom;
        rest -= headroom;
        let shared = rest.min(state.shared);
        state.shared -= shared;
        rest -= shared;
        state.reserve -= rest.min(state.reserve);
        self.shared_used -= shared;
    }

    /// True when a lossless PG not yet paused has reached its XOFF point: its shared use is
    /// at the threshold, or it has spilled into headroom.
    #[inline]
    pub fn needs_xoff(&self, port: usize, pg: usize) -> bool {
        let s = &self.pgs[port][pg].state;
        self.pg_cfg[pg].lossless
            && !s.xoff
            && (s.headroom > 0 || s.shared >= self.xoff_threshold(pg))
    }

    /// True when a paused PG has drained to its XON point (headroom empty too).
    #[inline]
    pub fn needs_xon(&self, port: usize, pg: usize) -> bool {
        let s = &self.pgs[port][pg].state;
        s.xoff && s.headroom == 0 && s.late == 0 && s.shared <= self.xon_threshold(pg)
    }

    /// Records that XOFF was sent (`true`) or lifted (`false`).
    pub fn set_xoff(&mut self, port: usize, pg: usize, xoff: bool) {
        self.pgs[port][pg].state.xoff = xoff;
    }

    /// The byte limit of a lossy egress queue now: its reserve plus the static limit or
    /// alpha × the free shared pool.
    #[inline]
    pub fn lossy_queue_limit(&self) -> u64 {
        self.queue_reserve.saturating_add(match self.queue_limit {
            QueueLimit::Static(bytes) => bytes,
            QueueLimit::Dynamic(_) => self.dynamic_limit(self.queue_alpha_fixed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool of 2^62 bytes with alpha 4 gives a limit of 2^64, which does not fit a u64:
    /// it saturates to u64::MAX, not truncated to 0 (a pool that behaved like 1 byte).
    #[test]
    fn dynamic_limit_saturates_instead_of_truncating() {
        let mut cfg = SwitchConfig::preset("default").unwrap();
        cfg.shared_bytes = 1 << 62;
        cfg.queue_limit = QueueLimit::Dynamic(4.0);
        for pg in &mut cfg.pgs {
            pg.xoff = XoffRule::Dynamic {
                alpha: 4.0,
                xon_offset_bytes: 0,
            };
        }
        cfg.ports = vec![cfg.port_defaults.clone()];
        let mmu = Mmu::new(&cfg);
        assert_eq!(mmu.xoff_threshold(3), u64::MAX);
        assert_eq!(mmu.lossy_queue_limit(), u64::MAX);
        let mut small = cfg.clone();
        small.shared_bytes = 1 << 30;
        assert_eq!(Mmu::new(&small).xoff_threshold(3), 1 << 32);
        // At the configured cap, 1 TiB, alpha 8 gives exactly 8 TiB.
        let mut cap = SwitchConfig::from_toml(
            "[buffer]\nshared_bytes = 1099511627776\npg_alpha = 8.0\n[pfc]\nlossless = [3]\n\
             [classify]\ndscp_to_tc = [[26, 3]]\n[queue.3]\n",
        )
        .unwrap();
        cap.ports = vec![cap.port_defaults.clone()];
        assert_eq!(Mmu::new(&cap).xoff_threshold(3), 8 << 40);
    }
}

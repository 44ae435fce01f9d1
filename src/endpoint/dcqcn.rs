//! DCQCN at the endpoints (Zhu et al., SIGCOMM 2015; docs/dcqcn.md): the reaction
//! point that cuts and recovers a QP's rate, and the notification point that turns CE
//! marks into CNPs.

use crate::config::endpoint::{ClampTarget, CnpMode, DcqcnConfig, HyperIncrease};
use crate::time::Nanos;

/// The reaction point of one QP: current rate Rc, target rate Rt, alpha, and the increase
/// counters.
///
/// Alpha's decay timer K is kept lazily (alpha at any moment follows from the last CNP, or
/// the QP's first packet, and the whole K periods since), so an idle QP needs no timer; the
/// rate timer T runs only while there is something to recover.
#[derive(Debug, Clone)]
pub struct ReactionPoint {
    cfg: DcqcnConfig,
    line_bps: u64,
    rc_bps: f64,
    rt_bps: f64,
    /// Alpha right after the last CNP (or 1 at start), and when that was: the last CNP,
    /// or the QP's first packet; `None` before either (alpha has not started to decay).
    alpha_at_ref: f64,
    alpha_ref: Option<Nanos>,
    i_timer: u32,
    i_bytes: u32,
    bytes_since: u64,
    rate_deadline: Option<Nanos>,
    last_cut: Option<Nanos>,
    timer_increase_since_cut: bool,
    /// CNPs that cut the rate.
    pub cuts: u64,
    /// On InfiniBand with congestion control: the table-driven agent that takes DCQCN's
    /// place (see [`super::ibcc`]).
    cca: Option<Box<super::ibcc::Cca>>,
}

impl ReactionPoint {
    /// A QP starting at line rate with alpha 1.
    pub fn new(cfg: DcqcnConfig, line_bps: u64) -> ReactionPoint {
        ReactionPoint {
            cfg,
            line_bps,
            rc_bps: line_bps as f64,
            rt_bps: line_bps as f64,
            alpha_at_ref: 1.0,
            alpha_ref: None,
            i_timer: 0,
            i_bytes: 0,
            bytes_since: 0,
            rate_deadline: None,
            last_cut: None,
            timer_increase_since_cut: false,
            cuts: 0,
            cca: None,
        }
    }

    /// A QP whose rate InfiniBand congestion control sets, from its table, instead of
    /// DCQCN.
    pub fn with_ib_cc(
        cfg: DcqcnConfig,
        line_bps: u64,
        cc: super::ibcc::IbCcConfig,
    ) -> ReactionPoint {
        ReactionPoint {
            cca: Some(Box::new(super::ibcc::Cca::new(cc))),
            ..ReactionPoint::new(cfg, line_bps)
        }
    }

    /// The sending rate now, bit/s (line rate when DCQCN is off).
    pub fn rate_bps(&self) -> u64 {
        if let Some(c) = &self.cca {
            return c.rate_bps(self.line_bps);
        }
        if self.cfg.enabled {
            self.rc_bps as u64
        } else {
            self.line_bps
        }
    }

    /// The target rate, bit/s.
    pub fn target_bps(&self) -> u64 {
        match &self.cca {
            Some(c) => c.rate_bps(self.line_bps),
            None => self.rt_bps as u64,
        }
    }

    /// Alpha at `now`: (1 − g) per whole K period since the last CNP, or since the QP's
    /// first packet before any CNP.
    pub fn alpha(&self, now: Nanos) -> f64 {
        let Some(since) = self.alpha_ref else {
            return self.alpha_at_ref;
        };
        let k = self.cfg.alpha_timer().0.max(1);
        let periods = now.saturating_sub(since).0 / k;
        self.alpha_at_ref * (1.0 - self.cfg.g).powi(periods.min(i32::MAX as u64) as i32)
    }

    /// A CNP for this QP arrived at `now`: cut.
    pub fn on_cnp(&mut self, now: Nanos) {
        if let Some(c) = &mut self.cca {
            c.on_becn(now);
            self.cuts += 1;
            return;
        }
        if !self.cfg.enabled {
            return;
        }
        let min_gap = self.cfg.min_cut_interval();
        if min_gap > Nanos::ZERO
            && self
                .last_cut
                .is_some_and(|t| now.saturating_sub(t) < min_gap)
        {
            return;
        }
        let alpha = self.alpha(now);
        let clamp = match self.cfg.clamp_target {
            ClampTarget::Always => true,
            ClampTarget::AfterTimerIncrease => {
                self.timer_increase_since_cut || self.last_cut.is_none()
            }
        };
        if clamp {
            self.rt_bps = self.rc_bps;
        }
        // Rmin above the line rate (which validation refuses) would raise Rc above it.
        let rmin = self.cfg.rmin().min(self.line_bps) as f64;
        self.rc_bps = (self.rc_bps * (1.0 - alpha / 2.0)).max(rmin);
        self.alpha_at_ref = (1.0 - self.cfg.g) * alpha + self.cfg.g;
        self.alpha_ref = Some(now);
        self.i_timer = 0;
        self.i_bytes = 0;
        self.bytes_since = 0;
        self.rate_deadline = Some(now.saturating_add(self.cfg.rate_timer()));
        self.last_cut = Some(now);
        self.timer_increase_since_cut = false;
        self.cuts += 1;
    }

    fn recovering(&self) -> bool {
        self.rc_bps < self.line_bps as f64 || self.rt_bps < self.line_bps as f64
    }

    /// `bytes` were sent at `now`: every B bytes is an increase event. The QP's first
    /// packet starts alpha's clock: the paper's QP starts with alpha = 1 when it starts,
    /// not when the driver's clock did.
    pub fn on_sent(&mut self, now: Nanos, bytes: u64) {
        self.alpha_ref.get_or_insert(now);
        let b = self.cfg.byte_counter_bytes;
        if self.cca.is_some() || !self.cfg.enabled || b == 0 || !self.recovering() {
            return;
        }
        self.bytes_since = self.bytes_since.saturating_add(bytes);
        while self.bytes_since >= b {
            self.bytes_since -= b;
            self.i_bytes = self.i_bytes.saturating_add(1);
            self.increase();
        }
    }

    /// The next rate-timer event, if recovering.
    pub fn deadline(&self) -> Option<Nanos> {
        match &self.cca {
            Some(c) => c.deadline(),
            None => self.rate_deadline,
        }
    }

    /// Runs the rate-timer events due by `now`.
    pub fn on_timeout(&mut self, now: Nanos) {
        if let Some(c) = &mut self.cca {
            c.on_timeout(now);
            return;
        }
        while let Some(t) = self.rate_deadline.filter(|&t| t <= now) {
            self.i_timer = self.i_timer.saturating_add(1);
            self.timer_increase_since_cut = true;
            self.increase();
            // At the end of time the timer stops rather than wrap (or fire forever at
            // Nanos::MAX).
            let next = t.saturating_add(self.cfg.rate_timer());
            self.rate_deadline = (self.recovering() && next > t).then_some(next);
        }
    }

    fn increase(&mut self) {
        let f = self.cfg.fast_recovery_steps;
        let phase = if self.cfg.byte_counter_bytes == 0 {
            // Without a byte counter the timer alone sets the phase, as the paper's state
            // machine (fast recovery while max < F, hyper once min > F, additive between)
            // reads with one counter, and as HPCC's timer-only DCQCN does: one additive
            // step at iT = F, hyper after. Taking the missing counter as 0 would keep the
            // QP additive for ever.
            match self.i_timer {
                i if i < f => Phase::FastRecovery,
                i if i == f => Phase::Additive,
                // i > f here, so no underflow.
                i => Phase::Hyper(i - f),
            }
        } else {
            // The authors' ns-3 form: hyper once neither counter is below F.
            let (lo, hi) = (
                self.i_timer.min(self.i_bytes),
                self.i_timer.max(self.i_bytes),
            );
            if hi < f {
                Phase::FastRecovery
            } else if lo >= f {
                // lo ≥ f here, so no underflow.
                Phase::Hyper(lo - f + 1)
            } else {
                Phase::Additive
            }
        };
        match phase {
            // Fast recovery: Rc halfway back to the target, which stays.
            Phase::FastRecovery => {}
            Phase::Additive => self.rt_bps += self.cfg.rai() as f64,
            Phase::Hyper(i) => {
                let steps = match self.cfg.hyper_increase {
                    HyperIncrease::Linear => f64::from(i),
                    HyperIncrease::Constant => 1.0,
                };
                self.rt_bps += self.cfg.rhai() as f64 * steps;
            }
        }
        let line = self.line_bps as f64;
        self.rt_bps = self.rt_bps.min(line);
        self.rc_bps = ((self.rt_bps + self.rc_bps) / 2.0).min(line);
    }
}

/// The phase of a rate-increase event.
enum Phase {
    FastRecovery,
    Additive,
    /// Hyper increase, the i-th step of it (the linear form adds i × Rhai).
    Hyper(u32),
}

/// The notification point of one QP: at most one CNP per N. A CE mark inside the window
/// is answered by one CNP when the window ends ([`CnpMode::Deferred`]) or ignored
/// ([`CnpMode::FirstMark`], as the paper's text has it; its fluid model assumes the first).
#[derive(Debug, Clone, Copy, Default)]
pub struct NotificationPoint {
    last_sent: Option<Nanos>,
    pending: bool,
    mode: CnpMode,
}

impl NotificationPoint {
    /// A notification point that treats marks inside its window as `mode` says.
    pub fn new(mode: CnpMode) -> NotificationPoint {
        NotificationPoint {
            mode,
            ..NotificationPoint::default()
        }
    }

    /// A CE-marked packet arrived at `now`: `true` if a CNP goes now.
    pub fn on_ce(&mut self, now: Nanos, interval: Nanos) -> bool {
        match self.last_sent {
            Some(t) if now.saturating_sub(t) < interval => {
                self.pending = self.mode == CnpMode::Deferred;
                false
            }
            _ => {
                self.last_sent = Some(now);
                self.pending = false;
                true
            }
        }
    }

    /// When the deferred CNP is due, if one is.
    pub fn deadline(&self, interval: Nanos) -> Option<Nanos> {
        self.pending
            .then(|| self.last_sent.unwrap_or_default().saturating_add(interval))
    }

    /// `true` if the deferred CNP goes at `now`.
    pub fn on_timeout(&mut self, now: Nanos, interval: Nanos) -> bool {
        if self.deadline(interval).is_some_and(|t| t <= now) {
            self.pending = false;
            self.last_sent = Some(now);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G100: u64 = 100_000_000_000;

    fn rp() -> ReactionPoint {
        ReactionPoint::new(DcqcnConfig::default(), G100)
    }

    /// One cut with alpha = 1 at 100 Gb/s gives 50 Gb/s, target 100; fast
    /// recovery halves the gap at each T event: after 5 events 100 − 50/2^5 = 98.4375.
    #[test]
    fn one_cut_then_five_fast_recovery_steps() {
        let mut r = rp();
        r.on_cnp(Nanos(0));
        assert_eq!(r.rate_bps(), 50_000_000_000);
        assert_eq!(r.target_bps(), G100);
        let t = DcqcnConfig::default().rate_timer();
        for k in 1..=5 {
            r.on_timeout(Nanos(t.0 * k));
        }
        assert_eq!(r.rate_bps(), 98_437_500_000);
    }

    /// Alpha with no CNP decays by (1 − g) each K: with g = 1/256 it halves after
    /// ln 2 / −ln(1 − 1/256) = 177.1 periods, so it is just above 1/2 after 177 whole
    /// periods and below after 178.
    #[test]
    fn alpha_halves_in_177_periods() {
        let mut r = rp();
        r.on_cnp(Nanos(0)); // alpha = (1 - g) + g = 1
        let k = DcqcnConfig::default().alpha_timer().0;
        let periods = 2f64.ln() / -(1.0f64 - 1.0 / 256.0).ln();
        assert!((periods - 177.1).abs() < 0.05, "{periods}");
        assert!(r.alpha(Nanos(177 * k)) > 0.5);
        assert!(r.alpha(Nanos(178 * k)) < 0.5);
        assert!(
            r.alpha(Nanos(178 * k - 1)) > 0.5,
            "only whole periods count"
        );
        assert!((r.alpha(Nanos(177 * k)) - (1.0f64 - 1.0 / 256.0).powi(177)).abs() < 1e-12);
    }

    /// A QP starts with alpha = 1 when it starts (the paper's RP: Rc = Rt = line rate,
    /// alpha 1): alpha stays 1 until the QP's first packet, and decays per whole K from
    /// there. A QP that first sends at 10 ms and gets a CNP less than K later cuts with
    /// alpha 1, from 100 to 50 Gb/s; 177 whole periods after its first packet alpha is
    /// (1 − 1/256)^177, just above ½, as after a CNP.
    #[test]
    fn alphas_clock_starts_at_the_qps_first_packet() {
        let k = DcqcnConfig::default().alpha_timer().0;
        let start = Nanos::from_millis(10);
        let mut r = rp();
        assert_eq!(r.alpha(start), 1.0, "no decay before the QP sends");
        r.on_sent(start, 1_000);
        r.on_sent(Nanos(start.0 + 3 * k), 1_000);
        assert_eq!(r.alpha(Nanos(start.0 + k - 1)), 1.0);
        // Within rounding: debug and release builds round powi's steps differently.
        let decayed = r.alpha(Nanos(start.0 + 177 * k));
        assert!(
            (decayed - (1.0f64 - 1.0 / 256.0).powi(177)).abs() < 1e-12,
            "decay counts from the first packet, not the later ones: {decayed}"
        );
        r.on_cnp(Nanos(start.0 + 8_000));
        assert_eq!(r.rate_bps(), 50_000_000_000);
    }

    /// After F timer events, increases are additive (Rai), and once both counters reach F,
    /// hyper (Rhai × (min − F + 1), or a constant Rhai).
    #[test]
    fn additive_and_hyper_steps() {
        let cfg = DcqcnConfig {
            byte_counter_bytes: 1_000,
            ..DcqcnConfig::default()
        };
        let mut r = ReactionPoint::new(cfg, G100);
        r.on_cnp(Nanos(0)); // Rc 50, Rt 100
        r.on_cnp(Nanos(1)); // alpha ~1: Rt = 50, Rc = 25
        let (rt0, rc0) = (r.rt_bps, r.rc_bps);
        assert_eq!((rt0, rc0), (50e9, 25e9));
        let t = cfg.rate_timer().0;
        // Five timer events: four fast recovery, then additive (iT = 5 ≥ F, iB = 0 < F).
        for k in 1..=5 {
            r.on_timeout(Nanos(1 + t * k));
        }
        assert_eq!(r.rt_bps, 50e9 + 40e6);
        // Five byte events (iB = 5): both ≥ F: hyper with min − F + 1 = 1, then 2, ...
        let rt_before = r.rt_bps;
        let now = Nanos(1 + t * 5);
        for _ in 0..4 {
            r.on_sent(now, 1_000);
        }
        assert_eq!(r.rt_bps, rt_before + 4.0 * 40e6, "iB 1..4: still additive");
        r.on_sent(now, 1_000); // iB = 5, iT = 5: hyper, 1 × Rhai
        assert_eq!(r.rt_bps, rt_before + 4.0 * 40e6 + 200e6);
        r.on_timeout(Nanos(1 + t * 6)); // iT = 6, iB = 5: min 5: 1 × Rhai
        r.on_sent(Nanos(1 + t * 6), 1_000); // iB = 6: min 6: 2 × Rhai
        assert_eq!(r.rt_bps, rt_before + 4.0 * 40e6 + 200e6 + 200e6 + 400e6);
    }

    /// With the byte counter off (B = 0) the timer alone sets the phase, as in HPCC's
    /// simulator: fast recovery while iT < F, one additive step at iT = F, hyper after.
    /// Expected steps from the rule: F = 1, Rai 20 Mb/s, Rhai 200 Mb/s (HPCC's at 100G):
    /// +20 Mb/s at the first event, +200 Mb/s at each one after; with F = 5 and the
    /// linear form, 4 events of fast recovery, +Rai, then +1, +2, +3 × Rhai.
    #[test]
    fn without_the_byte_counter_the_timer_alone_reaches_hyper_increase() {
        let hpcc = DcqcnConfig {
            byte_counter_bytes: 0,
            fast_recovery_steps: 1,
            rai_mbps: 20.0,
            rhai_mbps: 200.0,
            hyper_increase: HyperIncrease::Constant,
            ..DcqcnConfig::default()
        };
        let mut r = ReactionPoint::new(hpcc, G100);
        r.on_cnp(Nanos(0));
        r.on_cnp(Nanos(1)); // Rt 50 Gb/s: room for the target to grow
        assert_eq!(r.target_bps(), 50_000_000_000);
        let t = hpcc.rate_timer().0;
        let mut targets = Vec::new();
        for k in 1..=4 {
            r.on_timeout(Nanos(1 + t * k));
            r.on_sent(Nanos(1 + t * k), 1_000_000); // no byte events: the counter is off
            targets.push(r.target_bps());
        }
        assert_eq!(
            targets,
            [
                50_020_000_000,
                50_220_000_000,
                50_420_000_000,
                50_620_000_000
            ]
        );

        let linear = DcqcnConfig {
            byte_counter_bytes: 0,
            ..DcqcnConfig::default()
        };
        let mut r = ReactionPoint::new(linear, G100);
        r.on_cnp(Nanos(0));
        r.on_cnp(Nanos(1));
        let t = linear.rate_timer().0;
        let mut targets = Vec::new();
        for k in 1..=8 {
            r.on_timeout(Nanos(1 + t * k));
            targets.push(r.target_bps());
        }
        let (rai, rhai) = (40_000_000, 200_000_000);
        let rt0 = 50_000_000_000;
        assert_eq!(
            targets,
            [
                rt0,
                rt0,
                rt0,
                rt0,
                rt0 + rai,
                rt0 + rai + rhai,
                rt0 + rai + 3 * rhai,
                rt0 + rai + 6 * rhai
            ]
        );
    }

    #[test]
    fn variants_constant_hyper_min_cut_interval_and_rmin() {
        let cfg = DcqcnConfig {
            min_cut_interval_us: 4.0,
            ..DcqcnConfig::default()
        };
        let mut r = ReactionPoint::new(cfg, G100);
        r.on_cnp(Nanos(0));
        r.on_cnp(Nanos(3_999));
        assert_eq!(r.cuts, 1, "a cut within 4 µs of the last is ignored");
        r.on_cnp(Nanos(4_000));
        assert_eq!(r.cuts, 2);
        for i in 0..100 {
            r.on_cnp(Nanos(4_000 * (i + 2)));
        }
        assert_eq!(r.rate_bps(), cfg.rmin(), "never below Rmin");
    }

    /// Review item 1: Rmin above the line rate (refused by validation) cannot lift Rc
    /// above the line, and a rate timer near the end of time stops instead of wrapping.
    #[test]
    fn rmin_above_line_and_the_end_of_time() {
        let cfg = DcqcnConfig {
            rmin_mbps: 1e300,
            ..DcqcnConfig::default()
        };
        let mut r = ReactionPoint::new(cfg, G100);
        r.on_cnp(Nanos(0));
        assert_eq!(r.rate_bps(), G100);
        let cfg = DcqcnConfig {
            rate_timer_us: 1e300,
            ..DcqcnConfig::default()
        };
        let mut r = ReactionPoint::new(cfg, G100);
        r.on_cnp(Nanos(5));
        assert_eq!(r.deadline(), Some(Nanos::MAX));
        r.on_timeout(Nanos::MAX);
        assert_eq!(r.deadline(), None, "no event after the end of time");
        let mut np = NotificationPoint::default();
        assert!(np.on_ce(Nanos(10), Nanos::MAX));
        assert!(!np.on_ce(Nanos(20), Nanos::MAX));
        assert_eq!(np.deadline(Nanos::MAX), Some(Nanos::MAX));
    }

    /// The NP sends at most one CNP per N per QP, and one deferred CNP when the window
    /// ends if CE kept coming.
    #[test]
    fn cnp_spacing() {
        let n = Nanos::from_micros(50);
        let mut np = NotificationPoint::default();
        assert!(np.on_ce(Nanos(0), n));
        assert!(!np.on_ce(Nanos(10_000), n));
        assert!(!np.on_ce(Nanos(20_000), n));
        assert_eq!(np.deadline(n), Some(Nanos(50_000)));
        assert!(!np.on_timeout(Nanos(49_999), n));
        assert!(np.on_timeout(Nanos(50_000), n));
        assert_eq!(np.deadline(n), None);
        assert!(
            !np.on_ce(Nanos(60_000), n),
            "inside the window of the deferred CNP"
        );
        assert!(np.on_timeout(Nanos(100_000), n));
        assert!(np.on_ce(Nanos(200_000), n), "a fresh window");
    }

    /// The paper's NP answers the first mark at once and ignores the others inside the
    /// window: no deferred CNP, and the next mark after the window is answered at once.
    #[test]
    fn first_mark_mode_ignores_marks_inside_the_window() {
        let n = Nanos::from_micros(50);
        let mut np = NotificationPoint::new(CnpMode::FirstMark);
        assert!(np.on_ce(Nanos(0), n));
        assert!(!np.on_ce(Nanos(10_000), n));
        assert!(!np.on_ce(Nanos(49_999), n));
        assert_eq!(np.deadline(n), None, "nothing deferred");
        assert!(!np.on_timeout(Nanos(50_000), n));
        assert!(np.on_ce(Nanos(50_000), n), "the window is over");
    }
}

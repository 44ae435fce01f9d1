//! Congestion control beside DCQCN (docs/congestion-control.md): DCTCP, HPCC, TIMELY and
//! Swift, each a sans-IO state machine per QP. ACKs go in ([`Controller::on_ack`]); a
//! sending rate and a limit on bytes in flight come out. DCQCN stays in [`super::dcqcn`],
//! driven by CNPs and timers.
//!
//! DCTCP, HPCC and TIMELY follow the HPCC simulator (alibaba-edu/High-Precision-Congestion-
//! Control, `simulation/src/point-to-point/model/rdma-hw.cc`), which runs each on an RDMA
//! NIC as a rate with an optional window of BDP × rate / line rate (`VAR_WIN`), and updates
//! once per window of data (an ACK beyond the last update's `snd_nxt`).

use crate::config::endpoint::{
    Cc, DctcpConfig, EndpointConfig, HpccConfig, SwiftConfig, TimelyConfig,
};
use crate::time::Nanos;
use crate::wire::int::{IntHop, MAX_HOPS};

/// What one ACK tells the sender.
#[derive(Debug, Clone, Copy)]
pub struct AckSample<'a> {
    /// When it arrived.
    pub now: Nanos,
    /// Packets acknowledged in all, through this ACK (the oldest unacknowledged PSN's count).
    pub acked: u64,
    /// Packets sent in all (one past the highest PSN's count: `snd_nxt`).
    pub sent: u64,
    /// Packets this ACK acknowledged for the first time.
    pub newly_acked: u64,
    /// The responder saw CE since its last ACK (the ACK's BECN bit: ECN-echo).
    pub ece: bool,
    /// The round trip of the packet it acknowledges, if it was sent once.
    pub rtt: Option<Nanos>,
    /// The switches' telemetry the ACK echoes.
    pub int: &'a [IntHop],
}

/// The fixed facts a controller is sized by.
#[derive(Debug, Clone, Copy)]
pub struct Path {
    /// The NIC's line rate, bit/s.
    pub line_bps: u64,
    /// The fabric's base RTT.
    pub base_rtt: Nanos,
    /// Payload bytes per packet.
    pub mtu: u64,
}

impl Path {
    /// Bytes in flight at line rate over the base RTT.
    pub fn bdp_bytes(&self) -> u64 {
        (u128::from(self.line_bps) * u128::from(self.base_rtt.0) / 8_000_000_000) as u64
    }

    /// The window BDP × rate / line rate, at least one byte (the simulator's `GetWin`).
    fn var_window(&self, rate_bps: u64) -> u64 {
        let w =
            u128::from(self.bdp_bytes()) * u128::from(rate_bps) / u128::from(self.line_bps.max(1));
        (w as u64).max(1)
    }
}

fn mbps(v: f64) -> u64 {
    (v * 1e6).round() as u64
}

/// One QP's congestion control, other than DCQCN.
#[derive(Debug, Clone)]
pub enum Controller {
    /// DCTCP.
    Dctcp(Dctcp),
    /// HPCC.
    Hpcc(Box<Hpcc>),
    /// TIMELY.
    Timely(Timely),
    /// Swift.
    Swift(Swift),
}

impl Controller {
    /// The controller `cfg.cc` names, on `path`; `None` for DCQCN.
    pub fn new(cfg: &EndpointConfig, path: Path) -> Option<Controller> {
        Some(match cfg.cc {
            Cc::Dcqcn => return None,
            Cc::Dctcp => Controller::Dctcp(Dctcp::new(cfg.dctcp, path)),
            Cc::Hpcc => Controller::Hpcc(Box::new(Hpcc::new(cfg.hpcc, path))),
            Cc::Timely => Controller::Timely(Timely::new(cfg.timely, path)),
            Cc::Swift => Controller::Swift(Swift::new(cfg.swift, path, cfg.window_packets)),
        })
    }

    /// The rate the QP's packets are paced at, bit/s.
    pub fn rate_bps(&self) -> u64 {
        match self {
            Controller::Dctcp(c) => c.rate_bps,
            Controller::Hpcc(c) => c.rate_bps,
            Controller::Timely(c) => c.rate_bps,
            Controller::Swift(c) => c.rate_bps(),
        }
    }

    /// The most bytes in flight, if windowed.
    pub fn window_bytes(&self) -> Option<u64> {
        match self {
            Controller::Dctcp(c) => c.cfg.window.then(|| c.path.var_window(c.rate_bps)),
            Controller::Hpcc(c) => Some(if c.cfg.var_window {
                c.path.var_window(c.rate_bps)
            } else {
                c.path.bdp_bytes().max(1)
            }),
            Controller::Timely(c) => c.cfg.window.then(|| c.path.var_window(c.rate_bps)),
            Controller::Swift(c) => Some(c.window_bytes()),
        }
    }

    /// Whether its packets ask the switches for telemetry.
    pub fn wants_int(&self) -> bool {
        matches!(self, Controller::Hpcc(_))
    }

    /// Whether it needs the RTT of each ACK.
    pub fn wants_rtt(&self) -> bool {
        matches!(self, Controller::Timely(_) | Controller::Swift(_))
    }

    /// Its congestion estimate, for reports: DCTCP's alpha, HPCC's U, TIMELY's gradient,
    /// Swift's window in packets.
    pub fn signal(&self) -> f64 {
        match self {
            Controller::Dctcp(c) => c.alpha,
            Controller::Hpcc(c) => c.u,
            Controller::Timely(c) => c.rtt_diff_ns / c.min_rtt_ns,
            Controller::Swift(c) => c.cwnd,
        }
    }

    /// An ACK arrived.
    pub fn on_ack(&mut self, s: &AckSample<'_>) {
        match self {
            Controller::Dctcp(c) => c.on_ack(s),
            Controller::Hpcc(c) => c.on_ack(s),
            Controller::Timely(c) => c.on_ack(s),
            Controller::Swift(c) => c.on_ack(s),
        }
    }
}

/// DCTCP on an RDMA NIC (`HandleAckDctcp`): alpha ← (1 − g) alpha + g F once per window,
/// F the fraction of the window's ACKs that echoed CE; on an echo outside congestion
/// window reduction, rate × (1 − alpha/2) and CWR until the window sent by then is
/// acknowledged; a rate step per window without reduction.
#[derive(Debug, Clone)]
pub struct Dctcp {
    cfg: DctcpConfig,
    path: Path,
    rate_bps: u64,
    alpha: f64,
    last_update: Option<u64>,
    marked: u64,
    batch: u64,
    cwr_until: Option<u64>,
}

impl Dctcp {
    /// At line rate, alpha 1 (the simulator's start).
    pub fn new(cfg: DctcpConfig, path: Path) -> Dctcp {
        Dctcp {
            cfg,
            path,
            rate_bps: path.line_bps,
            alpha: 1.0,
            last_update: None,
            marked: 0,
            batch: 1,
            cwr_until: None,
        }
    }

    fn on_ack(&mut self, s: &AckSample<'_>) {
        self.marked += u64::from(s.ece);
        let mut new_batch = false;
        if s.acked > self.last_update.unwrap_or(0) {
            new_batch = true;
            if self.last_update.is_some() {
                let frac = (self.marked as f64 / self.batch as f64).min(1.0);
                self.alpha = (1.0 - self.cfg.g) * self.alpha + self.cfg.g * frac;
                self.marked = 0;
                self.batch = s.sent.saturating_sub(s.acked) + 1;
            } else {
                self.batch = s.sent + 1;
            }
            self.last_update = Some(s.sent);
        }
        if self.cwr_until.is_some_and(|high| s.acked > high) {
            self.cwr_until = None;
        }
        let min = mbps(self.cfg.min_rate_mbps).min(self.path.line_bps);
        if s.ece && self.cwr_until.is_none() {
            self.rate_bps = ((self.rate_bps as f64 * (1.0 - self.alpha / 2.0)) as u64).max(min);
            self.cwr_until = Some(s.sent);
        }
        if self.cwr_until.is_none() && new_batch {
            self.rate_bps = (self.rate_bps + mbps(self.cfg.rai_mbps)).min(self.path.line_bps);
        }
    }
}

/// HPCC (`UpdateRateHp`, the paper's algorithm 1 in rate form): per hop
/// u = txRate / B + min(qlen, last qlen) / (B T); U its largest over the path, smoothed
/// over the base RTT T; with k = U / η, rate = Rc / k + W_AI when k ≥ 1 or after
/// maxStage additive stages, else Rc + W_AI. Rc, the reference, moves once per RTT;
/// every ACK between reacts against it (fast react).
#[derive(Debug, Clone)]
pub struct Hpcc {
    cfg: HpccConfig,
    path: Path,
    rate_bps: u64,
    cur_rate_bps: u64,
    inc_stage: u32,
    u: f64,
    last_update: Option<u64>,
    hops: [IntHop; MAX_HOPS],
}

impl Hpcc {
    /// At line rate, U = 1 (the simulator's start).
    pub fn new(cfg: HpccConfig, path: Path) -> Hpcc {
        Hpcc {
            cfg,
            path,
            rate_bps: path.line_bps,
            cur_rate_bps: path.line_bps,
            inc_stage: 0,
            u: 1.0,
            last_update: None,
            hops: [IntHop::default(); MAX_HOPS],
        }
    }

    fn on_ack(&mut self, s: &AckSample<'_>) {
        let full = s.acked > self.last_update.unwrap_or(0);
        if !full && !self.cfg.fast_react {
            return;
        }
        let n = s.int.len().min(MAX_HOPS);
        if self.last_update.is_none() {
            self.hops[..n].copy_from_slice(&s.int[..n]);
            self.last_update = Some(s.sent);
            return;
        }
        let t_ns = self.path.base_rtt.0.max(1);
        let bdp = self.path.bdp_bytes().max(1) as f64;
        let (mut big_u, mut dt, mut any) = (0.0f64, 0u64, false);
        for (hop, last) in s.int[..n].iter().zip(self.hops.iter_mut()) {
            let tau = hop.time_since(last);
            if tau > 0 {
                any = true;
                let tx_bps = hop.bytes_since(last) as f64 * 8e9 / tau as f64;
                let q = hop.qlen_bytes.min(last.qlen_bytes) as f64;
                let b = hop.rate_bps as f64;
                let u = tx_bps / b + q * self.path.line_bps as f64 / b / bdp;
                if u > big_u {
                    big_u = u;
                    dt = tau;
                }
            }
            *last = *hop;
        }
        if any {
            let dt = dt.min(t_ns) as f64;
            let t = t_ns as f64;
            self.u = (self.u * (t - dt) + big_u * dt) / t;
            let k = self.u / self.cfg.eta;
            let wai = mbps(self.cfg.wai_mbps) as f64;
            let (rate, stage) = if k >= 1.0 || self.inc_stage >= self.cfg.max_stage {
                (self.cur_rate_bps as f64 / k + wai, 0)
            } else {
                (self.cur_rate_bps as f64 + wai, self.inc_stage + 1)
            };
            let min = mbps(self.cfg.min_rate_mbps).min(self.path.line_bps) as f64;
            let rate = rate.clamp(min, self.path.line_bps as f64) as u64;
            self.rate_bps = rate;
            if full {
                self.cur_rate_bps = rate;
                self.inc_stage = stage;
            }
        }
        if full && s.sent > self.last_update.unwrap_or(0) {
            self.last_update = Some(s.sent);
        }
    }
}

/// TIMELY (`UpdateRateTimely`, the paper's algorithm 1), once per RTT of data: the RTT
/// difference smoothed with weight α, gradient = difference / minRTT; below T_low add δ
/// (or 5 δ-sized hyper steps after `hai_after` increases in a row), above T_high cut by
/// β (1 − T_high / RTT), else cut by β × gradient when it is positive, add when not.
#[derive(Debug, Clone)]
pub struct Timely {
    cfg: TimelyConfig,
    path: Path,
    rate_bps: u64,
    inc_stage: u32,
    rtt_diff_ns: f64,
    min_rtt_ns: f64,
    last_rtt: Nanos,
    last_update: Option<u64>,
}

impl Timely {
    /// At line rate.
    pub fn new(cfg: TimelyConfig, path: Path) -> Timely {
        Timely {
            cfg,
            path,
            rate_bps: path.line_bps,
            inc_stage: 0,
            rtt_diff_ns: 0.0,
            min_rtt_ns: (cfg.min_rtt_us * 1000.0).max(1.0),
            last_rtt: Nanos::ZERO,
            last_update: None,
        }
    }

    fn on_ack(&mut self, s: &AckSample<'_>) {
        let Some(rtt) = s.rtt else {
            return;
        };
        if s.acked <= self.last_update.unwrap_or(0) {
            return;
        }
        if self.last_update.is_some() {
            let a = self.cfg.ewma_alpha;
            let new_diff = rtt.0 as f64 - self.last_rtt.0 as f64;
            self.rtt_diff_ns = (1.0 - a) * self.rtt_diff_ns + a * new_diff;
            let gradient = self.rtt_diff_ns / self.min_rtt_ns;
            let (t_low, t_high) = (self.cfg.t_low(), self.cfg.t_high());
            let cut = if rtt < t_low {
                None
            } else if rtt > t_high {
                Some(1.0 - self.cfg.beta * (1.0 - t_high.0 as f64 / rtt.0 as f64))
            } else if gradient <= 0.0 {
                None
            } else {
                Some((1.0 - self.cfg.beta * gradient).max(0.0))
            };
            let line = self.path.line_bps;
            match cut {
                None => {
                    let step = if self.inc_stage < self.cfg.hai_after {
                        self.cfg.rai_mbps
                    } else {
                        self.cfg.rhai_mbps
                    };
                    self.rate_bps = (self.rate_bps + mbps(step)).min(line);
                    self.inc_stage += 1;
                }
                Some(c) => {
                    let min = mbps(self.cfg.min_rate_mbps).min(line);
                    self.rate_bps = ((self.rate_bps as f64 * c) as u64).max(min);
                    self.inc_stage = 0;
                }
            }
        }
        self.last_update = Some(s.sent);
        self.last_rtt = rtt;
    }
}

/// Swift (the paper's algorithm 1): a window in packets; target delay = base RTT + base
/// target + hops × per hop + flow scaling (α / √cwnd + β, clamped to [0, fs_range]); below
/// it, cwnd grows by ai / cwnd per packet acknowledged (ai per packet below one packet of
/// window); above it, at most once per RTT, cwnd × max(1 − β (delay − target) / delay,
/// 1 − max_mdf). Below one packet of window, packets are paced RTT / cwnd apart.
#[derive(Debug, Clone)]
pub struct Swift {
    cfg: SwiftConfig,
    path: Path,
    cwnd: f64,
    max_cwnd: f64,
    srtt: Nanos,
    last_decrease: Option<Nanos>,
    fs_alpha: f64,
    fs_beta: f64,
}

impl Swift {
    /// A window of one BDP, at most `max_packets`.
    pub fn new(cfg: SwiftConfig, path: Path, max_packets: u32) -> Swift {
        let max_cwnd = f64::from(max_packets.max(1));
        let bdp = path.bdp_bytes() as f64 / path.mtu.max(1) as f64;
        let fs_alpha = cfg.fs_range_us * 1000.0
            / (1.0 / cfg.fs_min_cwnd.sqrt() - 1.0 / cfg.fs_max_cwnd.sqrt());
        Swift {
            cfg,
            path,
            cwnd: bdp.clamp(cfg.min_cwnd, max_cwnd),
            max_cwnd,
            srtt: path.base_rtt,
            last_decrease: None,
            fs_alpha,
            fs_beta: -fs_alpha / cfg.fs_max_cwnd.sqrt(),
        }
    }

    /// The target delay at the current window, ns.
    pub fn target_ns(&self) -> f64 {
        let fs = (self.fs_alpha / self.cwnd.sqrt() + self.fs_beta)
            .clamp(0.0, self.cfg.fs_range_us * 1000.0);
        self.path.base_rtt.0 as f64
            + (self.cfg.base_target_us + f64::from(self.cfg.hops) * self.cfg.per_hop_us) * 1000.0
            + fs
    }

    fn on_ack(&mut self, s: &AckSample<'_>) {
        let Some(rtt) = s.rtt else {
            return;
        };
        self.srtt = rtt;
        let delay = rtt.0 as f64;
        let target = self.target_ns();
        if delay < target {
            let acked = s.newly_acked as f64;
            if self.cwnd >= 1.0 {
                self.cwnd += self.cfg.ai / self.cwnd * acked;
            } else {
                self.cwnd += self.cfg.ai * acked;
            }
        } else if self
            .last_decrease
            .is_none_or(|t| s.now.saturating_sub(t) >= rtt)
        {
            let factor =
                (1.0 - self.cfg.beta * (delay - target) / delay).max(1.0 - self.cfg.max_mdf);
            self.cwnd *= factor;
            self.last_decrease = Some(s.now);
        }
        self.cwnd = self.cwnd.clamp(self.cfg.min_cwnd, self.max_cwnd);
    }

    /// Line rate with a window of a packet or more (the window clocks the packets); below
    /// one, a packet per RTT / cwnd.
    fn rate_bps(&self) -> u64 {
        if self.cwnd >= 1.0 {
            return self.path.line_bps;
        }
        let bits = (self.path.mtu * 8) as f64 * self.cwnd;
        let rate = bits * 1e9 / self.srtt.0.max(1) as f64;
        (rate as u64).clamp(1, self.path.line_bps)
    }

    /// ⌈cwnd⌉ packets' bytes, at least one packet.
    fn window_bytes(&self) -> u64 {
        let packets = self.cwnd.max(1.0);
        ((packets * self.path.mtu as f64).ceil() as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G100: u64 = 100_000_000_000;

    fn path() -> Path {
        Path {
            line_bps: G100,
            base_rtt: Nanos(8_000),
            mtu: 1000,
        }
    }

    fn ack(acked: u64, sent: u64, ece: bool, rtt: Option<Nanos>) -> AckSample<'static> {
        AckSample {
            now: Nanos(acked * 100),
            acked,
            sent,
            newly_acked: 1,
            ece,
            rtt,
            int: &[],
        }
    }

    /// DCTCP, by the rule: the first ECN-echo cuts with alpha 1 to half (50 Gb/s); echoes
    /// before the window sent by then is acknowledged do not cut again. alpha after a
    /// window whose every ACK echoed stays 1; after one with none, 1 − g = 15/16.
    #[test]
    fn dctcp_cuts_once_per_window_and_alpha_follows_the_marked_fraction() {
        let mut d = Dctcp::new(DctcpConfig::default(), path());
        d.on_ack(&ack(1, 10, false, None)); // first batch: +rai, capped at line
        assert_eq!(d.rate_bps, G100);
        d.on_ack(&ack(2, 11, true, None));
        assert_eq!(d.rate_bps, G100 / 2, "alpha 1: halved");
        for k in 3..=11 {
            d.on_ack(&ack(k, 12, true, None));
        }
        assert_eq!(d.rate_bps, G100 / 2, "CWR: no second cut in the window");
        // The first window ended with the ACK through 11: 10 of its ACKs echoed, of a batch
        // of 11 (10 sent + 1, the simulator's count): alpha = (1 − g) + g × 10/11.
        let g = 1.0 / 16.0;
        assert!(
            (d.alpha - ((1.0 - g) + g * 10.0 / 11.0)).abs() < 1e-12,
            "{}",
            d.alpha
        );
        let mut d = Dctcp::new(DctcpConfig::default(), path());
        d.on_ack(&ack(1, 10, false, None));
        d.on_ack(&ack(11, 20, false, None));
        assert_eq!(d.alpha, 15.0 / 16.0);
        assert_eq!(d.rate_bps, G100, "no marks: rate stays at line");
    }

    /// HPCC, one hop at 100 Gb/s: a first ACK stores the reference; the next, 1 µs later
    /// with 12 500 bytes sent (100 Gb/s) and no queue, gives u = 1; with T = 8 µs and
    /// dt = 1 µs, U = (1·7 + 1·1)/8 = 1, k = 1/0.95, rate = 100 G × 0.95 + 40 Mb/s.
    #[test]
    fn hpcc_sets_the_rate_from_utilization() {
        let mut h = Hpcc::new(HpccConfig::default(), path());
        let a = [IntHop::new(G100, 0, 0, 0)];
        let b = [IntHop::new(G100, 1_000, 12_800, 0)];
        let mut s = ack(1, 10, false, None);
        s.int = &a;
        h.on_ack(&s);
        let mut s = ack(11, 20, false, None);
        s.int = &b;
        h.on_ack(&s);
        // 12 800 bytes in 1 µs is 102.4 Gb/s: u = 1.024, U = (7 + 1.024) / 8 = 1.003.
        let u = (7.0 + 1.024) / 8.0;
        assert!((h.u - u).abs() < 1e-9, "{}", h.u);
        let want = (G100 as f64 / (u / 0.95) + 40e6) as u64;
        assert_eq!(h.rate_bps, want);
        assert_eq!(h.cur_rate_bps, want);
    }

    /// TIMELY: an RTT below T_low adds δ (100 Mb/s) from below line rate; one above
    /// T_high cuts by β (1 − T_high / RTT): 1000 µs gives 1 − 0.8 × 0.5 = 0.6.
    #[test]
    fn timely_steps_and_cuts() {
        let mut t = Timely::new(TimelyConfig::default(), path());
        t.rate_bps = G100 / 2;
        t.on_ack(&ack(1, 10, false, Some(Nanos(10_000))));
        t.on_ack(&ack(11, 20, false, Some(Nanos(10_000))));
        assert_eq!(t.rate_bps, G100 / 2 + 100_000_000);
        t.on_ack(&ack(21, 30, false, Some(Nanos(1_000_000))));
        assert_eq!(t.rate_bps, ((G100 / 2 + 100_000_000) as f64 * 0.6) as u64);
    }

    /// Swift: below target the window grows by ai/cwnd per ACK; above it, one cut per
    /// RTT by max(1 − β (d − t)/d, 1 − max_mdf): a delay of twice the target cuts by
    /// 1 − 0.8 × 0.5 = 0.6.
    #[test]
    fn swift_increases_below_target_and_cuts_once_per_rtt() {
        let mut s = Swift::new(SwiftConfig::default(), path(), 1024);
        s.cwnd = 10.0;
        s.on_ack(&ack(1, 10, false, Some(Nanos(8_000))));
        assert!((s.cwnd - 10.1).abs() < 1e-9);
        let target = s.target_ns();
        let d = (2.0 * target) as u64;
        s.on_ack(&ack(2, 10, false, Some(Nanos(d))));
        let want = 10.1 * (1.0 - 0.8 * (d as f64 - target) / d as f64);
        assert!((s.cwnd - want).abs() < 1e-6, "{} {want}", s.cwnd);
        let before = s.cwnd;
        s.on_ack(&ack(3, 10, false, Some(Nanos(d))));
        assert_eq!(s.cwnd, before, "one cut per RTT");
        s.cwnd = 0.5;
        assert_eq!(
            s.rate_bps(),
            (1000.0 * 8.0 * 0.5 * 1e9 / d as f64) as u64,
            "paced below one packet"
        );
    }
}

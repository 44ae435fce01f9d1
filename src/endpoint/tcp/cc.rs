//! TCP congestion control, one trait and three algorithms: Reno (RFC 5681), DCTCP
//! (RFC 8257: a cut in proportion to the share of CE-marked bytes, alpha with g = 1/16)
//! and CUBIC (RFC 9438). Windows are in bytes; the sender calls the trait on each ACK,
//! on a loss detected by SACK or duplicate ACKs (once per recovery), and on an RTO.

use crate::time::Nanos;

/// What an ACK tells the congestion controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckInfo {
    /// When it arrived.
    pub now: Nanos,
    /// Bytes it newly acknowledged (cumulatively or by SACK).
    pub acked_bytes: u64,
    /// Of those, bytes the receiver echoed as CE-marked (DCTCP's ECE, RFC 8257 3.2).
    pub ce_bytes: u64,
    /// SND.UNA after the ACK, as a byte count from the start of the stream.
    pub snd_una: u64,
    /// SND.NXT: the next byte to send.
    pub snd_nxt: u64,
    /// The smoothed round-trip time.
    pub srtt: Nanos,
}

/// A congestion control algorithm.
pub trait CongestionControl {
    /// The congestion window, bytes.
    fn cwnd_bytes(&self) -> u64;
    /// The slow-start threshold, bytes.
    fn ssthresh_bytes(&self) -> u64;
    /// An ACK that acknowledged new data.
    fn on_ack(&mut self, ack: &AckInfo);
    /// A loss found by SACK or three duplicate ACKs, when recovery starts (once per
    /// window); `flight_bytes` is what was outstanding.
    fn on_loss(&mut self, now: Nanos, flight_bytes: u64);
    /// A retransmission timeout.
    fn on_rto(&mut self, now: Nanos, flight_bytes: u64);
    /// The algorithm's name as a configuration spells it.
    fn name(&self) -> &'static str;
}

/// Reno's window arithmetic, which DCTCP uses as is and CUBIC in slow start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reno {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acknowledged in congestion avoidance not yet turned into window.
    ca_acked: u64,
}

impl Reno {
    /// A window of `initial_segments` segments of `mss` bytes (RFC 6928: 10), with no
    /// slow-start threshold yet.
    pub fn new(mss: u64, initial_segments: u64) -> Reno {
        let mss = mss.max(1);
        Reno {
            mss,
            cwnd: mss * initial_segments.max(1),
            ssthresh: u64::MAX,
            ca_acked: 0,
        }
    }

    /// RFC 5681 3.1: slow start grows by the bytes acked, at most one SMSS per ACK
    /// (eq. 2); congestion avoidance by one SMSS per window of bytes acked (the byte
    /// counting form of eq. 3).
    fn grow(&mut self, acked: u64) {
        if self.cwnd < self.ssthresh {
            self.cwnd += acked.min(self.mss);
            return;
        }
        self.ca_acked += acked;
        if self.ca_acked >= self.cwnd {
            self.ca_acked -= self.cwnd;
            self.cwnd += self.mss;
        }
    }

    /// RFC 5681 eq. 4: ssthresh = max(FlightSize / 2, 2 × SMSS).
    fn halve(&mut self, flight_bytes: u64) {
        self.ssthresh = (flight_bytes / 2).max(2 * self.mss);
        self.cwnd = self.ssthresh;
        self.ca_acked = 0;
    }
}

impl CongestionControl for Reno {
    fn cwnd_bytes(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckInfo) {
        self.grow(ack.acked_bytes);
    }

    /// RFC 6675 5: on entering recovery, cwnd = ssthresh.
    fn on_loss(&mut self, _now: Nanos, flight_bytes: u64) {
        self.halve(flight_bytes);
    }

    /// RFC 5681 3.1: after an RTO the window is the loss window, one SMSS.
    fn on_rto(&mut self, _now: Nanos, flight_bytes: u64) {
        self.halve(flight_bytes);
        self.cwnd = self.mss;
    }

    fn name(&self) -> &'static str {
        "reno"
    }
}

/// DCTCP (RFC 8257): Reno's growth, and on CE echoes a cut of cwnd × alpha / 2 at most
/// once per window, where alpha tracks the share of marked bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dctcp {
    reno: Reno,
    alpha: f64,
    /// Bytes acked and CE-echoed in the current observation window.
    window_acked: u64,
    window_marked: u64,
    /// The observation window ends when SND.UNA passes this (RFC 8257 3.3: WindowEnd).
    window_end: u64,
    /// No second cut before SND.UNA passes this: one cut per window of data.
    cut_until: u64,
}

impl Dctcp {
    /// RFC 8257 3.3: g = 1/16.
    pub const G: f64 = 1.0 / 16.0;

    /// A window of `initial_segments` of `mss` bytes; alpha starts at 1 (RFC 8257 3.3),
    /// so that the first marks cut as hard as Reno.
    pub fn new(mss: u64, initial_segments: u64) -> Dctcp {
        Dctcp {
            reno: Reno::new(mss, initial_segments),
            alpha: 1.0,
            window_acked: 0,
            window_marked: 0,
            window_end: 0,
            cut_until: 0,
        }
    }

    /// The congestion estimate, 0 to 1.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl CongestionControl for Dctcp {
    fn cwnd_bytes(&self) -> u64 {
        self.reno.cwnd
    }

    fn ssthresh_bytes(&self) -> u64 {
        self.reno.ssthresh
    }

    fn on_ack(&mut self, ack: &AckInfo) {
        self.window_acked += ack.acked_bytes;
        self.window_marked += ack.ce_bytes.min(ack.acked_bytes);
        if ack.snd_una > self.window_end {
            // RFC 8257 3.3: F = marked / acked over the window; alpha = (1 - g) alpha + g F.
            if self.window_acked > 0 {
                let f = self.window_marked as f64 / self.window_acked as f64;
                self.alpha = (1.0 - Self::G) * self.alpha + Self::G * f;
            }
            self.window_acked = 0;
            self.window_marked = 0;
            self.window_end = ack.snd_nxt;
        }
        if ack.ce_bytes > 0 && ack.snd_una > self.cut_until {
            let r = &mut self.reno;
            let cut = (r.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64;
            r.cwnd = cut.max(2 * r.mss);
            r.ssthresh = r.cwnd;
            r.ca_acked = 0;
            self.cut_until = ack.snd_nxt;
            return;
        }
        self.reno.grow(ack.acked_bytes);
    }

    fn on_loss(&mut self, now: Nanos, flight_bytes: u64) {
        self.reno.on_loss(now, flight_bytes);
    }

    fn on_rto(&mut self, now: Nanos, flight_bytes: u64) {
        self.reno.on_rto(now, flight_bytes);
    }

    fn name(&self) -> &'static str {
        "dctcp"
    }
}

/// CUBIC (RFC 9438): after a loss the window follows W(t) = C (t − K)³ + W_max, with a
/// Reno-friendly floor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cubic {
    reno: Reno,
    /// W_max, segments: the window before the last cut.
    w_max: f64,
    /// K, seconds: when W(t) comes back to W_max.
    k_secs: f64,
    /// The start of the current congestion-avoidance epoch.
    epoch_start: Option<Nanos>,
    /// W_est, segments: what Reno with CUBIC's beta would have (RFC 9438 4.3).
    w_est: f64,
    /// Fractional segments of growth not yet applied to cwnd.
    pending: f64,
}

impl Cubic {
    /// RFC 9438 5: C = 0.4.
    pub const C: f64 = 0.4;
    /// RFC 9438 5: beta_cubic = 0.7.
    pub const BETA: f64 = 0.7;

    /// A window of `initial_segments` of `mss` bytes.
    pub fn new(mss: u64, initial_segments: u64) -> Cubic {
        Cubic {
            reno: Reno::new(mss, initial_segments),
            w_max: 0.0,
            k_secs: 0.0,
            epoch_start: None,
            w_est: 0.0,
            pending: 0.0,
        }
    }

    /// K (RFC 9438 eq. 2): the cube root of (W_max − cwnd_epoch) / C, seconds.
    pub fn k_secs(&self) -> f64 {
        self.k_secs
    }

    /// W_max, segments.
    pub fn w_max_segments(&self) -> f64 {
        self.w_max
    }

    /// W_cubic(t) (RFC 9438 eq. 1), segments, `t_secs` after the epoch began.
    pub fn w_cubic(&self, t_secs: f64) -> f64 {
        Self::C * (t_secs - self.k_secs).powi(3) + self.w_max
    }

    fn segments(&self) -> f64 {
        self.reno.cwnd as f64 / self.reno.mss as f64
    }

    /// RFC 9438 4.6 and 4.7: W_max is the window at the loss (less, with fast
    /// convergence, when it is below the last W_max); cwnd × beta after it, reduced
    /// from cwnd as Linux's tcp_cubic does (RFC 9438 allows the flight size instead).
    fn cut(&mut self) {
        let cwnd = self.segments();
        self.w_max = if cwnd < self.w_max {
            cwnd * (1.0 + Self::BETA) / 2.0
        } else {
            cwnd
        };
        let mss = self.reno.mss;
        let reduced = ((cwnd * Self::BETA) as u64 * mss).max(2 * mss);
        self.reno.ssthresh = reduced;
        self.reno.cwnd = reduced;
        self.reno.ca_acked = 0;
        self.epoch_start = None;
    }
}

impl CongestionControl for Cubic {
    fn cwnd_bytes(&self) -> u64 {
        self.reno.cwnd
    }

    fn ssthresh_bytes(&self) -> u64 {
        self.reno.ssthresh
    }

    fn on_ack(&mut self, ack: &AckInfo) {
        let r = &mut self.reno;
        if r.cwnd < r.ssthresh {
            r.grow(ack.acked_bytes);
            return;
        }
        let mss = r.mss as f64;
        let cwnd = r.cwnd as f64 / mss;
        let start = *self.epoch_start.get_or_insert_with(|| {
            // RFC 9438 4.2 and eq. 2: a new epoch; K from the window it starts at.
            self.k_secs = ((self.w_max - cwnd).max(0.0) / Self::C).cbrt();
            self.w_est = cwnd;
            if self.w_max < cwnd {
                self.w_max = cwnd;
            }
            ack.now
        });
        let t = ack.now.saturating_sub(start).as_secs_f64() + ack.srtt.as_secs_f64();
        // RFC 9438 4.2: the target is W_cubic(t + RTT), within [cwnd, 1.5 cwnd].
        let target = self.w_cubic(t).clamp(cwnd, 1.5 * cwnd);
        let acked_segments = ack.acked_bytes as f64 / mss;
        // RFC 9438 eq. 4: alpha_cubic = 3 (1 − beta) / (1 + beta).
        let alpha = 3.0 * (1.0 - Self::BETA) / (1.0 + Self::BETA);
        self.w_est += alpha * acked_segments / cwnd;
        let grow = if self.w_est > target {
            // RFC 9438 4.3: the Reno-friendly region.
            self.w_est - cwnd
        } else {
            (target - cwnd) / cwnd * acked_segments
        };
        self.pending += grow.max(0.0);
        let whole = self.pending.floor();
        self.pending -= whole;
        self.reno.cwnd += whole as u64 * self.reno.mss;
    }

    fn on_loss(&mut self, _now: Nanos, _flight_bytes: u64) {
        self.cut();
    }

    /// RFC 9438 4.8: as a loss, then the window is one segment.
    fn on_rto(&mut self, _now: Nanos, _flight_bytes: u64) {
        self.cut();
        self.reno.cwnd = self.reno.mss;
    }

    fn name(&self) -> &'static str {
        "cubic"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ack(now: Nanos, acked: u64, ce: u64, una: u64, nxt: u64) -> AckInfo {
        AckInfo {
            now,
            acked_bytes: acked,
            ce_bytes: ce,
            snd_una: una,
            snd_nxt: nxt,
            srtt: Nanos::from_micros(100),
        }
    }

    #[test]
    fn reno_doubles_per_rtt_in_slow_start_and_adds_one_segment_after() {
        let mut r = Reno::new(MSS, 10);
        for i in 0..10 {
            r.on_ack(&ack(Nanos(0), MSS, 0, (i + 1) * MSS, 20 * MSS));
        }
        // RFC 5681 eq. 2: ten ACKs of one SMSS: 10 → 20 segments.
        assert_eq!(r.cwnd_bytes(), 20 * MSS);
        // Halving: ssthresh = max(FlightSize / 2, 2 SMSS) = 10 segments, cwnd = ssthresh.
        r.on_loss(Nanos(0), 20 * MSS);
        assert_eq!((r.cwnd_bytes(), r.ssthresh_bytes()), (10 * MSS, 10 * MSS));
        // Congestion avoidance: one window (10 segments) of ACKs adds one segment.
        for _ in 0..9 {
            r.on_ack(&ack(Nanos(0), MSS, 0, 0, 0));
        }
        assert_eq!(r.cwnd_bytes(), 10 * MSS);
        r.on_ack(&ack(Nanos(0), MSS, 0, 0, 0));
        assert_eq!(r.cwnd_bytes(), 11 * MSS);
        r.on_rto(Nanos(0), 3 * MSS);
        assert_eq!((r.cwnd_bytes(), r.ssthresh_bytes()), (MSS, 2 * MSS));
    }

    #[test]
    fn dctcp_alpha_follows_rfc_8257s_moving_average() {
        let mut d = Dctcp::new(MSS, 10);
        // Windows of 10 segments with no marks: alpha = (15/16)^n from 1.
        let (mut una, mut nxt) = (0, 10 * MSS);
        for _ in 0..3 {
            for _ in 0..10 {
                una += MSS;
                d.on_ack(&ack(Nanos(0), MSS, 0, una, nxt));
            }
            nxt = una + 10 * MSS;
        }
        // WindowEnd starts at 0, so the first ACK (una = 1 segment) closes a window
        // of one unmarked segment; the next windows close at una = 11 and 21 segments
        // (SND.NXT when the previous one closed): three updates with F = 0.
        let expect = (15.0f64 / 16.0).powi(3);
        assert!((d.alpha() - expect).abs() < 1e-12, "{}", d.alpha());
        // A window with half its bytes marked: alpha = (1 - g) alpha + g / 2.
        let before = d.alpha();
        let cwnd = d.cwnd_bytes();
        una += MSS;
        d.on_ack(&ack(Nanos(0), MSS, MSS, una, una + 10 * MSS));
        // That ACK closed the window (alpha updated with its F first) and then cut
        // cwnd by alpha / 2, once.
        // It closed the window of the ten segments acked from una = 22 to 31, one of
        // them marked: F = 1/10.
        let window_f = 1.0 / 10.0;
        let alpha = (1.0 - Dctcp::G) * before + Dctcp::G * window_f;
        assert!((d.alpha() - alpha).abs() < 1e-12);
        assert_eq!(d.cwnd_bytes(), (cwnd as f64 * (1.0 - alpha / 2.0)) as u64);
        let after_cut = d.cwnd_bytes();
        d.on_ack(&ack(Nanos(0), MSS, MSS, una + MSS, una + 11 * MSS));
        assert_eq!(d.cwnd_bytes(), after_cut, "one cut per window");
    }

    #[test]
    fn cubic_follows_w_t_and_k_from_rfc_9438() {
        let mut c = Cubic::new(MSS, 100);
        // Leave slow start at 100 segments with a loss: W_max = 100, cwnd = 70.
        c.on_loss(Nanos(0), 100 * MSS);
        assert_eq!(c.cwnd_bytes(), 70 * MSS);
        assert_eq!(c.w_max_segments(), 100.0);
        // ACKs one RTT apart, a window each.
        let rtt = Nanos::from_millis(100);
        let mut now = Nanos(0);
        let mut at_k = None;
        for _ in 0..80 {
            let w = c.cwnd_bytes() / MSS;
            for _ in 0..w {
                c.on_ack(&AckInfo {
                    srtt: rtt,
                    ..ack(now, MSS, 0, 0, 0)
                });
            }
            if at_k.is_none() && now.as_secs_f64() >= c.k_secs() {
                at_k = Some(c.cwnd_bytes() / MSS);
            }
            now += rtt;
        }
        // RFC 9438 eq. 2: K = cbrt(W_max (1 − beta) / C) = cbrt(100 × 0.3 / 0.4) =
        // cbrt(75) = 4.2172 s.
        assert!((c.k_secs() - 75f64.cbrt()).abs() < 1e-9);
        assert!((c.k_secs() - 4.2172).abs() < 1e-4);
        // W(0) = W_max − C K³ = 70; W(K) = W_max.
        assert!((c.w_cubic(0.0) - 70.0).abs() < 1e-9);
        assert!((c.w_cubic(c.k_secs()) - 100.0).abs() < 1e-9);
        // The window, driven by ACKs, reaches W_max at K (within a couple of segments:
        // it aims at W(t + RTT) and grows in whole segments), and after 8 s follows
        // W(t): 0.4 × (8 − 4.2172)³ + 100 = 121.65 segments.
        let reached = at_k.unwrap() as f64;
        assert!((reached - 100.0).abs() <= 3.0, "{reached}");
        let w8 = c.w_cubic(8.0);
        assert!((w8 - 121.65).abs() < 0.01, "{w8}");
        let cwnd = (c.cwnd_bytes() / MSS) as f64;
        assert!(
            cwnd >= w8 - 1.0 && cwnd <= c.w_cubic(8.0 + 0.1) + 2.0,
            "{cwnd}"
        );
        // Fast convergence: a loss below W_max sets W_max to cwnd (1 + beta) / 2.
        let before = (c.cwnd_bytes() / MSS) as f64;
        c.on_loss(now, c.cwnd_bytes());
        c.on_loss(now, c.cwnd_bytes());
        let second = (before * 0.7).floor();
        assert!((c.w_max_segments() - second * 1.7 / 2.0).abs() < 1e-9);
        c.on_rto(now, c.cwnd_bytes());
        assert_eq!(c.cwnd_bytes(), MSS);
    }
}

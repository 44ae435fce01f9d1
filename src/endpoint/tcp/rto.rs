//! The retransmission timer's value (RFC 6298): a smoothed RTT and its variation from
//! the samples, RTO = SRTT + max(G, 4 × RTTVAR) bounded below by a configurable RTO_min
//! (RFC 6298 says 1 s; Linux uses 200 ms, and a datacenter TCP far less), doubled on each
//! expiry (back-off) up to RTO_max.

use crate::time::Nanos;

/// RFC 6298's constants and the bounds a deployment picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtoConfig {
    /// The RTO before any sample (RFC 6298 2.1: 1 s).
    pub initial: Nanos,
    /// The least RTO (RFC 6298 2.4: 1 s; Linux: 200 ms).
    pub min: Nanos,
    /// The most RTO, back-off included (RFC 6298 2.5: at least 60 s).
    pub max: Nanos,
    /// The clock granularity G.
    pub granularity: Nanos,
}

impl Default for RtoConfig {
    /// RFC 6298's values, with a 1 µs clock.
    fn default() -> RtoConfig {
        RtoConfig {
            initial: Nanos::from_secs(1),
            min: Nanos::from_secs(1),
            max: Nanos::from_secs(60),
            granularity: Nanos::from_micros(1),
        }
    }
}

/// The RTT estimator and the current RTO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtoEstimator {
    config: RtoConfig,
    /// SRTT and RTTVAR, once a sample came.
    smoothed: Option<(Nanos, Nanos)>,
    /// Expiries since the last sample: the RTO is doubled this many times.
    backoff: u32,
}

impl RtoEstimator {
    /// An estimator with no sample yet.
    pub fn new(config: RtoConfig) -> RtoEstimator {
        RtoEstimator {
            config,
            smoothed: None,
            backoff: 0,
        }
    }

    /// SRTT, once a sample came.
    pub fn srtt(&self) -> Option<Nanos> {
        self.smoothed.map(|s| s.0)
    }

    /// RTTVAR, once a sample came.
    pub fn rttvar(&self) -> Option<Nanos> {
        self.smoothed.map(|s| s.1)
    }

    /// Takes an RTT sample (RFC 6298 2.2 and 2.3; Karn: never from a retransmitted
    /// segment, which the caller ensures) and ends any back-off.
    pub fn on_sample(&mut self, rtt: Nanos) {
        let r = rtt.0;
        self.smoothed = Some(match self.smoothed {
            None => (rtt, Nanos(r / 2)),
            // RTTVAR = 3/4 RTTVAR + 1/4 |SRTT − R'|, then SRTT = 7/8 SRTT + 1/8 R'.
            Some((srtt, rttvar)) => {
                let var = (3 * rttvar.0 + srtt.0.abs_diff(r)) / 4;
                (Nanos((7 * srtt.0 + r) / 8), Nanos(var))
            }
        });
        self.backoff = 0;
    }

    /// The timer expired: the next RTO is twice this one (RFC 6298 5.5).
    pub fn on_expiry(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    /// The RTO to arm now.
    pub fn rto(&self) -> Nanos {
        let base = match self.smoothed {
            None => self.config.initial,
            Some((srtt, rttvar)) => {
                Nanos(srtt.0 + self.config.granularity.0.max(4 * rttvar.0)).max(self.config.min)
            }
        };
        let backed = base.0.saturating_mul(1u64 << self.backoff.min(63));
        Nanos(backed.min(self.config.max.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fast() -> RtoConfig {
        RtoConfig {
            initial: Nanos::from_millis(1),
            min: Nanos::from_micros(200),
            max: Nanos::from_millis(100),
            granularity: Nanos::from_micros(1),
        }
    }

    #[test]
    fn samples_follow_rfc_6298s_averages() {
        let mut e = RtoEstimator::new(fast());
        assert_eq!(e.rto(), Nanos::from_millis(1));
        // First sample R: SRTT = R, RTTVAR = R/2, RTO = R + 4 R/2 = 3R.
        e.on_sample(Nanos::from_micros(100));
        assert_eq!(e.srtt(), Some(Nanos::from_micros(100)));
        assert_eq!(e.rto(), Nanos::from_micros(300));
        // Second sample 180 µs: RTTVAR = 3/4 × 50 + 1/4 × 80 = 57.5; SRTT = 7/8 × 100 +
        // 1/8 × 180 = 110; RTO = 110 + 230 = 340 µs.
        e.on_sample(Nanos::from_micros(180));
        assert_eq!(e.rttvar(), Some(Nanos(57_500)));
        assert_eq!(e.srtt(), Some(Nanos::from_micros(110)));
        assert_eq!(e.rto(), Nanos::from_micros(340));
        // Steady samples drive RTTVAR down until RTO_min holds the RTO.
        for _ in 0..100 {
            e.on_sample(Nanos::from_micros(10));
        }
        assert_eq!(e.rto(), Nanos::from_micros(200));
    }

    #[test]
    fn expiries_double_the_rto_up_to_its_max_and_a_sample_ends_the_backoff() {
        let mut e = RtoEstimator::new(fast());
        e.on_sample(Nanos::from_micros(100));
        e.on_expiry();
        e.on_expiry();
        assert_eq!(e.rto(), Nanos::from_micros(1200));
        for _ in 0..100 {
            e.on_expiry();
        }
        assert_eq!(e.rto(), Nanos::from_millis(100));
        e.on_sample(Nanos::from_micros(100));
        assert!(e.rto() < Nanos::from_millis(1));
        // RFC 6298's own defaults: 1 s before any sample.
        assert_eq!(
            RtoEstimator::new(RtoConfig::default()).rto(),
            Nanos::from_secs(1)
        );
    }
}

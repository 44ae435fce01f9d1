//! RED-ECN decisions on egress queues: mark ECT frames CE (and, on lossy queues, drop
//! Not-ECT frames as WRED does) with the probability of the configured line, using a
//! seeded generator so that runs repeat exactly.

use crate::config::RedProfile;
use crate::rand::Rng;

/// The outcome of RED at one decision point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedDecision {
    /// The probability the line gives at this depth.
    pub probability: f64,
    /// Whether the draw hit (always at p = 1, never at p = 0).
    pub hit: bool,
}

/// Decides at queue depth `depth_bytes`; draws only when 0 < p < 1.
#[inline]
pub fn decide(profile: &RedProfile, depth_bytes: u64, rng: &mut Rng) -> RedDecision {
    let probability = profile.probability(depth_bytes);
    let hit = if probability <= 0.0 {
        false
    } else if probability >= 1.0 {
        true
    } else {
        rng.next_f64() < probability
    };
    RedDecision { probability, hit }
}

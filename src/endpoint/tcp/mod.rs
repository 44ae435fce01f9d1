//! The building blocks of a sans-IO TCP for iWARP (issue 36): so far its congestion
//! control and its retransmission timer's value. The segment-level sender and receiver
//! (SACK scoreboard, RFC 6675 recovery) are still to come.

pub mod cc;
pub mod rto;

pub use cc::{AckInfo, CongestionControl, Cubic, Dctcp, Reno};
pub use rto::{RtoConfig, RtoEstimator};

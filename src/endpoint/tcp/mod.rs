//! The building blocks of a sans-IO TCP for iWARP (issue 36): so far its congestion
//! control. The segment-level sender and receiver (SACK scoreboard, RFC 6675 recovery,
//! RFC 6298 RTO) are still to come.

pub mod cc;

pub use cc::{AckInfo, CongestionControl, Cubic, Dctcp, Reno};

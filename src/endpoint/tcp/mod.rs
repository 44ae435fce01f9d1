//! The building blocks of a sans-IO TCP for iWARP (issue 36): congestion control, the
//! retransmission timer's value, and the receiver's view of the stream with its SACK
//! blocks. The sender (SACK scoreboard, RFC 6675 recovery) is still to come.

pub mod cc;
pub mod receiver;
pub mod rto;

pub use cc::{AckInfo, CongestionControl, Cubic, Dctcp, Reno};
pub use receiver::{Arrival, Receiver};
pub use rto::{RtoConfig, RtoEstimator};
